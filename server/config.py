"""Settings, read from the environment once at start-up."""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from server.config_documents import DocumentSettings
from server.config_mail import MailSettings
from server.observability.logs import LogFormat

REPO_ROOT = Path(__file__).resolve().parent.parent

# A revoked token keeps working on a process for at most this long.
DEFAULT_TOKEN_CACHE_SECONDS = 5.0
# Room for the largest legal enqueueItems call sent as JSON variables, even escaped to ASCII:
# 4 MiB of canonical payloads (MAX_BATCH_PAYLOAD_BYTES in server/domain/review/items.py) take up to
# 12 MiB as \uXXXX escapes, 1,000 keys of 200 characters up to 2.3 MiB, about 14.4 MiB in
# all (tests/api/test_limits.py sends it).
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


class AuthMode(enum.Enum):
    """How people and integrations may sign in (CASEWORK_AUTH_MODES, comma-separated)."""

    OIDC = "oidc"  # the organisation's identity provider: console logins and its JWTs
    TOKEN = "token"  # opaque tokens from `casework token create`


DEFAULT_SESSION_IDLE_SECONDS = 8 * 3600
DEFAULT_SESSION_MAX_SECONDS = 12 * 3600
DEFAULT_SESSION_REFRESH_SECONDS = 300
DEFAULT_OIDC_ALGORITHMS = ("RS256", "PS256", "ES256", "EdDSA")


@dataclass(frozen=True)
class AuthSettings:
    """Sign-in (docs/authentication.md). With the defaults, only CLI tokens work."""

    modes: frozenset[AuthMode] = frozenset({AuthMode.TOKEN})
    # The claim-mapping rule file (TOML or YAML); required with oidc.
    rules_file: Path | None = None
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret: str | None = None
    # The API identifier that access tokens must name in `aud`.
    oidc_audience: str | None = None
    # Shown on the console's sign-in page: "Sign in with <name>".
    oidc_provider_name: str = "your identity provider"
    oidc_algorithms: tuple[str, ...] = DEFAULT_OIDC_ALGORITHMS
    # Providers that write `typ: JWT` on access tokens (Entra ID) rather than `at+jwt`.
    oidc_accept_typ_jwt: bool = False
    oidc_scopes: str = "openid profile email"
    session_idle_seconds: int = DEFAULT_SESSION_IDLE_SECONDS
    session_max_seconds: int = DEFAULT_SESSION_MAX_SECONDS
    # How old a session's grants may get before they are recomputed with a refresh token.
    session_refresh_seconds: int = DEFAULT_SESSION_REFRESH_SECONDS
    # Signs the short-lived login-state cookie (state, nonce, PKCE verifier). Every process
    # of a deployment needs the same one; unset, each process makes its own (one process).
    session_secret: str | None = None
    # The service's origin as browsers reach it (https://casework.example.com), for the
    # redirect URIs given to the provider; unset, taken from each request.
    public_url: str | None = None

    @property
    def oidc(self) -> bool:
        return AuthMode.OIDC in self.modes

    @property
    def tokens(self) -> bool:
        return AuthMode.TOKEN in self.modes

    def __post_init__(self) -> None:
        if not self.modes:
            raise ConfigError("CASEWORK_AUTH_MODES: name at least one of oidc, token")
        if self.oidc:
            missing = [
                name
                for name, value in (
                    ("CASEWORK_OIDC_ISSUER", self.oidc_issuer),
                    ("CASEWORK_OIDC_CLIENT_ID", self.oidc_client_id),
                    ("CASEWORK_OIDC_AUDIENCE", self.oidc_audience),
                    ("CASEWORK_AUTH_RULES", self.rules_file),
                )
                if not value
            ]
            if missing:
                raise ConfigError(
                    "CASEWORK_AUTH_MODES names oidc, which needs " + ", ".join(missing)
                )
        if self.session_idle_seconds > self.session_max_seconds:
            raise ConfigError(
                "CASEWORK_SESSION_IDLE_SECONDS is more than CASEWORK_SESSION_MAX_SECONDS"
            )
        refused = [alg for alg in self.oidc_algorithms if alg == "none" or alg.startswith("HS")]
        if refused:
            raise ConfigError(
                f"CASEWORK_OIDC_ALGORITHMS: {', '.join(refused)} cannot verify a provider's "
                "tokens (only asymmetric algorithms: RS256, PS256, ES256, EdDSA, ...)"
            )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AuthSettings:
        modes = frozenset(
            AuthMode(_one_of("CASEWORK_AUTH_MODES", part.strip().lower(), AUTH_MODES))
            for part in (env.get("CASEWORK_AUTH_MODES") or "token").split(",")
            if part.strip()
        )
        rules = env.get("CASEWORK_AUTH_RULES") or None
        algorithms = env.get("CASEWORK_OIDC_ALGORITHMS") or ""
        return cls(
            modes=modes,
            rules_file=Path(rules).resolve() if rules else None,
            oidc_issuer=(env.get("CASEWORK_OIDC_ISSUER") or "").rstrip("/") or None,
            oidc_client_id=env.get("CASEWORK_OIDC_CLIENT_ID") or None,
            oidc_client_secret=env.get("CASEWORK_OIDC_CLIENT_SECRET") or None,
            oidc_audience=env.get("CASEWORK_OIDC_AUDIENCE") or None,
            oidc_provider_name=env.get("CASEWORK_OIDC_PROVIDER_NAME") or "your identity provider",
            oidc_algorithms=tuple(a.strip() for a in algorithms.split(",") if a.strip())
            or DEFAULT_OIDC_ALGORITHMS,
            oidc_accept_typ_jwt=_flag(
                "CASEWORK_OIDC_ACCEPT_TYP_JWT", env.get("CASEWORK_OIDC_ACCEPT_TYP_JWT")
            ),
            oidc_scopes=env.get("CASEWORK_OIDC_SCOPES") or "openid profile email",
            session_idle_seconds=_integer(
                env, "CASEWORK_SESSION_IDLE_SECONDS", DEFAULT_SESSION_IDLE_SECONDS, minimum=60
            ),
            session_max_seconds=_integer(
                env, "CASEWORK_SESSION_MAX_SECONDS", DEFAULT_SESSION_MAX_SECONDS, minimum=60
            ),
            session_refresh_seconds=_integer(
                env,
                "CASEWORK_SESSION_REFRESH_SECONDS",
                DEFAULT_SESSION_REFRESH_SECONDS,
                minimum=1,
            ),
            session_secret=env.get("CASEWORK_SESSION_SECRET") or None,
            public_url=(env.get("CASEWORK_PUBLIC_URL") or "").rstrip("/") or None,
        )


