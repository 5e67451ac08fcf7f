"""The Starlette application and its lifespan: one pool, the GraphQL endpoint, health."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path
from typing import cast

from cross_web import AsyncHTTPRequestAdapter, HTTPException
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.status import (
    HTTP_401_UNAUTHORIZED,
    HTTP_403_FORBIDDEN,
    HTTP_405_METHOD_NOT_ALLOWED,
    HTTP_503_SERVICE_UNAVAILABLE,
)
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http import GraphQLRequestData
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types.unset import UNSET, UnsetType

from server.config import Settings
from server.console import console_routes, graphiql_page
from server.domain.identity.access_tokens import AccessTokenVerifier, ProviderUnavailable
from server.domain.identity.grants import NoAccess, RoleNotHeld
from server.domain.model import Role
from server.graphql import observe, wire_json
from server.graphql.codes import RETRY_AFTER_SECONDS, ErrorCode, error_body
from server.graphql.context import NOBODY, Context
from server.graphql.loaders import Loaders
from server.graphql.multiplex import Multiplexer
from server.graphql.schema import build_schema
from server.graphql.strawberry_internals import asks_for_a_stream
from server.graphql.websocket import TransportWSHandler, authorization_of
from server.http_limits import body_limit
from server.lifespan import Runtime
from server.metrics_endpoint import MetricsEndpoint
from server.observability.requests import RequestIds
from server.store.errors import is_unavailable
from server.web.backchannel import BackchannelLogout, backchannel_routes
from server.web.cookies import CookieRefused, http_credentials, socket_credentials
from server.web.login import Login

log = logging.getLogger("casework")

MAX_SUBSCRIPTIONS_PER_CONNECTION = 20
# The methods /graphql answers over HTTP (a CORS preflight never reaches the view).
GRAPHQL_METHODS = frozenset({"GET", "POST"})
# Messages are ~150 bytes: compressing them costs ~40 kB of memory per socket and CPU.
WS_PER_MESSAGE_DEFLATE = False


class CaseworkGraphQL(GraphQL[Context, None]):
    graphql_transport_ws_handler_class = TransportWSHandler

    def __init__(self, runtime: Runtime, *, dev: bool) -> None:
        self.dev = dev
        super().__init__(
            build_schema(dev=dev),
            graphql_ide="graphiql" if dev else None,
            allow_queries_via_get=False,
            subscription_protocols=[GRAPHQL_TRANSPORT_WS_PROTOCOL],
            max_subscriptions_per_connection=MAX_SUBSCRIPTIONS_PER_CONNECTION,
            connection_init_wait_timeout=timedelta(seconds=10),
            # Cross-origin websockets: the pages CORS lets call /graphql may open a socket.
            allowed_origins=runtime.settings.allowed_origins,
        )
        self.runtime = runtime
        # Subscriptions many sockets share run once per event (server/graphql/multiplex.py).
        self.multiplexer = Multiplexer(enabled=runtime.settings.multiplex_subscriptions)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        with observe.observed("http") as record:
            status: int | None = None
            try:
                try:
                    response = await self.run(Request(scope, receive=receive))
                except HTTPException as refusal:
                    if refusal.status_code == HTTP_503_SERVICE_UNAVAILABLE:
                        record.failed = True
                    else:
                        record.refuse(refusal.reason)
                    response = _refusal_response(refusal)
                status = response.status_code
                await response(scope, receive, send)
            except BaseException:
                record.failed = True
                raise
            finally:
                record.finish(status=status)

    def encode_json(self, data: object) -> str:
        return wire_json.dumps(data)

    def decode_json(self, data: str | bytes) -> object:
        return wire_json.loads(data)

    async def parse_http_body(
        self, request: AsyncHTTPRequestAdapter
    ) -> GraphQLRequestData | list[GraphQLRequestData]:
        """A POST of one JSON operation without a streaming Accept header, read directly;
        anything else as Strawberry reads it. Strawberry parses every Content-Type with the
        `email` package, which was about a twentieth of a request's CPU."""
        if request.method != "POST" or not _is_json(request.content_type):
            return await super().parse_http_body(request)
        if asks_for_a_stream(self, request.headers):
            return await super().parse_http_body(request)
        data = self.parse_json(await request.get_body())
        if not isinstance(data, dict):
            return await super().parse_http_body(request)
        query, variables = data.get("query"), data.get("variables")
        operation_name, extensions = data.get("operationName"), data.get("extensions")
        if (
            not isinstance(query, str | None)
            or not isinstance(variables, dict | None)
            or not isinstance(extensions, dict | None)
        ):
            # Strawberry's own refusal, with its wording: it reads the body again (cached).
            return await super().parse_http_body(request)
        return GraphQLRequestData(
            query=query,
            variables=variables,
            operation_name=operation_name,
            extensions=extensions,
        )

    async def render_graphql_ide(self, request: Request) -> Response:
        # Strawberry's page loads React and GraphiQL from a CDN: this one serves them here.
        return graphiql_page(request)

    async def get_context(  # type: ignore[override]
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> Context | None:
        runtime = self.runtime
        if isinstance(request, WebSocket):
            # The token arrives later, in connection_init: see on_ws_connect.
            return Context(
                runtime.db,
                NOBODY,
                Loaders(runtime.db),
                runtime.live,
                runtime.tokens,
                socket=request,
                effect_allowed_hosts=runtime.settings.effect_allowed_hosts,
                keyring=runtime.keyring,
                erasure_ledger=runtime.erasure_ledger,
            )
        if request.method not in GRAPHQL_METHODS:
            # Strawberry checks the method only after the context is built: without this a
            # wrong method would be answered 401 when it carries no token.
            raise HTTPException(
                HTTP_405_METHOD_NOT_ALLOWED, "GraphQL only supports GET and POST requests."
            )
        try:
            credentials = http_credentials(request, runtime.settings, dev=self.dev)
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
                response=response if isinstance(response, Response) else None,
                effect_allowed_hosts=runtime.settings.effect_allowed_hosts,
                keyring=runtime.keyring,
                erasure_ledger=runtime.erasure_ledger,
                reads=reads,
            )
        if request.scope.get("method") == "GET":
            # GraphiQL's page carries no token; the operations it sends do.
            return None
        raise HTTPException(
            401,
            "a valid bearer token is required (Authorization: Bearer <token>), "
            "or a console session",
        )

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        """connection_init: the token rides in its payload (forms: `authorization_of`), the
        role as `role`; without a token, the upgrade request's session cookie counts."""
        params = context.connection_params
        role = params.get("role")
        assert context.socket is not None
        try:
            credentials = socket_credentials(
                context.socket,
                authorization_of(params),
                role if isinstance(role, str) else None,
                self.runtime.settings,
                dev=self.dev,
            )
            principal = await self.runtime.tokens.resolve(credentials)
        except (CookieRefused, RoleNotHeld, NoAccess) as refusal:
            raise ConnectionRejectionError({"reason": str(refusal)}) from None
        if principal is None:
            raise ConnectionRejectionError({"reason": "a valid bearer token is required"})
        context.principal, context.credentials = principal, credentials
        return cast(UnsetType, UNSET)


