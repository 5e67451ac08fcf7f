"""Grants follow the provider: a console session's grants are recomputed from a fresh ID token
at least every CASEWORK_SESSION_REFRESH_SECONDS, so a group removed at the provider removes
access without waiting for the person's next login.

One round (`SessionRefresh.run_once`) claims the live sessions whose grants are due (those
holding the provider's refresh token), asks the provider's token endpoint for a
`refresh_token` grant for each, verifies the ID token in the answer (signature, `iss`, `aud`
= the client id, the same `sub`), and maps its claims with the rules, as at login:

- some grants: the session keeps going with them, the refresh token the provider returned
  (providers may rotate it) and `grants_at` = now;
- no grants: the session ends ("the rules no longer grant a role");
- `invalid_grant` (the person was removed or disabled, or logged out at the provider): the
  session ends ("the identity provider refused to refresh it");
- the provider unreachable (or answering what cannot be checked): nothing changes, and the
  session is due again next round.

A session without a refresh token is left as it is: its absolute lifetime bounds it.

A refresh token may be single-use, so a session is refreshed by one process at a time: a round
claims it (`refresh_claimed_at`, with SKIP LOCKED), and its write is fenced by that claim. A
claim older than CLAIM_LEASE_SECONDS (a process that died mid-refresh) is taken over.

`SessionRefresher` runs rounds in the service's lifespan every min(60, refresh seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any
from urllib.parse import quote

import httpx

from server.config import AuthSettings
from server.domain.identity.access_tokens import (
    AccessTokenVerifier,
    IdTokenRefused,
    ProviderUnavailable,
)
from server.domain.identity.rules import RuleSet
from server.domain.identity.sessions import SessionEnd, grants_json
from server.store import sql
from server.store.database import Database, Row

log = logging.getLogger("casework.identity")

# Sessions claimed (and refreshed concurrently) at a time.
BATCH_SIZE = 20
# A claim this old is taken over: far beyond one batch's HTTP calls (HTTP_TIMEOUT_SECONDS).
CLAIM_LEASE_SECONDS = 120
HTTP_TIMEOUT_SECONDS = 10.0
MAX_LOOP_INTERVAL_SECONDS = 60.0


class Outcome(Enum):
    REFRESHED = "refreshed"
    ENDED = "ended"
    # The provider could not be asked, or its answer not checked: due again next round.
    POSTPONED = "postponed"
    # Another process took the claim over (or the session ended meanwhile): nothing written.
    LOST = "lost"


@dataclass
class RoundReport:
    refreshed: int = 0
    ended: int = 0
    postponed: int = 0
    lost: int = 0

    def count(self, outcome: Outcome) -> None:
        name = outcome.value
        setattr(self, name, getattr(self, name) + 1)


@dataclass(frozen=True)
class _Claimed:
    id: int
    refresh_token: str
    claimed_at: datetime
    subject: str
    user_name: str


class _Postpone(Exception):
    """The provider could not be asked, or its answer not checked (one log line's worth)."""


class SessionRefresh:
    """Refresh rounds for one process. `http`: the client to reach the token endpoint with
    (made here, and closed by aclose, when not given)."""

    def __init__(
        self,
        db: Database,
        auth: AuthSettings,
        rules: RuleSet,
        verifier: AccessTokenVerifier,
        *,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        assert auth.oidc_client_id is not None
        self._db = db
        self._auth = auth
        self._client_id = auth.oidc_client_id
        self._rules = rules
        self._verifier = verifier
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS)
        self._postponed_because = ""

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    async def run_once(self) -> RoundReport:
        """Refreshes every session due now, a batch at a time; stops early (leaving the rest
        due) when the provider cannot be reached."""
        report = RoundReport()
        while True:
            rows = await self._db.fetch(
                sql.identity.SESSIONS_CLAIM_REFRESH,
                refresh_seconds=self._auth.session_refresh_seconds,
                lease_seconds=CLAIM_LEASE_SECONDS,
                limit=BATCH_SIZE,
            )
            claims = [_claimed(row) for row in rows]
            outcomes = await asyncio.gather(*(self._refresh(claim) for claim in claims))
            for outcome in outcomes:
                report.count(outcome)
            if len(rows) < BATCH_SIZE or Outcome.POSTPONED in outcomes:
                break
        if report.postponed:
            log.warning(
                "session refresh: %d session(s) keep their grants until the next round (%s)",
                report.postponed,
                self._postponed_because,
            )
        return report

    async def _refresh(self, claim: _Claimed) -> Outcome:
        try:
            return await self._refresh_claimed(claim)
        except _Postpone as reason:
            self._postponed_because = f"session {claim.id} of {claim.user_name}: {reason}"
            await self._release(claim)
            return Outcome.POSTPONED
        except BaseException:
            # Whatever else went wrong (a bug, a cancelled round), the claim is let go of.
            with contextlib.suppress(Exception):
                await self._release(claim)
            raise

    async def _refresh_claimed(self, claim: _Claimed) -> Outcome:
        answer = await self._token_endpoint(claim.refresh_token)
        if answer.get("error") == "invalid_grant":
            return await self._end(claim, SessionEnd.PROVIDER_REFUSED)
        if "error" in answer:
            raise _Postpone(f"the token endpoint answered {answer.get('error')!r}")
        id_token = answer.get("id_token")
        if not isinstance(id_token, str):
            raise _Postpone("the provider's answer carries no ID token (scope openid?)")
        try:
            verified = await self._verifier.verify_id_token(id_token, client_id=self._client_id)
        except IdTokenRefused as refusal:
            raise _Postpone(f"its ID token was refused: {refusal}") from None
        except ProviderUnavailable as error:
            raise _Postpone(str(error)) from None
        if verified.subject != claim.subject:
            raise _Postpone(f"its ID token is for another subject ({verified.subject!r})")
        grants = self._rules.explain(verified.claims).grants
        if not grants:
            return await self._end(claim, SessionEnd.NO_ROLE)
        refresh_token = answer.get("refresh_token")
        row = await self._db.fetchrow(
            sql.identity.SESSION_REFRESHED,
            session_id=claim.id,
            claimed_at=claim.claimed_at,
            grants=grants_json(grants),
            refresh_token=refresh_token if isinstance(refresh_token, str) else None,
            id_token=id_token,
        )
        return Outcome.LOST if row is None else Outcome.REFRESHED

    async def _token_endpoint(self, refresh_token: str) -> dict[str, Any]:
        """The token endpoint's JSON answer to a refresh_token grant (an error answer too)."""
        data = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        auth: httpx.Auth | None = None
        if self._auth.oidc_client_secret is None:
            data["client_id"] = self._client_id
        else:
            # client_secret_basic: both parts form-encoded first (RFC 6749, 2.3.1).
            auth = httpx.BasicAuth(
                quote(self._client_id, safe=""), quote(self._auth.oidc_client_secret, safe="")
            )
        try:
            endpoint = await self._verifier.endpoint("token_endpoint")
            response = await self._http.post(
                endpoint, data=data, auth=httpx.USE_CLIENT_DEFAULT if auth is None else auth
            )
        except (httpx.HTTPError, ProviderUnavailable) as error:
            raise _Postpone(f"the provider cannot be reached ({error!r})") from None
        if response.status_code >= 500:
            raise _Postpone(f"the token endpoint answered {response.status_code}")
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise _Postpone(f"the token endpoint answered {response.status_code}, not JSON")
        if response.status_code != 200 and "error" not in answer:
            raise _Postpone(f"the token endpoint answered {response.status_code}")
        return answer

    async def _end(self, claim: _Claimed, reason: SessionEnd) -> Outcome:
        row = await self._db.fetchrow(
            sql.identity.SESSION_REFRESH_END,
            session_id=claim.id,
            claimed_at=claim.claimed_at,
            reason=reason.value,
        )
        if row is None:
            return Outcome.LOST
        log.info(
            "session refresh: session %d of %s ended: %s", claim.id, claim.user_name, reason.value
        )
        return Outcome.ENDED

    async def _release(self, claim: _Claimed) -> None:
        await self._db.fetchrow(
            sql.identity.SESSION_REFRESH_RELEASE, session_id=claim.id, claimed_at=claim.claimed_at
        )


def _claimed(row: Row) -> _Claimed:
    return _Claimed(
        id=row["id"],
        refresh_token=row["refresh_token"],
        claimed_at=row["claimed_at"],
        subject=row["subject"],
        user_name=row["user_name"],
    )


class SessionRefresher:
    """The refresh loop of one process, from the lifespan's start to its end. Without sign-in
    by the provider (no rules or no verifier) it does nothing."""

    def __init__(self, refresh: SessionRefresh | None, interval: float) -> None:
        self.refresh = refresh
        self.interval = interval
        self.rounds = 0
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def started(
        cls,
        db: Database,
        auth: AuthSettings,
        rules: RuleSet | None,
        verifier: AccessTokenVerifier | None,
    ) -> SessionRefresher:
        refresh = None
        if auth.oidc and rules is not None and verifier is not None:
            refresh = SessionRefresh(db, auth, rules, verifier)
        refresher = cls(refresh, min(MAX_LOOP_INTERVAL_SECONDS, auth.session_refresh_seconds))
        refresher.start()
        return refresher

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self.refresh is not None and self._task is None:
            self._task = asyncio.create_task(self._run(), name="casework-session-refresh")

    async def stop(self) -> None:
        """Ends the loop after the round in progress; awaits it and logs what it raised."""
        self._stopping.set()
        task, self._task = self._task, None
        try:
            if task is not None:
                try:
                    await task
                except Exception:
                    log.exception("the session refresh loop failed")
        finally:
            if self.refresh is not None:
                await self.refresh.aclose()

    async def _run(self) -> None:
        assert self.refresh is not None
        while not self._stopping.is_set():
            try:
                report = await self.refresh.run_once()
            except Exception as error:
                # The database is down, most likely: the next round tries again.
                log.warning("session refresh: the round failed: %r", error)
            else:
                if report.refreshed or report.ended:
                    log.info("session refresh: %s", report)
            self.rounds += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.interval)
