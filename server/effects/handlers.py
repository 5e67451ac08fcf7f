"""Python effects, registered by other packages under the entry-point group `casework.effects`:

    [project.entry-points."casework.effects"]
    credit_limits = "mypackage.casework:apply_credit_decision"

A handler is `async def handler(decision: dict) -> str | None` (the webhook's JSON body as a
dict; the returned text is kept as the application's note). It raises
`TransientEffectError` or `PermanentEffectError`; anything else counts as transient. It is
called again after a crash, so it must be idempotent on `decision["decisionId"]`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import cache
from importlib.metadata import entry_points
from typing import Any, cast

from server.effects.errors import PermanentEffectError

Handler = Callable[[dict[str, Any]], Awaitable[str | None]]
GROUP = "casework.effects"


@cache
def load_handler(name: str) -> Handler:
    found = entry_points(group=GROUP, name=name)
    if not found:
        raise PermanentEffectError(f"no effect handler {name!r} in entry points {GROUP!r}")
    return cast(Handler, next(iter(found)).load())
