"""The Starlette application and its lifespan: one pool, the GraphQL endpoint, health."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path
from typing import cast

from cross_web import AsyncHTTPRequestAdapter
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http import GraphQLRequestData
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types.unset import UNSET, UnsetType

from server.config import Settings
from server.console import console_routes, graphiql_page
from server.domain.identity.access_tokens import AccessTokenVerifier
from server.domain.identity.grants import NoAccess, RoleNotHeld
from server.graphql import wire_json
from server.graphql.context import NOBODY, Context
from server.graphql.documents.manifest import load_manifests
from server.graphql.loaders import Loaders
from server.graphql.multiplex import Multiplexer
from server.graphql.schema import build_schema
from server.graphql.strawberry_internals import asks_for_a_stream
from server.graphql.websocket import TransportWSHandler, authorization_of
from server.graphql_http import answer_observed, request_context
from server.http_limits import body_limit
from server.lean_graphql import LeanGraphQL
from server.lifespan import Runtime
from server.metrics_endpoint import MetricsEndpoint
from server.observability.requests import RequestIds
from server.web.backchannel import BackchannelLogout, backchannel_routes
from server.web.cookies import CookieRefused, socket_credentials
from server.web.login import Login

log = logging.getLogger("casework")

MAX_SUBSCRIPTIONS_PER_CONNECTION = 20
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
        # Parsed and validated once, here: a manifest that cannot be used stops the start.
        self.documents = load_manifests(runtime.settings.documents.manifests, self.schema)
        # Subscriptions many sockets share run once per event (server/graphql/multiplex.py).
        self.multiplexer = Multiplexer(enabled=runtime.settings.multiplex_subscriptions)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        await answer_observed(
            scope, receive, send, lambda: self.run(Request(scope, receive=receive))
        )

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
        return await request_context(
            runtime,
            request,
            response if isinstance(response, Response) else None,
            dev=self.dev,
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
    # Trusted documents over HTTP take the lean path; everything else reaches the view.
    lean = LeanGraphQL(graphql, runtime.settings.documents)
    app = Starlette(
        routes=[
            # Every method reaches the view, so a wrong one is refused in JSON like the rest.
            Route("/graphql", lean),
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
    app.state.lean_graphql = lean
    return app
