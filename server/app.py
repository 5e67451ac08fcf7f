"""The Starlette application and its lifespan: one pool, the GraphQL endpoint, health."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import cast

from cross_web import AsyncHTTPRequestAdapter, HTTPException
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
from server.config_documents import DocumentMode
from server.console import console_routes, graphiql_page
from server.domain.identity.access_tokens import AccessTokenVerifier
from server.domain.identity.grants import NoAccess, RoleNotHeld
from server.graphql import wire_json
from server.graphql.context import NOBODY, Context
from server.graphql.documents.manifest import TrustedDocuments, load_manifests
from server.graphql.documents.requests import (
    DocumentRefusal,
    ResolvedRequest,
    refused_over_get,
    resolve_request,
)
from server.graphql.loaders import Loaders
from server.graphql.multiplex import Multiplexer
from server.graphql.schema import build_schema
from server.graphql.strawberry_internals import asks_for_a_stream
from server.graphql.websocket import TransportWSHandler, authorization_of
from server.graphql_http import (
    BY_ID_PARAMETERS,
    DocumentRefused,
    answer_observed,
    request_context,
)
from server.http_limits import body_limit
from server.lean_graphql import GRAPHQL_PATH, GraphQLFirst, LeanGraphQL
from server.lifespan import Runtime
from server.metrics_endpoint import MetricsEndpoint
from server.observability.requests import RequestIds
from server.search_export import SearchExport
from server.web.backchannel import BackchannelLogout, backchannel_routes
from server.web.cookies import CookieRefused, socket_credentials
from server.web.login import Login

log = logging.getLogger("casework")

MAX_SUBSCRIPTIONS_PER_CONNECTION = 20
# A GET runs a trusted document named by its id (GraphQL over HTTP's persisted documents);
# a text travels by POST.
GET_WITHOUT_AN_ID = (
    "A GET names a trusted document by its documentId; send a document's text by POST."
)
# Messages are ~150 bytes: compressing them costs ~40 kB of memory per socket and CPU.
WS_PER_MESSAGE_DEFLATE = False


class CaseworkGraphQL(GraphQL[Context, None]):
    graphql_transport_ws_handler_class = TransportWSHandler

    def __init__(
        self, runtime: Runtime, *, dev: bool, documents: TrustedDocuments | None = None
    ) -> None:
        self.dev = dev
        super().__init__(
            build_schema(dev=dev),
            graphql_ide="graphiql" if dev else None,
            # Queries by GET name a trusted document by id; parse_http_body refuses the rest.
            allow_queries_via_get=True,
            subscription_protocols=[GRAPHQL_TRANSPORT_WS_PROTOCOL],
            max_subscriptions_per_connection=MAX_SUBSCRIPTIONS_PER_CONNECTION,
            connection_init_wait_timeout=timedelta(seconds=10),
            # Cross-origin websockets: the pages CORS lets call /graphql may open a socket.
            allowed_origins=runtime.settings.allowed_origins,
        )
        self.runtime = runtime
        # Subscriptions many sockets share run once per event (server/graphql/multiplex.py).
        self.multiplexer = Multiplexer(enabled=runtime.settings.multiplex_subscriptions)
        # The trusted documents (server/graphql/documents/): loaded and validated here, once,
        # unless the caller already has them; a bad manifest raises ManifestError.
        settings = runtime.settings.documents
        self.documents = (
            load_manifests(settings.manifests, self.schema) if documents is None else documents
        )
        # --dev (and so GraphiQL) accepts any document.
        self.document_mode = DocumentMode.ANY if dev else settings.mode

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
        """The request's document, by id or by text (server/graphql/documents/requests.py).

        A POST of one JSON operation without a streaming Accept header is read directly;
        anything else as Strawberry reads it. Strawberry parses every Content-Type with the
        `email` package, which was about a twentieth of a request's CPU."""
        if request.method == "GET":
            data = self.parse_query_params(request.query_params)
            if not any(data.get(name) for name in BY_ID_PARAMETERS):
                raise HTTPException(400, GET_WITHOUT_AN_ID)
            resolved = self.resolve(data)
            refusal = refused_over_get(resolved)
            if refusal is not None:
                raise DocumentRefused(refusal)
            return _request_data(resolved)
        if _is_json(request.content_type) and not asks_for_a_stream(self, request.headers):
            body = self.parse_json(await request.get_body())
            if isinstance(body, dict):
                return _request_data(self.resolve(body))
        # Strawberry's own reading (and refusals, in its wording): it reads the body again
        # (cached).
        parsed = await super().parse_http_body(request)
        if isinstance(parsed, list):
            # Batches are off (Strawberry refuses them above); were they on, each operation
            # would still need a document this server runs.
            return [self._resolved_again(operation) for operation in parsed]
        return self._resolved_again(parsed)

    def _resolved_again(self, parsed: GraphQLRequestData) -> GraphQLRequestData:
        given = {
            "query": parsed.query,
            "variables": parsed.variables,
            "operationName": parsed.operation_name,
            "extensions": parsed.extensions,
        }
        return dataclasses.replace(_request_data(self.resolve(given)), protocol=parsed.protocol)

    def resolve(self, data: Mapping[str, object]) -> ResolvedRequest:
        """The request's document; raises DocumentRefused when it names none this server
        runs."""
        resolved = resolve_request(data, self.documents, self.document_mode)
        if isinstance(resolved, DocumentRefusal):
            raise DocumentRefused(resolved)
        return resolved

    def should_render_graphql_ide(  # type: ignore[override]
        self, request: AsyncHTTPRequestAdapter
    ) -> bool:
        # A GET that names a document by id asks for its answer, not for the page.
        params = request.query_params
        return super().should_render_graphql_ide(request) and not any(
            params.get(name) for name in BY_ID_PARAMETERS
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


def _request_data(resolved: ResolvedRequest) -> GraphQLRequestData:
    return GraphQLRequestData(
        query=resolved.query,
        variables=resolved.variables,
        operation_name=resolved.operation_name,
        extensions=resolved.extensions,
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
    documents: TrustedDocuments | None = None,
) -> Starlette:
    """run_worker: carry decisions out in this process too (`casework serve` does).
    merged_metrics_dir: /metrics serves the merge of every serving process's metric files
    there (`casework serve --workers N`, N > 1).
    documents: the trusted documents, when the caller has loaded them already; otherwise
    loaded here (ManifestError, one line, for a bad manifest)."""
    runtime = Runtime(app_dsn, settings or Settings.from_env(), run_worker=run_worker)
    graphql = CaseworkGraphQL(runtime, dev=dev, documents=documents)
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
            Route(GRAPHQL_PATH, lean),
            WebSocketRoute(GRAPHQL_PATH, graphql),
            Route("/livez", runtime.livez),
            Route("/healthz", runtime.healthz),
            Route("/readyz", runtime.readyz),
            *console_routes(dev=dev),
            # Before the sign-in routes, whose mount takes every other path under /auth.
            *_backchannel(runtime),
            *login.routes(),
            Route("/metrics", metrics.scrape, methods=["GET"]),
            *SearchExport(runtime, dev=dev).routes(),
        ],
        middleware=[
            Middleware(RequestIds),
            cors(runtime.settings.allowed_origins),
            body_limit(runtime.settings.max_body_bytes),
            Middleware(GraphQLFirst, graphql=lean),
        ],
        lifespan=runtime.lifespan,
    )
    app.state.lean_graphql = lean
    return app
