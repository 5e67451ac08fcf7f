"""The Starlette application and its lifespan: one pool, the GraphQL endpoint, health."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Awaitable
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
from server.domain.identity.principals import CredentialResolver, Credentials
from server.domain.identity.provider_tokens import (
    ProviderAccessTokens,
    load_rules,
    provider_verifier,
)
from server.events.listener import PostgresListener
from server.events.live import LiveUpdates
from server.events.redis import RedisTransport
from server.events.transport import MemoryTransport, Transport
from server.graphql import observe, wire_json
from server.graphql.codes import RETRY_AFTER_SECONDS, ErrorCode, error_body
from server.graphql.context import NOBODY, Context
from server.graphql.loaders import Loaders
from server.graphql.multiplex import Multiplexer
from server.graphql.schema import build_schema
from server.graphql.strawberry_internals import asks_for_a_stream
from server.graphql.websocket import TransportWSHandler, authorization_of
from server.http_limits import body_limit
from server.metrics_endpoint import MetricsEndpoint
from server.observability.requests import RequestIds
from server.store import sql
from server.store.database import Database, create_pool
from server.store.errors import is_unavailable
from server.store.queries import Queries
from server.worker import ApplyWorker, worker_settings

log = logging.getLogger("casework")

MAX_SUBSCRIPTIONS_PER_CONNECTION = 20
# The role a request acts under, for a principal the rules gave several (default: the first).
ROLE_HEADER = "x-casework-role"
# The methods /graphql answers over HTTP (a CORS preflight never reaches the view).
GRAPHQL_METHODS = frozenset({"GET", "POST"})
GC_THRESHOLDS = (50_000, 20, 10)
# Messages are ~150 bytes: compressing them costs ~40 kB of memory per socket and CPU.
WS_PER_MESSAGE_DEFLATE = False


class Runtime:
    """What lives as long as the process: the pool and the token cache."""

    def __init__(self, app_dsn: str, settings: Settings, *, run_worker: bool) -> None:
        self._app_dsn = app_dsn
        self._settings = settings
        self._run_worker = run_worker
        self._db: Database | None = None
        self._tokens: CredentialResolver | None = None
        self._live: LiveUpdates | None = None
        self.worker: ApplyWorker | None = None
        # Read before the process serves: a bad rule file stops `casework serve` with its
        # message, rather than refusing every login later.
        self.rules = load_rules(settings.auth)
        self.verifier: AccessTokenVerifier | None = None

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def db(self) -> Database:
        if self._db is None:
            raise RuntimeError("the application has not started")
        return self._db

    @property
    def tokens(self) -> CredentialResolver:
        if self._tokens is None:
            raise RuntimeError("the application has not started")
        return self._tokens

    @property
    def live(self) -> LiveUpdates:
        if self._live is None:
            raise RuntimeError("the application has not started")
        return self._live

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        settings = self._settings
        # Thousands of sockets keep a few hundred thousand objects alive; with the default
        # thresholds a full collection (~200 ms at 1,000 subscribers) lands in a fan-out
        # every few seconds. Rarer young collections make full ones rare too.
        gc.set_threshold(*GC_THRESHOLDS)
        transport = self._transport()
        publish_hints = transport.publish if isinstance(transport, RedisTransport) else None
        pool = await create_pool(
            self._app_dsn,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            # Writes then return their hint instead of sending a NOTIFY (migration 0003).
            server_settings={"casework.events": "app"} if publish_hints else None,
        )
        self._db = Database(
            pool,
            Queries(settings.db_dir / "queries"),
            publish_hints=publish_hints,
        )
        access_tokens = None
        if self.rules is not None:
            self.verifier = provider_verifier(settings.auth)
            access_tokens = ProviderAccessTokens(self._db, self.verifier, self.rules)
        self._tokens = CredentialResolver(
            self._db,
            ttl=settings.token_cache_seconds,
            auth=settings.auth,
            access_tokens=access_tokens,
        )
        self._live = LiveUpdates(self._db, transport)
        worker_task = None
        if self._run_worker:
            self.worker = ApplyWorker(self._db, worker_settings(settings))
            self._live.observe(self.worker.hint, self.worker.wake)
            worker_task = asyncio.create_task(self.worker.run(), name="casework-apply-worker")
        await self._live.start()
        try:
            yield
        finally:
            if self.worker is not None and worker_task is not None:
                self.worker.stop()
                if not await _within_shutdown(worker_task, "the apply worker"):
                    worker_task.cancel()
            await _within_shutdown(self._live.stop(), "live updates")
            if self.verifier is not None:
                await self.verifier.aclose()
            self._db = self._tokens = self._live = self.worker = None
            if not await _within_shutdown(pool.close(), "the pool"):
                # A connection still held by a request that never finished.
                pool.terminate()

    def _transport(self) -> Transport | RedisTransport:
        settings = self._settings
        if settings.events_transport == "memory":
            return MemoryTransport()
        if settings.events_transport == "redis":
            return RedisTransport(settings.redis_url, channel=settings.redis_channel)
        return PostgresListener(self._app_dsn)

    async def _database_ok(self) -> bool:
        with contextlib.suppress(Exception):
            return await asyncio.wait_for(self.db.fetchrow(sql.health.HEALTH_CHECK), 2) is not None
        return False

    async def livez(self, request: Request) -> JSONResponse:
        """200 while the process answers; touches nothing else. Restart it when this fails."""
        return JSONResponse({"live": True})

    async def healthz(self, request: Request) -> JSONResponse:
        """What works and what does not, for a person or a dashboard: 503 when degraded."""
        status = self.live.status()
        database_ok = await self._database_ok()
        healthy = database_ok and status.transport.connected
        body = {
            "status": "ok" if healthy else "degraded",
            "database": database_ok,
            "listener": {
                "transport": status.transport.name,
                "connected": status.transport.connected,
                "reconnects": status.transport.reconnects,
                "last_error": status.transport.last_error,
                "backend_pid": status.transport.backend_pid,
            },
            "subscribers": status.subscribers,
            "events_dispatched": status.events_dispatched,
            "inbox_overflows": status.inbox_overflows,
            "worker": None if self.worker is None else vars(self.worker.stats),
        }
        return JSONResponse(body, status_code=200 if healthy else 503)

    async def readyz(self, request: Request) -> JSONResponse:
        """503 while the database or the listener is down: take this process out of rotation."""
        database_ok = await self._database_ok()
        listener_ok = self.live.status().transport.connected
        ready = database_ok and listener_ok
        return JSONResponse(
            {"ready": ready, "database": database_ok, "listener": listener_ok},
            status_code=200 if ready else 503,
        )


# uvicorn waits for the lifespan's shutdown without a limit, and a second SIGTERM does not
# cut it short: a step that hangs (a pool connection never released) would keep the
# process alive for ever. Each step gets this long, then is logged and cut short.
SHUTDOWN_STEP_SECONDS = 15.0


async def _within_shutdown(step: Awaitable[object], what: str) -> bool:
    """Awaits one step of the shutdown for at most SHUTDOWN_STEP_SECONDS; False if cut."""
    try:
        await asyncio.wait_for(step, SHUTDOWN_STEP_SECONDS)
    except TimeoutError:
        log.warning(
            "shutdown: %s did not stop within %.0f s; stopping without it",
            what,
            SHUTDOWN_STEP_SECONDS,
        )
        return False
    return True


class CaseworkGraphQL(GraphQL[Context, None]):
    graphql_transport_ws_handler_class = TransportWSHandler

    def __init__(self, runtime: Runtime, *, dev: bool) -> None:
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
            )
        if request.method not in GRAPHQL_METHODS:
            # Strawberry checks the method only after the context is built: without this a
            # wrong method would be answered 401 when it carries no token.
            raise HTTPException(
                HTTP_405_METHOD_NOT_ALLOWED, "GraphQL only supports GET and POST requests."
            )
        credentials = Credentials.of(
            request.headers.get("authorization"), role=request.headers.get(ROLE_HEADER)
        )
        try:
            principal = await runtime.tokens.resolve(credentials)
        except (RoleNotHeld, NoAccess) as refusal:
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
            return Context(
                runtime.db,
                principal,
                Loaders(runtime.db),
                runtime.live,
                runtime.tokens,
                credentials=credentials,
                response=response if isinstance(response, Response) else None,
                effect_allowed_hosts=runtime.settings.effect_allowed_hosts,
            )
        if request.scope.get("method") == "GET":
            # GraphiQL's page carries no token; the operations it sends do.
            return None
        raise HTTPException(401, "a valid bearer token is required: Authorization: Bearer <token>")

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        """connection_init: the token rides in its payload (forms: `authorization_of`)."""
        role = context.connection_params.get("role")
        credentials = Credentials.of(
            authorization_of(context.connection_params),
            role=role if isinstance(role, str) else None,
        )
        try:
            principal = await self.runtime.tokens.resolve(credentials)
        except (RoleNotHeld, NoAccess) as refusal:
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
CORS_ALLOWED_HEADERS = ("Authorization", "Content-Type", "X-Request-ID", "X-Casework-Role")
CORS_EXPOSED_HEADERS = ("Retry-After", "WWW-Authenticate", "X-Request-ID")
CORS_MAX_AGE_SECONDS = 600


def cors(allowed_origins: tuple[str, ...]) -> Middleware:
    """Preflights answered by Starlette's CORSMiddleware: 200 for a listed origin, 400 for
    any other (with none listed, every cross-origin preflight is refused: same origin only).
    Tokens travel in the Authorization header, never in cookies, so no credentials mode."""
    return Middleware(
        CORSMiddleware,
        allow_origins=list(allowed_origins),
        allow_methods=["GET", "POST"],
        allow_headers=list(CORS_ALLOWED_HEADERS),
        expose_headers=list(CORS_EXPOSED_HEADERS),
        max_age=CORS_MAX_AGE_SECONDS,
    )


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
            Route("/metrics", metrics.scrape, methods=["GET"]),
        ],
        middleware=[
            Middleware(RequestIds),
            cors(runtime.settings.allowed_origins),
            body_limit(runtime.settings.max_body_bytes),
        ],
        lifespan=runtime.lifespan,
    )