AUTH_MODES = tuple(mode.value for mode in AuthMode)


@dataclass(frozen=True)
class PrivacySettings:
    """Keys and the erasure ledger (docs/privacy.md). Both default to files under
    CASEWORK_HOME; in production put them where a database backup does not go."""

    # CASEWORK_KEY_FILE: the key-encryption keys; made (mode 0600) on first need.
    key_file: Path | None = None
    # CASEWORK_ERASURE_LEDGER: every erasure, one JSON line each, for `casework privacy
    # replay` after a restore.
    erasure_ledger: Path | None = None
    # How often the worker looks for personal data whose retention has ended.
    retention_interval_seconds: float = 60.0

    @classmethod
    def from_env(cls, env: Mapping[str, str], home: Path) -> PrivacySettings:
        key_file = env.get("CASEWORK_KEY_FILE")
        ledger = env.get("CASEWORK_ERASURE_LEDGER")
        return cls(
            key_file=Path(key_file).resolve() if key_file else home / "keys.json",
            erasure_ledger=Path(ledger).resolve() if ledger else home / "erasure-ledger.jsonl",
            retention_interval_seconds=_number(env, "CASEWORK_RETENTION_INTERVAL_SECONDS", 60.0),
        )


@dataclass(frozen=True)
class Settings:
    # The owner connection: runs migrations and the CLI. None means the embedded server.
    database_url: str | None
    # The service's own connection, as the role that may not rewrite history.
    # None means: database_url with the user swapped for casework_app.
    app_database_url: str | None
    home: Path
    db_dir: Path
    pool_min_size: int
    pool_max_size: int
    # "postgres" (LISTEN/NOTIFY), "redis" (pub/sub, for many replicas) or "memory"
    # (in-process only, for tests).
    events_transport: str
    # How long a resolved bearer token is trusted before it is looked up again: a revoked
    # token keeps working on a process for at most this long. 0 looks up on every use.
    token_cache_seconds: float = DEFAULT_TOKEN_CACHE_SECONDS
    # `casework serve` processes on one port (CASEWORK_WORKERS; --workers overrides it).
    serve_workers: int = 1
    # The apply worker: attempts in flight per process, and the first retry's delay.
    worker_concurrency: int = 16
    apply_backoff_seconds: float = 1.0
    # CASEWORK_WORKER_LEASE_SECONDS: how long an apply worker's liveness lasts once renewed
    # (every quarter of it); a dead worker's claims are taken over this long after its last
    # renewal instead of after their lock (twice the effect timeout plus ten seconds).
    worker_lease_seconds: float = 10.0
    redis_url: str = "redis://127.0.0.1:6379/0"
    # One channel per deployment: deployments sharing a Redis must not share hints.
    redis_channel: str = "casework_events"
    # The largest HTTP request body accepted, enforced while reading (413 beyond it).
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    # Browser origins (scheme://host[:port]) other than the service's own that may call
    # /graphql and open its websocket; empty means same-origin only, "*" means any.
    allowed_origins: tuple[str, ...] = ()
    # Hosts webhook targets (effects and redrives) may point at; empty means any host.
    effect_allowed_hosts: frozenset[str] = frozenset()
    # How long a delivered event is kept for admins to see and replay (CASEWORK_EVENT_
    # RETENTION_DAYS); events with a delivery still pending are kept until it goes out.
    event_retention_days: int = 30
    # CASEWORK_MULTIPLEX_SUBSCRIPTIONS=0: every subscription executes on its own, even
    # when many sockets send the same one (for comparison; docs/live-updates.md).
    multiplex_subscriptions: bool = True

    # --- availability (docs/operations.md, "High availability") ---
    # CASEWORK_READ_DATABASE_URL: a streaming replica for the reads that may lag (measures,
    # dashboards, exports); None: every read goes to the primary.
    read_database_url: str | None = None
    # CASEWORK_READ_MAX_LAG_SECONDS: a replica further behind than this is not read from.
    read_max_lag_seconds: float = 10.0
    # CASEWORK_READ_TIMEOUT_SECONDS: a statement on the replica, and its lag check (connects
    # within min(this, 2 s)), taking longer than this is given up and read from the primary.
    read_timeout_seconds: float = 5.0
    # CASEWORK_LISTEN_DATABASE_URL: a direct connection for LISTEN, for when the service's
    # connection goes through a transaction pooler (LISTEN needs a session of its own).
    listen_database_url: str | None = None
    # CASEWORK_DATABASE_POOLER=transaction: CASEWORK_APP_DATABASE_URL goes through a pooler
    # in transaction mode (PgBouncer): no prepared statement outlives its query, no setting
    # outlives its transaction, and LISTEN goes to CASEWORK_LISTEN_DATABASE_URL
    # (server/pooler.py). "none": a direct connection, or a pooler in session mode.
    database_pooler: str = "none"

    # --- observability (docs/observability.md) ---
    # CASEWORK_LOG_FORMAT and CASEWORK_LOG_LEVEL: lines for people ("text") or one JSON
    # object per line ("json"); the level of Casework's own loggers.
    log_format: str = "text"
    log_level: str = "INFO"
    # CASEWORK_METRICS_PUBLIC=1: /metrics without a bearer token (a private network only).
    metrics_public: bool = False
    # How old a snapshot of the database figures may be before a scrape computes a new one.
    metrics_cache_seconds: float = 5.0
    # casework_decisions_unapplied_older_than_threshold counts decisions older than this.
    metrics_unapplied_threshold_seconds: float = 300.0

    # --- trusted documents and the lean path (docs/security.md, "Trusted documents") ---
    documents: DocumentSettings = field(default_factory=DocumentSettings)

    # --- sign-in (docs/authentication.md) ---
    auth: AuthSettings = AuthSettings()

    # --- personal data (docs/privacy.md) ---
    privacy: PrivacySettings = PrivacySettings()

    # --- notifications (docs/operations.md, "Notifications") ---
    # CASEWORK_SMTP_URL and CASEWORK_NOTIFY_FROM: how e-mail channels send; None: they
    # cannot (their notifications fail, naming the setting).
    mail: MailSettings | None = None

    def __post_init__(self) -> None:
        if self.pool_min_size > self.pool_max_size:
            raise ConfigError(
                f"CASEWORK_POOL_MIN={self.pool_min_size} is more than "
                f"CASEWORK_POOL_MAX={self.pool_max_size}"
            )

    @property
    def transaction_pooler(self) -> bool:
        """The service's connections go through a pooler in transaction mode."""
        return self.database_pooler == "transaction"

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ
        home = Path(env.get("CASEWORK_HOME") or Path.cwd() / ".casework").resolve()
        return cls(
            database_url=env.get("DATABASE_URL") or None,
            app_database_url=env.get("CASEWORK_APP_DATABASE_URL") or None,
            home=home,
            db_dir=Path(env.get("CASEWORK_DB_DIR") or REPO_ROOT / "db").resolve(),
            pool_min_size=_integer(env, "CASEWORK_POOL_MIN", 2, minimum=0),
            pool_max_size=_integer(env, "CASEWORK_POOL_MAX", 20, minimum=1),
            events_transport=_one_of(
                "CASEWORK_EVENTS_TRANSPORT",
                env.get("CASEWORK_EVENTS_TRANSPORT", "postgres"),
                ("postgres", "redis", "memory"),
            ),
            serve_workers=_integer(env, "CASEWORK_WORKERS", 1, minimum=1),
            worker_concurrency=_integer(env, "CASEWORK_WORKER_CONCURRENCY", 16, minimum=1),
            apply_backoff_seconds=_number(env, "CASEWORK_APPLY_BACKOFF_SECONDS", 1.0),
            worker_lease_seconds=_number(env, "CASEWORK_WORKER_LEASE_SECONDS", 10.0),
            redis_url=env.get("CASEWORK_REDIS_URL") or "redis://127.0.0.1:6379/0",
            redis_channel=env.get("CASEWORK_REDIS_CHANNEL") or "casework_events",
            token_cache_seconds=_number(
                env, "CASEWORK_TOKEN_CACHE_SECONDS", DEFAULT_TOKEN_CACHE_SECONDS
            ),
            max_body_bytes=_integer(
                env, "CASEWORK_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, minimum=1
            ),
            allowed_origins=_origins(env.get("CASEWORK_ALLOWED_ORIGINS") or ""),
            effect_allowed_hosts=frozenset(
                host.strip().lower()
                for host in (env.get("CASEWORK_EFFECT_ALLOWED_HOSTS") or "").split(",")
                if host.strip()
            ),
            event_retention_days=_integer(env, "CASEWORK_EVENT_RETENTION_DAYS", 30, minimum=1),
            multiplex_subscriptions=_flag(
                "CASEWORK_MULTIPLEX_SUBSCRIPTIONS",
                env.get("CASEWORK_MULTIPLEX_SUBSCRIPTIONS") or "1",
            ),
            read_database_url=env.get("CASEWORK_READ_DATABASE_URL") or None,
            read_max_lag_seconds=_number(env, "CASEWORK_READ_MAX_LAG_SECONDS", 10.0),
            read_timeout_seconds=_number(env, "CASEWORK_READ_TIMEOUT_SECONDS", 5.0),
            listen_database_url=env.get("CASEWORK_LISTEN_DATABASE_URL") or None,
            database_pooler=_one_of(
                "CASEWORK_DATABASE_POOLER",
                (env.get("CASEWORK_DATABASE_POOLER") or "none").lower(),
                DATABASE_POOLERS,
            ),
            **_observability_settings(env),
            documents=_document_settings(env),
            auth=AuthSettings.from_env(env),
            privacy=PrivacySettings.from_env(env, home),
            mail=_mail_settings(env),
        )


