"""docs/privacy.md on policies, retention classes and keys: its operations run as shown and
answer what the text says, its key file loads, and its command and output are the CLI's."""

from __future__ import annotations

import base64
import json
import secrets
import shlex
from pathlib import Path

from server.cli import _parser
from server.cli.privacy import describe_rotation
from server.config import REPO_ROOT
from server.domain.privacy.keys import LocalKeyFile
from server.domain.privacy.rotation import Rotation
from tests.api.conftest import GraphQL
from tests.docs.helpers import between, code_blocks
from tests.privacy.http import PolicyTokens, setup_kyc

DOC = REPO_ROOT / "docs" / "privacy.md"


def policy_part() -> str:
    """The sections on policies, retention classes and keys."""
    return between(DOC, "## Attaching a policy to a queue", "## An item as you see it")


async def test_the_operations_run_as_the_text_says(gql: GraphQL, tokens: PolicyTokens) -> None:
    await setup_kyc(gql, tokens.admin)
    set_policy, read_policy, visible, enqueue, define_class = code_blocks(policy_part(), "graphql")

    defined = (await gql(tokens.admin, define_class))["data"]["defineRetentionClass"]
    assert defined["__typename"] == "RetentionClass", defined
    assert defined["keepSeconds"] == 1826 * 86400
    policy = (await gql(tokens.admin, set_policy))["data"]["setPrivacyPolicy"]
    assert policy["__typename"] == "PrivacyPolicy", policy
    assert policy["version"] == 1
    read = (await gql(tokens.reviewer, read_policy))["data"]["queue"]["privacyPolicy"]
    assert read["version"] == 1
    assert read["retentionClass"] == "aml-5y"

    enqueued = (await gql(tokens.integration, enqueue))["data"]["enqueueItems"]
    assert enqueued["__typename"] == "EnqueuedItems", enqueued
    [item] = enqueued["items"]
    assert item["droppedPaths"] == ["nickname"]
    assert item["item"]["payload"] == {"risk_score": 12}

    second = (await gql(tokens.admin, visible))["data"]["setPrivacyPolicy"]
    assert second["__typename"] == "PrivacyPolicy", second


def test_the_key_file_example_is_the_format_casework_reads(tmp_path: Path) -> None:
    (example,) = code_blocks(policy_part(), "json")
    document = json.loads(example)
    for kid in document["keys"]:
        document["keys"][kid] = base64.b64encode(secrets.token_bytes(32)).decode()
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(document))

    keys = LocalKeyFile.load(path)

    assert keys.active_kek_id == "k2"
    assert keys.kek_ids == ("k1", "k2")


def test_the_command_and_its_output_are_the_clis() -> None:
    commands = [line for block in code_blocks(policy_part(), "sh") for line in block.split("\n")]
    parser = _parser()
    for line in filter(None, commands):
        argv = shlex.split(line)
        assert argv[0] == "casework"
        parser.parse_args(argv[1:])
    (shown,) = code_blocks(policy_part(), "text")
    rotation = Rotation(
        kek_id="k2",
        rewrapped=1204,
        rewrapped_from={"k1": 1204},
        already_current=0,
        keys_by_kek={"k2": 1204},
        log_id=1,
    )

    printed = describe_rotation(rotation, added="k2", path="/etc/casework/keys.json")

    assert printed == shown.rstrip("\n")
