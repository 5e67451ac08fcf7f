"""What a write records of how its actor authenticated, and the step-up refusal.

Every record of what a person decided carries `authentication_id` (the `authentications` row
of how they proved who they are, migration 0023). A queue or workflow may also ask for a
recent login (`require_auth_within_seconds`, `require_acr`): the fenced statement checks it
in its WHERE clause with :auth_time and :acr, so a queue without the setting pays nothing
but two IS NULL tests, and the refusal's diagnosis (the read that runs only when the fence
refused) says whether this was the reason, with `recent_enough` and the setting.
"""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from server.domain.failures import InvalidInput, ReauthenticationRequired
from server.domain.model import Principal
from server.store.database import Row


class Provenance(TypedDict):
    authentication_id: int | None


class StepUp(TypedDict):
    auth_time: datetime | None
    acr: str | None


def provenance(principal: Principal) -> Provenance:
    """How the actor authenticated, for the record a write makes: `**provenance(principal)`."""
    return {"authentication_id": principal.authentication_id}


def step_up(principal: Principal) -> StepUp:
    """What a step-up fence compares with the setting. A CLI token proves no login time."""
    auth = principal.authentication
    if auth is None:
        return {"auth_time": None, "acr": None}
    return {"auth_time": auth.auth_time, "acr": auth.acr}


def step_up_refusal(principal: Principal, state: Row | None) -> ReauthenticationRequired | None:
    """From a diagnosis with `recent_enough`, `require_auth_within_seconds` and
    `require_acr`: the refusal when the login was too old, missing, or of another acr."""
    if state is None or state["recent_enough"] is not False:
        return None
    auth = principal.authentication
    return ReauthenticationRequired(
        required_within_seconds=state["require_auth_within_seconds"],
        acr=state["require_acr"],
        authenticated_at=None if auth is None else auth.auth_time,
    )


# The longest a step-up window may be (a day); the columns' CHECK wants more than 0.
MAX_WITHIN_SECONDS = 86_400
MAX_ACR = 255


def check_step_up(within_seconds: int | None, acr: str | None) -> InvalidInput | None:
    """requireAuthWithinSeconds (0 clears it) and requireAcr ("" clears it), as an admin
    gives them to configureQueue or configureWorkflow."""
    if within_seconds is not None and not 0 <= within_seconds <= MAX_WITHIN_SECONDS:
        return InvalidInput(
            f"requireAuthWithinSeconds must be between 1 and {MAX_WITHIN_SECONDS} (0: not "
            "required)",
            "requireAuthWithinSeconds",
        )
    if acr is not None and (len(acr) > MAX_ACR or acr != acr.strip()):
        return InvalidInput(
            f'requireAcr is an acr value of at most {MAX_ACR} characters ("" clears it)',
            "requireAcr",
        )
    return None