# What sits between the service and PostgreSQL (CASEWORK_DATABASE_POOLER).
DATABASE_POOLERS = ("none", "transaction")


class ConfigError(ValueError):
    """A setting in the environment that cannot work; the CLI prints it, not a traceback."""


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ConfigError(f"{name}={value!r}: expected one of {', '.join(allowed)}")
    return value


# Numbers are checked here, so that a typo is one line naming the variable, before the
# command touches a database.

_N = TypeVar("_N", int, float)


def _number_setting(
    env: Mapping[str, str],
    name: str,
    default: _N,
    parse: Callable[[str], _N],
    expected: str,
    in_range: Callable[[_N], bool],
    range_expected: str,
) -> _N:
    """The variable as `parse` reads it, or `default` when it is unset or blank; what does
    not parse, or falls outside `in_range`, is a ConfigError saying what was expected."""
    raw = env.get(name) or ""
    if not raw.strip():
        return default
    try:
        value = parse(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r}: expected {expected}") from None
    if not in_range(value):
        raise ConfigError(f"{name}={raw!r}: expected {range_expected}")
    return value


def _integer(env: Mapping[str, str], name: str, default: int, *, minimum: int) -> int:
    return _number_setting(
        env,
        name,
        default,
        int,
        "a whole number",
        lambda value: value >= minimum,
        f"at least {minimum}",
    )


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    return _number_setting(
        env,
        name,
        default,
        float,
        "a number of seconds",
        lambda value: 0 <= value < float("inf"),
        "a number of seconds, 0 or more",
    )


