"""The intake's configuration file: every problem on a line of its own, before anything
starts; and `casework intake` refusing to start on what the token cannot do."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from server.domain.model import Role
from server.intake.config import (
    EnqueueTarget,
    IntakeConfigError,
    RaiseTarget,
    ValueFrom,
    load_config,
    parse_config,
)
from server.intake.paths import MISSING, parse_path, read_path
from server.store.database import Database
from tests.api.live_server import run_casework
from tests.conftest import TestDatabase, token_maker
from tests.intake.intake_support import REASON, WORKFLOW, to_toml
from tests.intake.process_support import intake_env

GOOD = {
    "name": "orders",
    "broker": "rabbitmq",
    "url": "amqp://guest:guest@127.0.0.1:5672/",
    "dead_letter": "orders.dead",
    "parking": "orders.parked",
    "workflow": WORKFLOW,
    "reason_code": REASON,
    "record_id": {"header": "x-order-id"},
}


def problems_of(*tables: Mapping[str, object]) -> list[str]:
    with pytest.raises(IntakeConfigError) as refused:
        parse_config({"source": list(tables)}, "intake.toml")
    return refused.value.problems


def test_a_good_file_reads_back(tmp_path: Path) -> None:
    review = GOOD | {
        "name": "review",
        "queue": "order-review",
        "record_id": {"path": "order.lines.0.sku"},
        "subject_ref": {"path": "customer.id"},
        "batch_size": 10,
        "options": {"prefetch": 20},
    }
    del review["workflow"], review["reason_code"]
    file = tmp_path / "intake.toml"
    file.write_text(to_toml([GOOD | {"consequence": "high"}, review]))

    orders, reviewed = load_config(file).sources

    assert isinstance(orders.target, RaiseTarget)
    assert orders.target == RaiseTarget(WORKFLOW, REASON, orders.target.consequence)
    assert orders.target.consequence.value == "high"
    assert orders.record_id.kind is ValueFrom.HEADER
    assert orders.batch_size == 50
    assert reviewed.target == EnqueueTarget("order-review")
    assert reviewed.record_id.steps == ("order", "lines", "0", "sku")
    assert reviewed.broker.options == {"prefetch": 20}
    assert reviewed.batch_size == 10


def test_every_problem_gets_its_own_line() -> None:
    bad = {
        "name": "Orders!",
        "broker": "kafka",
        "dead_letter": "q",
        "parking": "q",
        "batch_size": 0,
        "workflow": WORKFLOW,
        "record_id": {"path": "order..id"},
        "colour": "blue",
    }
    assert problems_of(bad, GOOD, GOOD) == [
        "intake.toml: source 'Orders!': unknown key(s) colour",
        "intake.toml: source 'Orders!': name must be 1 to 100 characters of a-z, 0-9, '_', "
        "'.', '-' (it keys the messages taken)",
        "intake.toml: source 'Orders!': broker 'kafka' is not one of rabbitmq, nats, sqs",
        "intake.toml: source 'Orders!': url is required",
        "intake.toml: source 'Orders!': parking must differ from dead_letter",
        "intake.toml: source 'Orders!': batch_size must be a whole number from 1 to 1000",
        "intake.toml: source 'Orders!': reason_code is required with workflow",
        "intake.toml: source 'Orders!': record_id.path 'order..id' is not a path (object "
        "keys joined with dots, digits index a list: order.lines.0.sku)",
        "intake.toml: source 'orders': the name is used by another source; names are keys",
    ]


def test_a_target_is_a_workflow_or_a_queue() -> None:
    both = GOOD | {"queue": "order-review"}
    neither = {k: v for k, v in GOOD.items() if k not in ("workflow", "reason_code")}
    queue_with_reason = neither | {"queue": "order-review", "reason_code": REASON}
    no_record = {k: v for k, v in GOOD.items() if k != "record_id"} | {"name": "x"}
    assert problems_of(both, neither | {"name": "n"}, queue_with_reason | {"name": "q"}) == [
        "intake.toml: source 'orders': give either workflow (with reason_code: raise "
        "exceptions) or queue (enqueue review items)",
        "intake.toml: source 'n': give either workflow (with reason_code: raise exceptions) "
        "or queue (enqueue review items)",
        "intake.toml: source 'q': reason_code belongs to a workflow target, not a queue",
    ]
    assert problems_of(no_record) == [
        'intake.toml: source \'x\': record_id is required: { header = "NAME" } or { path = "a.b" }'
    ]


def test_a_file_that_is_not_toml_or_has_no_source(tmp_path: Path) -> None:
    file = tmp_path / "intake.toml"
    file.write_text("[[source]\n")
    with pytest.raises(IntakeConfigError, match="not TOML"):
        load_config(file)
    assert problems_of() == [
        "intake.toml: no [[source]] table: name at least one dead-letter queue"
    ]


def test_the_path_reader() -> None:
    document = {"order": {"id": 7, "lines": [{"sku": "A"}]}}
    assert read_path(document, ("order", "id")) == 7
    assert read_path(document, ("order", "lines", "0", "sku")) == "A"
    assert read_path(document, ("order", "lines", "1", "sku")) is MISSING
    assert read_path(document, ("order", "id", "x")) is MISSING
    assert read_path([1], ("0",)) == 1
    assert parse_path("a. b") is None
    assert parse_path("a.b") == ("a", "b")


async def test_casework_intake_check_prints_each_problem(tmp_path: Path) -> None:
    file = tmp_path / "intake.toml"
    file.write_text(to_toml([GOOD | {"broker": "kafka", "batch_size": 0}]))

    run = await run_casework({}, "intake", "--config", str(file), "--check")

    assert run.code == 2
    assert run.stderr.splitlines() == [
        "casework intake: error: "
        f"{file}: source 'orders': broker 'kafka' is not one of rabbitmq, nats, sqs",
        f"casework intake: error: {file}: source 'orders': batch_size must be a whole number "
        "from 1 to 1000",
    ]
    file.write_text(to_toml([GOOD]))
    run = await run_casework({}, "intake", "--config", str(file), "--check")
    assert (run.code, run.stdout) == (0, f"casework intake: {file}: 1 source(s), no problem\n")


async def test_casework_intake_refuses_what_its_token_cannot_do(
    workflow: str, test_database: TestDatabase, owner_db: Database, tmp_path: Path
) -> None:
    file = tmp_path / "intake.toml"
    file.write_text(to_toml([GOOD | {"reason_code": "no_such_reason"}]))
    make = token_maker(owner_db)
    reviewer = await make("rita", Role.REVIEWER, "order-ops")
    integration = await make("order-intake", Role.INTEGRATION)

    as_reviewer = await run_casework(
        intake_env(test_database, reviewer, tmp_path), "intake", "--config", str(file)
    )
    unknown_reason = await run_casework(
        intake_env(test_database, integration, tmp_path), "intake", "--config", str(file)
    )
    no_token = await run_casework(
        intake_env(test_database, "", tmp_path), "intake", "--config", str(file)
    )

    assert as_reviewer.code == 2
    assert (
        "casework intake: error: the token acts as reviewer; the intake needs an integration "
        "token" in as_reviewer.stderr
    )
    assert unknown_reason.code == 2
    assert (
        "casework intake: error: source 'orders': reason_code 'no_such_reason' is not in the "
        f"catalogue of workflow '{WORKFLOW}' (known: order_failed, stock_missing)"
        in unknown_reason.stderr
    )
    assert no_token.code == 2
    assert "CASEWORK_INTAKE_TOKEN is not set" in no_token.stderr
