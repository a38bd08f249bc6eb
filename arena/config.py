"""Every setting of the arena, read from the environment in one place.

docs/configuration.md lists them; a test checks the two agree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: The store's file name inside the data directory (the default store is SQLite).
STORE_FILE = "tonk-arena.sqlite"
#: The gateway's default ports, for bots and for workers: below Linux's ephemeral port range
#: (/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default), so that no outgoing
#: connection of the arena's own (a demo's round-robin, say) can hold one when it binds.
DEFAULT_GATEWAY_PORT = 7061
DEFAULT_GATEWAY_RELAY_PORT = 7062


def resolve_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The arena's data directory: ``$TONK_DATA_DIR``, else the per-user one,
    ``$XDG_DATA_HOME/tonk-arena`` or ``~/.local/share/tonk-arena``. Never the current
    folder, so ``tonk owner create`` run from a bot's folder talks to the same arena as
    ``tonk demo`` run from the checkout."""
    env = os.environ if environ is None else environ
    explicit = env.get("TONK_DATA_DIR", "").strip()
    if explicit:
        return Path(explicit).expanduser().absolute()
    xdg = env.get("XDG_DATA_HOME", "").strip()
    if xdg and Path(xdg).is_absolute():  # the XDG spec says to ignore a relative path
        return Path(xdg) / "tonk-arena"
    home = env.get("HOME", "").strip()
    return (Path(home) if home else Path.home()) / ".local" / "share" / "tonk-arena"


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def default_database_url(environ: Mapping[str, str] | None = None) -> str:
    return sqlite_url(resolve_data_dir(environ) / STORE_FILE)


@dataclass(frozen=True)
class Settings:
    #: Folder of the arena's own files (the default SQLite store).
    data_dir: str = field(default_factory=lambda: str(resolve_data_dir()))
    #: SQLAlchemy URL of the store. SQLite by default; PostgreSQL as postgresql+psycopg://...
    database_url: str = field(default_factory=default_database_url)
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
    #: Ask a claim code (arena/bots/claims.py) of bots at allowed hosts too, not only public ones.
    claim_allowed_hosts: bool = False
    #: Per-decision deadline and per-match time bank given to bots, in milliseconds.
    decision_deadline_ms: int = 1000
    time_bank_ms: int = 5000
    #: Faults after which a seat forfeits the rest of its match.
    max_faults: int = 3
    #: Seconds all of a bot's registration checks may take together (a slow bot must not
    #: hold one of the few check slots for minutes).
    check_time_limit_s: int = 30
    #: Bot checks at once across the arena (the dashboard's and the gateway's: arena/bots/check_slots.py).
    check_slots: int = 2
    #: Secret key of the dashboard's Flask app (sessions, CSRF).
    secret_key: str = ""
    #: Where the gateway listens for connected bots (``tonk gateway``, and in-process in
    #: ``tonk dashboard`` / ``tonk demo``; port 0: none in-process).
    gateway_host: str = "127.0.0.1"
    gateway_port: int = DEFAULT_GATEWAY_PORT
    #: Where the gateway listens for match workers' relayed calls (keep it internal).
    gateway_relay_host: str = "127.0.0.1"
    gateway_relay_port: int = DEFAULT_GATEWAY_RELAY_PORT
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
    #: Limits on an uploaded bot's archive (arena/bots/uploads.py): its bytes, its files, the
    #: bytes they unpack to, the characters of a path and the folders deep a path may go.
    upload_max_bytes: int = 16 * 1024 * 1024
    upload_max_files: int = 5000
    upload_max_unpacked_bytes: int = 64 * 1024 * 1024
    upload_max_path_chars: int = 240
    upload_max_depth: int = 24
    #: The package index builds install a Python bot's declared dependencies from (empty: the
    #: arena installs no dependencies, and a bot declaring any is refused).
    build_index_url: str = ""
    #: The only distributions a bot may declare, comma separated (empty: any on the index).
    build_allowed_packages: tuple[str, ...] = field(default_factory=tuple)
    #: Seconds a build may take; one that takes longer is killed and refused.
    build_time_limit_s: int = 300
    #: What ``tonk db gc`` (arena/bots/collect.py) keeps: nothing younger than ``gc_grace_s``
    #: seconds (an upload, a build, a file of the data dir), and bot match logs and failed
    #: builds' logs for ``log_retention_days`` days (0: for ever), the logs of each bot
    #: version's last ``log_retention_matches`` matches whatever their age.
    gc_grace_s: int = 86400
    log_retention_days: int = 30
    log_retention_matches: int = 20
    #: Bounds on an owner's own sequential tests (``POST /api/v1/sprt``; operators are not
    #: bound): pairs one test may play, hands per match, tests running at once per owner, and
    #: tests one owner may start in 24 hours (0: no daily bound).
    sprt_max_pairs: int = 400
    sprt_max_hands: int = 50
    sprt_max_running: int = 1
    sprt_max_per_day: int = 20
    #: Dashboard sign-in (dashboard/signin.py): the session cookie is sent over https only
    #: (set it where the dashboard is served over https), and lasts this many hours.
    session_secure: bool = False
    session_hours: int = 168
    #: Challenges (arena/tournaments/challenges.py): deals a challenge may ask for, and how
    #: many an owner may have running and start in a day, and one bot may face at once.
    challenge_max_deals: int = 10
    challenge_max_running: int = 2
    challenge_max_per_day: int = 30
    challenge_max_per_target: int = 3
    #: People at the table (arena/tournaments/people.py, arena/play/person.py): the seconds a
    #: person has for each move (a person needs seconds, not a bot's milliseconds), the most
    #: hands a table may ask for, and how many tables a person may start in an hour.
    person_clock_s: int = 60
    people_max_hands: int = 20
    people_max_per_hour: int = 30
    people_max_tables: int = 8


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, got {raw!r}") from None


