"""Stopping the service is bounded: a step of the lifespan's shutdown that hangs is logged
and cut short, so SIGTERM always ends the process (uvicorn waits for the lifespan without a
limit, and a second signal does not cut that wait short)."""

from __future__ import annotations

import asyncio
import logging

import asyncpg
import pytest

from server import lifespan as lifespan_module
from server.app import CaseworkGraphQL, create_app
from server.config import Settings
from tests.conftest import TestDatabase


async def test_a_connection_never_released_does_not_keep_the_process_alive(
    test_database: TestDatabase, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(lifespan_module, "SHUTDOWN_STEP_SECONDS", 0.5)
    app = create_app(test_database.app_dsn, dev=False, settings=Settings.from_env())
    view = next(
        route.endpoint  # type: ignore[attr-defined]
        for route in app.routes
        if isinstance(getattr(route, "endpoint", None), CaseworkGraphQL)
    )
    holding, forever = asyncio.Event(), asyncio.Event()

    async def hold_a_connection() -> None:
        async with view.runtime.db.transaction():
            holding.set()
            await forever.wait()

    with caplog.at_level(logging.WARNING, logger="casework"):
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        holder = asyncio.create_task(hold_a_connection())
        await holding.wait()
        # Bounded here too, so that a regression fails instead of hanging the suite.
        await asyncio.wait_for(lifespan.__aexit__(None, None, None), 30)
    # The pool was terminated under the transaction that never gave its connection back:
    # leaving it finds the connection closed.
    holder.cancel()
    outcome = (await asyncio.gather(holder, return_exceptions=True))[0]
    assert isinstance(outcome, asyncpg.InterfaceError), outcome
    warnings = [record.getMessage() for record in caplog.records]
    assert any("the pool did not stop" in message for message in warnings), warnings
