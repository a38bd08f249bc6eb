"""Shared fixtures: real services, each test's data kept apart and cleaned up.

- ``pg_url``: a fresh PostgreSQL database ``tonk_test_<random>`` on the local server with the
  arena's schema already in it (stamped at head, so arena/store/db.py's first use has nothing to do),
  dropped afterwards. It is a copy (``CREATE DATABASE ... TEMPLATE``) of ``tonk_tmpl_<random>``,
  made once per session by the product's own first-use step (arena.store.migrate.ensure_schema) and
  dropped at the session's end. ``pg_empty_url``: the same without any schema, for tests of
  migrations and of ``tonk db upgrade`` on a blank store. Nothing else on the server is touched.
- ``redis_url`` / ``redis_prefix``: the local Redis, plus a unique key prefix (used for RQ
  queue names); every key created under the prefix is deleted afterwards.
- ``sqlite_url``: a database file in the test's temporary folder.

In CI (``CI`` set) a missing service is an error, not a skip: .ci/run starts them.

And no test leaves a process running (tests/leakcheck.py): a test that does fails, and so
does the session if anything is left at its end. Nor a file in ``/tmp``: the run has a
temporary folder of its own, removed at its end (tests/scratch.py). Under pytest-xdist
(``make test``), the costliest modules start first (tests/scheduling.py).
"""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import scratch
from hypothesis import settings

# The shared helpers' asserts explain themselves as a test's do.
pytest.register_assert_rewrite("helpers")

from leakcheck import (  # noqa: E402, F401
    _no_process_left_behind,
    pytest_configure,
    pytest_sessionfinish,
    pytest_testnodedown,
)
from scheduling import pytest_collection_modifyitems  # noqa: E402, F401

# The dashboard tests' arena and apps (seeded, app, client, writable_url...), for every module.
pytest_plugins = ["helpers.dashboard_fixtures"]

# The run's own temporary folder, before anything makes a temporary file (tests/scratch.py).
scratch.enter()

# The default store lives in the user's data folder (arena/config.py): no test, nor any
# command a test starts, may write there.
_DATA_DIR = tempfile.mkdtemp(prefix="tonk-test-data-")
os.environ["TONK_DATA_DIR"] = _DATA_DIR
atexit.register(shutil.rmtree, _DATA_DIR, True)
# Nor in the machine's sandbox folder (arena/sandbox/runner.py): the sandboxes the tests start,
# and the runtime they stage, live in the session's own, removed at its end. Any user may
# pass through it (0711): bubblewrap runs as each sandbox's own uid.
_SANDBOX_DIR = tempfile.mkdtemp(prefix="tonk-test-sandbox-")
os.chmod(_SANDBOX_DIR, 0o711)
os.environ["TONK_SANDBOX_DIR"] = _SANDBOX_DIR
atexit.register(shutil.rmtree, _SANDBOX_DIR, True)
# Nor in the user's config folder (sdk/login.py: the arena `tonk login` remembers): a test or
# a command it starts finds no remembered arena but one it wrote itself.
_CONFIG_DIR = tempfile.mkdtemp(prefix="tonk-test-config-")
os.environ["TONK_CONFIG_DIR"] = _CONFIG_DIR
atexit.register(shutil.rmtree, _CONFIG_DIR, True)

# CI (.ci/run) draws the same Hypothesis examples every run, so a landing is never blocked by
# a draw nobody has seen; `make test` elsewhere explores anew each time (the default profile).
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("TONK_HYPOTHESIS_PROFILE", "default"))