def _bounded(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """An integer setting from ``low`` to ``high``, refused (not clamped) outside them."""
    value = _int(env, name, default)
    if not low <= value <= high:
        raise ValueError(f"environment variable {name} must be an integer from {low} to {high}, got {value}")
    return value


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    """A yes/no setting: 1/true/yes or 0/false/no, anything else refused (not guessed)."""
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes"):
        return True
    if raw in ("0", "false", "no"):
        return False
    raise ValueError(f"environment variable {name} must be 1/true/yes or 0/false/no, got {raw[:40]!r}")


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from ``environ`` (default: the process environment)."""
    env = os.environ if environ is None else environ

    def get(name: str, default: str) -> str:
        return env.get(name, "").strip() or default

    folder = resolve_data_dir(env)
    hosts = tuple(h.strip() for h in get("TONK_ALLOWED_BOT_HOSTS", "").split(",") if h.strip())
    return Settings(
        data_dir=str(folder),
        database_url=get("TONK_DATABASE_URL", sqlite_url(folder / STORE_FILE)),
        redis_url=get("TONK_REDIS_URL", ""),
        queue_name=get("TONK_QUEUE", "tonk-matches"),
        embedded_workers=_int(env, "TONK_EMBEDDED_WORKERS", 0),
        matches_per_worker=max(1, _int(env, "TONK_MATCHES_PER_WORKER", 32)),
        bot_capacity=max(1, _int(env, "TONK_BOT_CAPACITY", 4)),
        operator_token=get("TONK_OPERATOR_TOKEN", ""),
        allowed_bot_hosts=hosts,
        claim_allowed_hosts=get("TONK_CLAIM_ALLOWED_HOSTS", "0").lower() in ("1", "true", "yes"),
        decision_deadline_ms=_int(env, "TONK_DECISION_DEADLINE_MS", 1000),
        time_bank_ms=_int(env, "TONK_TIME_BANK_MS", 5000),
        max_faults=_int(env, "TONK_MAX_FAULTS", 3),
        check_time_limit_s=_int(env, "TONK_CHECK_TIME_LIMIT_S", 30),
        check_slots=max(1, _int(env, "TONK_CHECK_SLOTS", 2)),
        secret_key=get("TONK_SECRET_KEY", ""),
        gateway_host=get("TONK_GATEWAY_HOST", "127.0.0.1"),
        gateway_port=_int(env, "TONK_GATEWAY_PORT", DEFAULT_GATEWAY_PORT),
        gateway_relay_host=get("TONK_GATEWAY_RELAY_HOST", "127.0.0.1"),
        gateway_relay_port=_int(env, "TONK_GATEWAY_RELAY_PORT", DEFAULT_GATEWAY_RELAY_PORT),
        gateway_advertise=get("TONK_GATEWAY_ADVERTISE", ""),
        gateway_public=get("TONK_GATEWAY_PUBLIC", ""),
        gateway_secret=get("TONK_GATEWAY_SECRET", ""),
        link_max_connections=_int(env, "TONK_LINK_MAX_CONNECTIONS", 16),
        offline_grace_s=_int(env, "TONK_OFFLINE_GRACE_S", 60),
        upload_max_bytes=_int(env, "TONK_UPLOAD_MAX_BYTES", 16 * 1024 * 1024),
        upload_max_files=_int(env, "TONK_UPLOAD_MAX_FILES", 5000),
        upload_max_unpacked_bytes=_int(env, "TONK_UPLOAD_MAX_UNPACKED_BYTES", 64 * 1024 * 1024),
        upload_max_path_chars=_int(env, "TONK_UPLOAD_MAX_PATH_CHARS", 240),
        upload_max_depth=_int(env, "TONK_UPLOAD_MAX_DEPTH", 24),
        build_index_url=get("TONK_BUILD_INDEX_URL", ""),
        build_allowed_packages=tuple(
            p.strip().lower() for p in get("TONK_BUILD_ALLOWED_PACKAGES", "").split(",") if p.strip()
        ),
        build_time_limit_s=_int(env, "TONK_BUILD_TIME_LIMIT_S", 300),
        gc_grace_s=_grace(env),
        log_retention_days=_bounded(env, "TONK_LOG_RETENTION_DAYS", 30, 0, 36500),
        log_retention_matches=_bounded(env, "TONK_LOG_RETENTION_MATCHES", 20, 0, 1_000_000),
        sprt_max_pairs=max(1, _int(env, "TONK_SPRT_MAX_PAIRS", 400)),
        sprt_max_hands=max(1, _int(env, "TONK_SPRT_MAX_HANDS", 50)),
        sprt_max_running=max(0, _int(env, "TONK_SPRT_MAX_RUNNING", 1)),
        sprt_max_per_day=max(0, _int(env, "TONK_SPRT_MAX_PER_DAY", 20)),
        session_secure=_flag(env, "TONK_SESSION_SECURE", False),
        session_hours=_bounded(env, "TONK_SESSION_HOURS", 168, 1, 24 * 90),
        challenge_max_deals=_bounded(env, "TONK_CHALLENGE_MAX_DEALS", 10, 1, 500),
        challenge_max_running=_bounded(env, "TONK_CHALLENGE_MAX_RUNNING", 2, 0, 1000),
        challenge_max_per_day=_bounded(env, "TONK_CHALLENGE_MAX_PER_DAY", 30, 0, 100_000),
        challenge_max_per_target=_bounded(env, "TONK_CHALLENGE_MAX_PER_TARGET", 3, 1, 1000),
        person_clock_s=_bounded(env, "TONK_PERSON_CLOCK_S", 60, 5, 600),
        people_max_hands=_bounded(env, "TONK_PEOPLE_MAX_HANDS", 20, 1, 100),
        people_max_per_hour=_bounded(env, "TONK_PEOPLE_MAX_PER_HOUR", 30, 1, 10_000),
        people_max_tables=_bounded(env, "TONK_PEOPLE_MAX_TABLES", 8, 1, 10_000),
    )


def _grace(env: Mapping[str, str]) -> int:
    """``TONK_GC_GRACE_S``: longer than a build and its check may take together, so that
    ``tonk db gc`` never collects what an upload in flight is using."""
    grace = _bounded(env, "TONK_GC_GRACE_S", 86400, 600, 365 * 86400)
    busy = _int(env, "TONK_BUILD_TIME_LIMIT_S", 300) + _int(env, "TONK_CHECK_TIME_LIMIT_S", 30)
    if grace <= busy:
        raise ValueError(
            f"environment variable TONK_GC_GRACE_S must be longer than a build and its check may "
            f"take (TONK_BUILD_TIME_LIMIT_S + TONK_CHECK_TIME_LIMIT_S = {busy} s), got {grace}"
        )
    return grace


def describe_store(url: str) -> str:
    """The store as a person should read it: a SQLite file's path, else the URL without its
    password."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        return f"{Path(path).resolve()} (SQLite)" if path and path != ":memory:" else url
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # a malformed URL is reported by whoever connects; never echo a secret
        return url.split("@")[-1]
