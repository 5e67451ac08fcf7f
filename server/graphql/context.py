"""What every resolver sees: the database, the caller, and per-request loaders."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from server.domain.model import Principal
from server.graphql.loaders import Loaders
from server.store.database import Database


@dataclass
class Context:
    db: Database
    principal: Principal
    loaders: Loaders
    # One clock per request, so every item in a response is judged against the same instant.
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
