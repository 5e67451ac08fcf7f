"""The Starlette application and its lifespan: one pool, the GraphQL endpoint, health."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from cross_web import HTTPException
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL

from server.config import Settings
from server.graphql.context import Context
from server.graphql.loaders import Loaders
from server.graphql.schema import build_schema
from server.identity import TokenResolver
from server.store.database import Database, create_pool
from server.store.queries import Queries

log = logging.getLogger("casework")


class Runtime:
    """What lives as long as the process: the pool and the token cache."""

    def __init__(self, app_dsn: str, settings: Settings) -> None:
        self._app_dsn = app_dsn
        self._settings = settings
        self._db: Database | None = None
        self._tokens: TokenResolver | None = None

    @property
    def db(self) -> Database:
        if self._db is None:
            raise RuntimeError("the application has not started")
        return self._db

    @property
    def tokens(self) -> TokenResolver:
        if self._tokens is None:
            raise RuntimeError("the application has not started")
        return self._tokens

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        settings = self._settings
        pool = await create_pool(
            self._app_dsn, min_size=settings.pool_min_size, max_size=settings.pool_max_size
        )
        self._db = Database(pool, Queries(settings.db_dir / "queries"))
        self._tokens = TokenResolver(self._db)
        try:
            yield
        finally:
            self._db = self._tokens = None
            await pool.close()

    async def healthz(self, request: Request) -> JSONResponse:
        database_ok = False
        with contextlib.suppress(Exception):
            database_ok = await self.db.fetchrow("health_check") is not None
        body = {"status": "ok" if database_ok else "degraded", "database": database_ok}
        return JSONResponse(body, status_code=200 if database_ok else 503)


class CaseworkGraphQL(GraphQL[Context, None]):
    def __init__(self, runtime: Runtime, *, dev: bool) -> None:
        super().__init__(
            build_schema(dev=dev),
            graphql_ide="graphiql" if dev else None,
            allow_queries_via_get=False,
            subscription_protocols=[GRAPHQL_TRANSPORT_WS_PROTOCOL],
        )
        self.runtime = runtime

    async def get_context(  # type: ignore[override]
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> Context | None:
        principal = await self.runtime.tokens.resolve(request.headers.get("authorization"))
        if principal is not None:
            return Context(self.runtime.db, principal, Loaders(self.runtime.db))
        if request.scope["type"] == "http" and request.scope.get("method") == "GET":
            # GraphiQL's page carries no token; the operations it sends do.
            return None
        raise HTTPException(401, "a valid bearer token is required: Authorization: Bearer <token>")


def create_app(app_dsn: str, *, dev: bool, settings: Settings | None = None) -> Starlette:
    runtime = Runtime(app_dsn, settings or Settings.from_env())
    graphql = CaseworkGraphQL(runtime, dev=dev)
    return Starlette(
        routes=[
            Route("/graphql", graphql, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
            Route("/healthz", runtime.healthz),
        ],
        lifespan=runtime.lifespan,
    )
