"""Search results as a CSV download, for managers, compliance and admins:

    GET /export/items.csv?<search>       the items `Query.items` finds for the same filter
    GET /export/decisions.csv?<search>   the decisions `Query.decisions` finds

The search is the shared query-string form (server/domain/search/params.py); the rows are
the caller's queues only, as in the API. The caller authenticates as for /graphql (a bearer
token, or the console's session cookie), through the same resolver. Refusals are JSON, as
the API's refusals made before any operation runs: 401, 403, 400 coded BAD_REQUEST (a bad
parameter, named) or LIMIT_EXCEEDED (too broad, with `narrowBy`), 503.

The first page is read before the status is sent; the rest is streamed page by page. A
page refused after that, or a database failure, cuts the download short: the response ends
without its last chunk, the server closes the connection, and the client sees a failed
download rather than a file that looks complete.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime

import asyncpg
from cross_web import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Send

from server.domain.failures import InvalidInput
from server.domain.model import Principal, Role
from server.domain.search.filters import SearchTooBroad
from server.domain.search.params import decision_search_from_params, item_search_from_params
from server.graphql.codes import RETRY_AFTER_SECONDS, ErrorCode, error_body
from server.graphql_http import refusal_response, request_context
from server.lifespan import Runtime
from server.search_csv import (
    MEDIA_TYPE,
    ExportInterrupted,
    decisions_csv,
    export_filename,
    items_csv,
)
from server.store.database import Database
from server.store.errors import is_unavailable
from server.store.routing import ReadKind

log = logging.getLogger("casework.export")

ITEMS_PATH = "/export/items.csv"
DECISIONS_PATH = "/export/decisions.csv"
EXPORTING_ROLES = frozenset({Role.MANAGER, Role.COMPLIANCE, Role.ADMIN})
NOT_AN_EXPORTER = "exporting search results is for managers, compliance and admins"
NO_CREDENTIALS = (
    "a valid bearer token is required (Authorization: Bearer <token>), or a console session"
)

Chunks = AsyncIterator[bytes] | SearchTooBroad | InvalidInput
# Runs the search's first page for the caller: (database, principal, query pairs, now).
Opener = Callable[[Database, Principal, list[tuple[str, str]], datetime], Awaitable[Chunks]]


class _CutShortOnFailure(StreamingResponse):
    """A stream that, when its rows fail part way, ends without its final chunk (so the
    server closes the connection) and logs one line. A failure to send is the client's
    going away, and ends it as Starlette does."""

    def __init__(self, chunks: AsyncIterator[bytes], headers: dict[str, str], what: str) -> None:
        super().__init__(chunks, media_type=MEDIA_TYPE, headers=headers)
        self._what = what

    async def stream_response(self, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        rows = aiter(self.body_iterator)
        while True:
            try:
                chunk = await anext(rows)
            except StopAsyncIteration:
                break
            except (ExportInterrupted, asyncpg.PostgresError, OSError) as error:
                log.warning("%s export cut short: %s", self._what, _one_line(error))
                return
            except Exception as error:
                if not is_unavailable(error):
                    log.exception("%s export cut short", self._what)
                    return
                log.warning("%s export cut short: %s", self._what, _one_line(error))
                return
            assert isinstance(chunk, bytes)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def _refused(code: ErrorCode, message: str, status: int, **extensions: object) -> JSONResponse:
    body = error_body(code, message)
    body["errors"][0]["extensions"].update(extensions)
    return JSONResponse(body, status_code=status)


class SearchExport:
    def __init__(self, runtime: Runtime, *, dev: bool) -> None:
        self._runtime = runtime
        self._dev = dev

    def routes(self) -> list[Route]:
        return [
            Route(ITEMS_PATH, self.items, methods=["GET"]),
            Route(DECISIONS_PATH, self.decisions, methods=["GET"]),
        ]

    async def items(self, request: Request) -> Response:
        async def opened(
            db: Database, principal: Principal, pairs: list[tuple[str, str]], now: datetime
        ) -> Chunks:
            search = item_search_from_params(pairs)
            if isinstance(search, InvalidInput):
                return search
            public_url = self._runtime.settings.auth.public_url
            return await items_csv(db, principal, search, now=now, public_url=public_url)

        return await self._export(request, "items", opened)

    async def decisions(self, request: Request) -> Response:
        async def opened(
            db: Database, principal: Principal, pairs: list[tuple[str, str]], now: datetime
        ) -> Chunks:
            search = decision_search_from_params(pairs)
            if isinstance(search, InvalidInput):
                return search
            return await decisions_csv(db, principal, search)

        return await self._export(request, "decisions", opened)

    async def _export(self, request: Request, kind: str, opener: Opener) -> Response:
        try:
            context = await request_context(self._runtime, request, None, dev=self._dev)
        except HTTPException as refusal:
            return refusal_response(refusal)
        if context is None:
            return refusal_response(HTTPException(401, NO_CREDENTIALS))
        principal = context.principal
        if principal.role not in EXPORTING_ROLES:
            log.info("%s export: refused to %s (%s)", kind, principal.user, principal.role.value)
            return _refused(ErrorCode.FORBIDDEN, NOT_AN_EXPORTER, 403)
        now = datetime.now(UTC)
        pairs = request.query_params.multi_items()
        try:
            opened = await opener(context.database(ReadKind.SEARCH), principal, pairs, now)
        except Exception as error:
            if not is_unavailable(error):
                raise
            log.warning("%s export: database unavailable: %s", kind, _one_line(error))
            return refusal_response(
                HTTPException(
                    503,
                    f"The database is unavailable; try again in {RETRY_AFTER_SECONDS} seconds.",
                )
            )
        if isinstance(opened, InvalidInput):
            log.info("%s export: bad input: %s", kind, opened.message)
            return _refused(ErrorCode.BAD_REQUEST, opened.message, 400, field=opened.field)
        if isinstance(opened, SearchTooBroad):
            log.info("%s export: too broad: %s", kind, opened.message)
            return _refused(
                ErrorCode.LIMIT_EXCEEDED, opened.message, 400, narrowBy=list(opened.narrow_by)
            )
        disposition = f'attachment; filename="{export_filename(kind, now)}"'
        return _CutShortOnFailure(
            opened,
            {"Content-Disposition": disposition, "Cache-Control": "no-store"},
            kind,
        )