from helpers.services import PG_ADMIN_URL, REDIS_TEST_URL  # noqa: E402


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (every test module, item and fixture definition: ~240,000
    objects in an xdist worker) lives until the session ends: frozen out of the cyclic
    collector's sight, each full collection during a test scans what the tests made since,
    not all of that again (0.22 s a full pass before, 0.07 s after, measured in one run)."""
    gc.collect()  # garbage is not frozen: only what survives
    gc.freeze()


@pytest.fixture(autouse=True)
def _spares_closed() -> Iterator[None]:
    """The sandboxes started ahead of a hosted bot's next match (arena/sandbox/spares.py) and
    the templates matches are forked from (arena/sandbox/template.py) are the test's: closed at
    its end, before the check that it left no process running (whose fixture, named first, is
    set up first and so torn down last)."""
    yield
    spares = sys.modules.get("arena.sandbox.spares")
    if spares is not None:
        spares.SPARES.close_all()
    template = sys.modules.get("arena.sandbox.template")
    if template is not None:
        template.TEMPLATES.close_all()


def _unavailable(what: str, exc: Exception) -> None:
    message = f"{what} is not reachable ({exc}); run scripts/services.sh"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _pg_admin() -> Any:
    """An autocommit connection to the server's maintenance database (skip when unreachable)."""
    psycopg = pytest.importorskip("psycopg")
    try:
        return psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except Exception as exc:  # any connection failure means "not available"
        _unavailable("PostgreSQL", exc)


def _pg_database_url(name: str) -> str:
    base = PG_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{base}/{name}"


def _drop_pg_database(name: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _pg_database(template: str | None) -> Iterator[str]:
    name = f"tonk_test_{uuid.uuid4().hex[:12]}"
    with _pg_admin() as admin:
        admin.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    try:
        yield _pg_database_url(name)
    finally:
        _drop_pg_database(name)


@pytest.fixture(scope="session")
def pg_template(request: pytest.FixtureRequest) -> str:
    """The name of this session's ``tonk_tmpl_<random>``: the arena's schema as a new store gets
    it on first use (arena.store.db.get_engine calls ensure_schema), for ``pg_url`` to copy. Nothing
    may stay connected to it, or the copies fail: its engine is disposed before it is used."""
    from sqlalchemy import create_engine, pool

    from arena.store.migrate import ensure_schema

    name = f"tonk_tmpl_{uuid.uuid4().hex[:12]}"
    with _pg_admin() as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    request.addfinalizer(lambda: _drop_pg_database(name))  # also after Ctrl-C or a failed setup
    engine = create_engine(_pg_database_url(name), poolclass=pool.NullPool)
    try:
        ensure_schema(engine)
    finally:
        engine.dispose()
    return name


@pytest.fixture
def pg_url(pg_template: str) -> Iterator[str]:
    yield from _pg_database(template=pg_template)


@pytest.fixture
def pg_empty_url() -> Iterator[str]:
    yield from _pg_database(template=None)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'arena.sqlite'}"


@pytest.fixture
def redis_prefix() -> str:
    return f"tonktest-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def redis_url(redis_prefix: str) -> Iterator[str]:
    redis = pytest.importorskip("redis")
    client = redis.Redis.from_url(REDIS_TEST_URL, socket_connect_timeout=3)
    try:
        client.ping()
    except Exception as exc:  # any failure means "not available"
        _unavailable("Redis", exc)
    try:
        yield REDIS_TEST_URL
    finally:
        # RQ names keys after the queue (rq:queue:<name>, rq:job:<id>...): remove ours only.
        for pattern in (f"*{redis_prefix}*",):
            for key in client.scan_iter(match=pattern, count=500):
                client.delete(key)
        # ... and lists queues and workers in two global sets: ours leave those too (a run
        # had left a dozen queue names there).
        for key in ("rq:queues", "rq:workers"):
            ours = [m for m in client.smembers(key) if redis_prefix.encode() in m]
            if ours:
                client.srem(key, *ours)
        client.close()


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The same test on SQLite and on the real local PostgreSQL."""
    from arena.store.db import dispose_engines

    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    yield url
    dispose_engines()


@pytest.fixture(params=["sqlite", "postgres"])
def empty_db_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """:func:`db_url` without the schema (as a new SQLite file is): for tests that migrate."""
    from arena.store.db import dispose_engines

    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_empty_url")
    yield url
    dispose_engines()
