"""Every setting of the arena, read from the environment in one place.

docs/configuration.md lists them; a test checks the two agree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_DATABASE_URL = "sqlite:///" + str(Path("var") / "tonk-arena.sqlite")


@dataclass(frozen=True)
class Settings:
    #: SQLAlchemy URL of the store. SQLite by default; PostgreSQL as postgresql+psycopg://...
    database_url: str = DEFAULT_DATABASE_URL
    #: Redis URL of the job queue. Empty: matches run in a local process pool (embedded mode).
    redis_url: str = ""
    #: Name of the RQ queue matches are put on.
    queue_name: str = "tonk-matches"
    #: Processes of the embedded pool (0: one per core).
    embedded_workers: int = 0
    #: Operator token accepted in addition to operator owners' tokens (empty: none).
    operator_token: str = ""
    #: Hosts bots may be registered at besides public addresses, comma separated
    #: (e.g. "127.0.0.1,localhost" on a single-machine arena).
    allowed_bot_hosts: tuple[str, ...] = field(default_factory=tuple)
    #: Per-decision deadline and per-match time bank given to bots, in milliseconds.
    decision_deadline_ms: int = 1000
    time_bank_ms: int = 5000
    #: Faults after which a seat forfeits the rest of its match.
    max_faults: int = 3
    #: Secret key of the dashboard's Flask app (sessions, CSRF).
    secret_key: str = ""
    #: Where the gateway listens for connected bots (``tonk gateway``, and in-process in
    #: ``tonk dashboard`` / ``tonk demo``; port 0: none in-process).
    gateway_host: str = "127.0.0.1"
    gateway_port: int = 50061
    #: Where the gateway listens for match workers' relayed calls (keep it internal).
    gateway_relay_host: str = "127.0.0.1"
    gateway_relay_port: int = 50062
    #: The relay HOST:PORT workers dial, stored for them (default: relay host and port).
    gateway_advertise: str = ""
    #: The HOST:PORT bots are told to connect to (``GET /api/v1/``; default: the dashboard's
    #: host name with ``gateway_port``).
    gateway_public: str = ""
    #: Secret workers present to gateways (empty: each gateway makes one up and stores it).
    gateway_secret: str = ""
    #: Live connections one owner may hold over all gateways.
    link_max_connections: int = 16
    #: Seconds a match waits for a connected bot that is offline before it is played anyway
    #: (its calls then fault as UNREACHABLE); a tournament may set its own ``offline_grace_s``.
    offline_grace_s: int = 60


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, got {raw!r}") from None


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from ``environ`` (default: the process environment)."""
    env = os.environ if environ is None else environ

    def get(name: str, default: str) -> str:
        return env.get(name, "").strip() or default

    hosts = tuple(h.strip() for h in get("TONK_ALLOWED_BOT_HOSTS", "").split(",") if h.strip())
    return Settings(
        database_url=get("TONK_DATABASE_URL", DEFAULT_DATABASE_URL),
        redis_url=get("TONK_REDIS_URL", ""),
        queue_name=get("TONK_QUEUE", "tonk-matches"),
        embedded_workers=_int(env, "TONK_EMBEDDED_WORKERS", 0),
        operator_token=get("TONK_OPERATOR_TOKEN", ""),
        allowed_bot_hosts=hosts,
        decision_deadline_ms=_int(env, "TONK_DECISION_DEADLINE_MS", 1000),
        time_bank_ms=_int(env, "TONK_TIME_BANK_MS", 5000),
        max_faults=_int(env, "TONK_MAX_FAULTS", 3),
        secret_key=get("TONK_SECRET_KEY", ""),
        gateway_host=get("TONK_GATEWAY_HOST", "127.0.0.1"),
        gateway_port=_int(env, "TONK_GATEWAY_PORT", 50061),
        gateway_relay_host=get("TONK_GATEWAY_RELAY_HOST", "127.0.0.1"),
        gateway_relay_port=_int(env, "TONK_GATEWAY_RELAY_PORT", 50062),
        gateway_advertise=get("TONK_GATEWAY_ADVERTISE", ""),
        gateway_public=get("TONK_GATEWAY_PUBLIC", ""),
        gateway_secret=get("TONK_GATEWAY_SECRET", ""),
        link_max_connections=_int(env, "TONK_LINK_MAX_CONNECTIONS", 16),
        offline_grace_s=_int(env, "TONK_OFFLINE_GRACE_S", 60),
    )
