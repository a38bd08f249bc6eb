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
    #: Matches one worker process (embedded pool process or `tonk worker`) plays at once.
    matches_per_worker: int = 32
    #: Matches at once for a bot that declares no capacity (GetInfo max_concurrent_matches).
    bot_capacity: int = 4
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
        matches_per_worker=max(1, _int(env, "TONK_MATCHES_PER_WORKER", 32)),
        bot_capacity=max(1, _int(env, "TONK_BOT_CAPACITY", 4)),
        operator_token=get("TONK_OPERATOR_TOKEN", ""),
        allowed_bot_hosts=hosts,
        decision_deadline_ms=_int(env, "TONK_DECISION_DEADLINE_MS", 1000),
        time_bank_ms=_int(env, "TONK_TIME_BANK_MS", 5000),
        max_faults=_int(env, "TONK_MAX_FAULTS", 3),
        secret_key=get("TONK_SECRET_KEY", ""),
    )