def _is_json(content_type: str | None) -> bool:
    """`application/json`, with or without parameters such as a charset."""
    if content_type is None:
        return False
    return content_type.partition(";")[0].strip().lower() == "application/json"


def _refusal_response(refusal: HTTPException) -> JSONResponse:
    """A refusal made before any operation ran, as a GraphQL-shaped JSON body with a code."""
    headers: dict[str, str] = {}
    if refusal.status_code == HTTP_401_UNAUTHORIZED:
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


# --- CORS: browser consoles on other origins (CASEWORK_ALLOWED_ORIGINS). ---
# Outermost, so that refusals (401, 413, 503) carry the headers a console needs to read them.
CORS_ALLOWED_HEADERS = ("Authorization", "Content-Type", "X-Casework-Role", "X-Request-ID")
CORS_EXPOSED_HEADERS = ("Retry-After", "WWW-Authenticate", "X-Request-ID")
CORS_MAX_AGE_SECONDS = 600


def cors(allowed_origins: tuple[str, ...]) -> Middleware:
    """Preflights answered by Starlette's CORSMiddleware: 200 for a listed origin, 400 for
    any other (with none listed, every cross-origin preflight is refused: same origin only).
    Tokens travel in the Authorization header; the console's session cookie serves its
    own origin only, so no credentials mode."""
    return Middleware(
        CORSMiddleware,
        allow_origins=list(allowed_origins),
        allow_methods=["GET", "POST"],
        allow_headers=list(CORS_ALLOWED_HEADERS),
        expose_headers=list(CORS_EXPOSED_HEADERS),
        max_age=CORS_MAX_AGE_SECONDS,
    )


def _backchannel(runtime: Runtime) -> list[Route]:
    """The provider's back-channel logout, when sign-in with the provider is on."""
    auth = runtime.settings.auth
    if not auth.oidc or auth.oidc_client_id is None:
        return []

    def verifier() -> AccessTokenVerifier:
        if runtime.verifier is None:
            raise RuntimeError("the application has not started")
        return runtime.verifier

    return backchannel_routes(BackchannelLogout(lambda: runtime.db, verifier, auth.oidc_client_id))


def create_app(
    app_dsn: str,
    *,
    dev: bool,
    settings: Settings | None = None,
    run_worker: bool = False,
    merged_metrics_dir: Path | None = None,
) -> Starlette:
    """run_worker: carry decisions out in this process too (`casework serve` does).
    merged_metrics_dir: /metrics serves the merge of every serving process's metric files
    there (`casework serve --workers N`, N > 1)."""
    runtime = Runtime(app_dsn, settings or Settings.from_env(), run_worker=run_worker)
    graphql = CaseworkGraphQL(runtime, dev=dev)
    login = Login(
        runtime.settings,
        dev=dev,
        db=lambda: runtime.db,
        rules=runtime.rules,
        forget_session=lambda secret: runtime.tokens.forget_session(secret),
    )
    metrics = MetricsEndpoint(
        runtime.settings,
        lambda: runtime.db,
        lambda: runtime.tokens,
        merged_metrics_dir=merged_metrics_dir,
    )
    return Starlette(
        routes=[
            # Every method reaches the view, so a wrong one is refused in JSON like the rest.
            Route("/graphql", graphql),
            WebSocketRoute("/graphql", graphql),
            Route("/livez", runtime.livez),
            Route("/healthz", runtime.healthz),
            Route("/readyz", runtime.readyz),
            *console_routes(dev=dev),
            # Before the sign-in routes, whose mount takes every other path under /auth.
            *_backchannel(runtime),
            *login.routes(),
            Route("/metrics", metrics.scrape, methods=["GET"]),
        ],
        middleware=[
            Middleware(RequestIds),
            cors(runtime.settings.allowed_origins),
            body_limit(runtime.settings.max_body_bytes),
        ],
        lifespan=runtime.lifespan,
    )
