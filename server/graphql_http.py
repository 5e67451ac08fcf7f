"""What both HTTP paths of /graphql share: the caller's Context, the refusals made before
any operation runs, and the observed answer (one access line and timing per request).

The general path (Strawberry's view, server/app.py) and the lean path for trusted
documents (server/lean_graphql.py) call these same functions, so a request is
authenticated, refused, timed and logged alike whichever path answers it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from cross_web import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.status import (
    HTTP_401_UNAUTHORIZED,
    HTTP_403_FORBIDDEN,
    HTTP_405_METHOD_NOT_ALLOWED,
    HTTP_503_SERVICE_UNAVAILABLE,
)
from starlette.types import Receive, Scope, Send

from server.domain.identity.access_tokens import ProviderUnavailable
from server.domain.identity.grants import NoAccess, RoleNotHeld
from server.domain.model import Role
from server.graphql import observe
from server.graphql.codes import RETRY_AFTER_SECONDS, ErrorCode, error_body
from server.graphql.context import Context
from server.graphql.documents.requests import DocumentRefusal
from server.graphql.loaders import Loaders
from server.lifespan import Runtime
from server.store.errors import is_unavailable
from server.web.cookies import CookieRefused, http_credentials

log = logging.getLogger("casework")

# The methods /graphql answers over HTTP (a CORS preflight never reaches the view).
GRAPHQL_METHODS = frozenset({"GET", "POST"})
# The parameters by which a request names a document without its text.
BY_ID_PARAMETERS = ("documentId", "extensions")


class DocumentRefused(HTTPException):
    """A request that names no document this server runs (documents/requests.py)."""

    def __init__(self, refusal: DocumentRefusal) -> None:
        super().__init__(refusal.status, refusal.message)
        self.code = refusal.code


async def request_context(
    runtime: Runtime, request: Request, response: Response | None, *, dev: bool
) -> Context | None:
    """The caller of an HTTP request to /graphql and its Context; None for a GET without
    credentials (GraphiQL's page). Refusals raise HTTPException (see `refusal_response`).
    `response`: the sub-response where an outage sets 503 and Retry-After."""
    if request.method not in GRAPHQL_METHODS:
        # Strawberry checks the method only after the context is built: without this a
        # wrong method would be answered 401 when it carries no token.
        raise HTTPException(
            HTTP_405_METHOD_NOT_ALLOWED, "GraphQL only supports GET and POST requests."
        )
    try:
        credentials = http_credentials(request, runtime.settings, dev=dev)
        principal = await runtime.tokens.resolve(credentials)
    except (CookieRefused, RoleNotHeld, NoAccess) as refusal:
        raise HTTPException(HTTP_403_FORBIDDEN, str(refusal)) from None
    except ProviderUnavailable as error:
        log.warning("access token: the identity provider is unreachable: %r", error)
        raise HTTPException(
            HTTP_503_SERVICE_UNAVAILABLE,
            "The identity provider cannot be reached to check this token; "
            f"try again in {RETRY_AFTER_SECONDS} seconds.",
        ) from error
    except Exception as error:
        if not is_unavailable(error):
            raise
        log.warning("token lookup: database unavailable: %r", error)
        raise HTTPException(
            HTTP_503_SERVICE_UNAVAILABLE,
            f"The database is unavailable; try again in {RETRY_AFTER_SECONDS} seconds.",
        ) from error
    if principal is not None:
        record = observe.current()
        if record is not None:
            record.caller(principal)
        # With a read replica, this request's reads follow the rule (server/store/routing.py).
        reads = None if runtime.reads is None else runtime.reads.request()
        return Context(
            runtime.db,
            principal,
            Loaders(runtime.db, reads, manager=principal.role is Role.MANAGER),
            runtime.live,
            runtime.tokens,
            credentials=credentials,
            response=response,
            effect_allowed_hosts=runtime.settings.effect_allowed_hosts,
            keyring=runtime.keyring,
            erasure_ledger=runtime.erasure_ledger,
            reads=reads,
        )
    if request.scope.get("method") == "GET" and not any(
        request.query_params.get(name) for name in BY_ID_PARAMETERS
    ):
        # GraphiQL's page carries no token; the operations it sends do.
        return None
    raise HTTPException(
        401,
        "a valid bearer token is required (Authorization: Bearer <token>), or a console session",
    )


def refusal_response(refusal: HTTPException) -> JSONResponse:
    """A refusal made before any operation ran, as a GraphQL-shaped JSON body with a code."""
    headers: dict[str, str] = {}
    if isinstance(refusal, DocumentRefused):
        code = refusal.code
        if refusal.status_code == HTTP_405_METHOD_NOT_ALLOWED:
            # A mutation by GET: POST is the method that runs it.
            headers["Allow"] = "POST"
    elif refusal.status_code == HTTP_401_UNAUTHORIZED:
        code = ErrorCode.UNAUTHENTICATED
        headers["WWW-Authenticate"] = "Bearer"
    elif refusal.status_code == HTTP_403_FORBIDDEN:
        code = ErrorCode.FORBIDDEN
    elif refusal.status_code == HTTP_503_SERVICE_UNAVAILABLE:
        code = ErrorCode.UNAVAILABLE
        headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    else:
        # Strawberry's own: a body that is not JSON, a query over GET, a wrong method.
        code = ErrorCode.BAD_REQUEST
        if refusal.status_code == HTTP_405_METHOD_NOT_ALLOWED:
            headers["Allow"] = "GET, POST"
    return JSONResponse(
        error_body(code, refusal.reason), status_code=refusal.status_code, headers=headers
    )


async def answer_observed(
    scope: Scope, receive: Receive, send: Send, respond: Callable[[], Awaitable[Response]]
) -> None:
    """Sends what `respond` answers (or its refusal), inside the request's operation record:
    its access line and timing, with the status sent."""
    with observe.observed("http") as record:
        status: int | None = None
        try:
            try:
                response = await respond()
            except HTTPException as refusal:
                if refusal.status_code == HTTP_503_SERVICE_UNAVAILABLE:
                    record.failed = True
                else:
                    record.refuse(refusal.reason)
                response = refusal_response(refusal)
            status = response.status_code
            await response(scope, receive, send)
        except BaseException:
            record.failed = True
            raise
        finally:
            record.finish(status=status)