def _origins(raw: str) -> tuple[str, ...]:
    """CASEWORK_ALLOWED_ORIGINS: comma-separated origins, or `*` for any.

    Written as browsers send them in the Origin header (lower case, no default port), so
    that CORS and the websocket check compare them as they are.
    """
    origins = []
    for entry in (part.strip() for part in raw.split(",")):
        if entry == "*":
            origins.append(entry)
        elif entry:
            origins.append(_origin(entry))
    return tuple(dict.fromkeys(origins))


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(entry: str) -> str:
    refusal = ConfigError(
        f"CASEWORK_ALLOWED_ORIGINS: {entry!r} is not an origin "
        "(scheme://host[:port] with no path, such as https://console.example.com)"
    )
    try:
        parts = urlsplit(entry)
        port = parts.port
    except ValueError:
        raise refusal from None
    scheme = parts.scheme.lower()
    if (
        scheme not in _DEFAULT_PORTS
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username
    ):
        raise refusal
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        host = f"{host}:{port}"
    return f"{scheme}://{host}"


# --- observability settings (docs/observability.md) ---

LOG_FORMATS = tuple(log_format.value for log_format in LogFormat)
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _observability_settings(env: Mapping[str, str]) -> dict[str, Any]:
    return {
        "log_format": _one_of(
            "CASEWORK_LOG_FORMAT", (env.get("CASEWORK_LOG_FORMAT") or "text").lower(), LOG_FORMATS
        ),
        "log_level": _one_of(
            "CASEWORK_LOG_LEVEL", (env.get("CASEWORK_LOG_LEVEL") or "INFO").upper(), LOG_LEVELS
        ),
        "metrics_public": _flag("CASEWORK_METRICS_PUBLIC", env.get("CASEWORK_METRICS_PUBLIC")),
        "metrics_cache_seconds": _number(env, "CASEWORK_METRICS_CACHE_SECONDS", 5.0),
        "metrics_unapplied_threshold_seconds": _number(
            env, "CASEWORK_METRICS_UNAPPLIED_THRESHOLD_SECONDS", 300.0
        ),
    }


def _document_settings(env: Mapping[str, str]) -> DocumentSettings:
    try:
        return DocumentSettings.from_env(env)
    except ValueError as error:
        raise ConfigError(str(error)) from None


def _mail_settings(env: Mapping[str, str]) -> MailSettings | None:
    try:
        return MailSettings.from_env(env)
    except ValueError as error:
        raise ConfigError(str(error)) from None


def _flag(name: str, value: str | None) -> bool:
    if value is None or value == "":
        return False
    if value.lower() in ("1", "true", "yes"):
        return True
    if value.lower() in ("0", "false", "no"):
        return False
    raise ConfigError(f"{name}={value!r}: expected 1 or 0")
