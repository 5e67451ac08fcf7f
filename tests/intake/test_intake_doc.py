"""docs/integrations.md's intake sections say what the intake does: the documented file is
one it reads, and the names it gives are the code's."""

from __future__ import annotations

import tomllib

from server.config import REPO_ROOT
from server.intake.config import RaiseTarget, parse_config
from server.intake.rabbitmq import PARK_REASON_HEADER
from server.intake.runner import TOKEN_VARIABLE
from server.observability.metrics import IntakeOutcome
from tests.docs.helpers import between, code_blocks

DOC = REPO_ROOT / "docs" / "integrations.md"


def intake_text() -> str:
    return between(DOC, "## Dead-letter intake", "## Python client (`casework-client`)")


def test_the_documented_configuration_is_read_as_documented() -> None:
    [example] = code_blocks(
        between(DOC, "### The configuration file", "### What a dead letter becomes"), "toml"
    )
    orders, refunds = parse_config(tomllib.loads(example)).sources
    assert isinstance(orders.target, RaiseTarget)
    assert orders.target.reason_code_header == "x-failure-reason"
    assert orders.batch_size == 50
    assert refunds.subject_ref is not None
    assert refunds.broker.options == {"prefetch": 100}


def test_the_documented_names_are_the_code_s() -> None:
    text = intake_text()
    assert TOKEN_VARIABLE in text
    assert PARK_REASON_HEADER in text
    assert "casework_intake_messages_total{source, outcome}" in text
    for outcome in IntakeOutcome:
        assert f"`{outcome.value}`" in text


def test_every_documented_file_is_one_the_intake_reads() -> None:
    """The brokers' own examples (NATS, SQS) are whole files too."""
    examples = code_blocks(intake_text(), "toml")
    assert len(examples) >= 3
    for example in examples:
        assert parse_config(tomllib.loads(example)).sources, example
