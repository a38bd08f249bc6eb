"""Fixtures of the dashboard tests: an arena with real matches, and apps serving it.

``seeded`` builds a store the way the arena does (owners, hosted bots, tournaments created by
arena.tournaments.lifecycle, every match played by arena.runtime.jobs.play_match_job under the real referee),
once per test session and per database (SQLite and PostgreSQL); read-only tests share it.
Tests that write use ``writable_url``, a fresh empty database of each kind.

Loaded for every test module by ``pytest_plugins`` in tests/conftest.py.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sdk.actions import DRAW_STOCK, DROP, Action
from sdk.bot import Bot, MatchSummary
from sdk.observation import Observation

# Flask, SQLAlchemy and the arena are imported where they are used: tests/conftest.py loads this
# plugin for every session, and one of only the SDK's tests should not pay for importing them.
if TYPE_CHECKING:
    from flask import Flask
    from flask.testing import FlaskClient

PG_ADMIN_URL = os.environ.get("TONK_TEST_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
OPERATOR_TOKEN = "operator-secret-for-tests"


class LowBot(Bot):
    """Plays on purpose, simply: goes down at 9 or less, lays down and lays off whatever it
    can, discards its highest card. Enough for replays with every kind of action."""

    name = "lowball"
    version = "1.0.0"
    author = "dashboard tests"

    def act(self, obs: Observation) -> Action | int:
        if obs.phase == "start":
            if obs.can_drop() and obs.hand_value <= 9:
                return DROP
            return DRAW_STOCK if DRAW_STOCK in obs.legal_actions else len(obs.legal_actions) - 1
        melds = obs.melds_available()
        if melds:
            return melds[0]
        layoffs = obs.layoffs_available()
        if layoffs:
            return layoffs[0]
        return max(obs.discards_available(), key=lambda d: (d.card.value, d.card.index))


class FlakyBot(LowBot):
    """LowBot that crashes on its fourth decision of every third hand: faults to show."""

    name = "flaky"

    def act(self, obs: Observation) -> Action | int:
        if obs.hand_index % 3 == 1 and obs.turn >= 3:
            raise RuntimeError("flaky bot fell over")
        return super().act(obs)


class SlowNoticeBot(LowBot):
    """LowBot that crashes in hands 1 and 2 and takes its time over EndMatch: charged faults
    and uncharged slow notices from one bot (in a tournament with a short lifecycle deadline)."""

    name = "dawdler"
    notice_s = 0.05

    def act(self, obs: Observation) -> Action | int:
        if obs.hand_index in (1, 2):
            raise RuntimeError("dawdler fell over")
        return super().act(obs)

    def on_match_end(self, summary: MatchSummary) -> None:
        time.sleep(self.notice_s)


@dataclass
class Seeded:
    """What ``seed_arena`` made, for tests to look things up by."""

    url: str
    tournaments: dict[str, int] = field(default_factory=dict)
    bots: list[str] = field(default_factory=list)
    done_match: int = 0
    fault_match: int = 0
    pending_match: int = 0
    running_match: int = 0
    failed_match: int = 0
    alice_token: str = ""
    bob_token: str = ""


def _play_all(url: str, tournament_id: int, limit: int | None = None) -> None:
    from sqlalchemy import select

    from arena.runtime.jobs import play_match_job
    from arena.store.db import session_scope
    from arena.store.models import Match

    with session_scope(url) as session:
        ids = list(
            session.scalars(
                select(Match.id).where(Match.tournament_id == tournament_id).order_by(Match.id)
            )
        )
    for match_id in ids[:limit]:
        assert play_match_job(match_id, url) in ("done", "already-done")


def seed_arena(url: str) -> Seeded:
    from sqlalchemy import select, update

    from arena.bots.owners import create_owner, get_or_create_operator
    from arena.bots.registry import host_bot, register_bot
    from arena.config import Settings
    from arena.runtime.jobs import play_match_job
    from arena.store.db import session_scope
    from arena.store.models import FaultRecord, Match, MatchSeat
    from arena.tournaments.lifecycle import create_tournament, start_tournament
    from helpers.arena import fix_deal_secret

    settings = Settings(database_url=url)
    out = Seeded(url)
    with session_scope(url) as session:
        fix_deal_secret(session)  # the same cards in every run and store
        house = get_or_create_operator(session, "house")
        alice, out.alice_token = create_owner(session, "alice")
        _bob, out.bob_token = create_owner(session, "bob")
        random = host_bot(session, house, "random", "bots.random_bot:RandomBot", check=False)
        low = host_bot(session, house, "lowball", "helpers.dashboard_fixtures:LowBot", check=False)
        flaky = host_bot(session, house, "flaky", "helpers.dashboard_fixtures:FlakyBot", check=False)
        croaker = register_bot(
            session, alice, "croaker", "127.0.0.1:50999",
            settings=Settings(allowed_bot_hosts=("127.0.0.1",)), check=False,
        )
        out.bots = ["random", "lowball", "flaky", "croaker"]
        ids = {b.name: b.id for b in (random, low, flaky, croaker)}
        spring = create_tournament(
            session, name="Spring Open", bot_ids=[ids["random"], ids["lowball"], ids["flaky"]],
            table_sizes=[2, 3], deals_per_table=1, hands_per_match=6, seed=20260401, settings=settings,
        )
        winter = create_tournament(
            session, name="Winter Classic", bot_ids=[ids["random"], ids["lowball"], ids["flaky"]],
            table_sizes=[3], deals_per_table=1, hands_per_match=5, seed=20261201, settings=settings,
        )
        summer = create_tournament(
            session, name="Summer Cup", bot_ids=[ids["random"], ids["lowball"], ids["croaker"]],
            table_sizes=[2], deals_per_table=1, hands_per_match=4, seed=20260701, settings=settings,
        )
        out.tournaments = {"spring": spring.id, "winter": winter.id, "summer": summer.id}
        for t in (spring, winter, summer):
            start_tournament(session, t.id)
    _play_all(url, out.tournaments["spring"])
    _play_all(url, out.tournaments["winter"])
    with session_scope(url) as session:
        summer_ids = list(
            session.scalars(
                select(Match.id).where(Match.tournament_id == out.tournaments["summer"]).order_by(Match.id)
            )
        )
        # Summer Cup is under way: one of its matches without croaker is played, one is being
        # played, one failed, the rest wait (croaker's address serves nothing).
        seats = session.execute(
            select(MatchSeat.match_id, MatchSeat.bot_id).where(MatchSeat.match_id.in_(summer_ids))
        ).all()
        with_croaker = {m for m, b in seats if b == ids["croaker"]}
        playable = [m for m in summer_ids if m not in with_croaker]
    assert play_match_job(playable[0], url) == "done"
    waiting = [m for m in summer_ids if m != playable[0]]
    out.running_match, out.failed_match, out.pending_match = waiting[0], waiting[1], waiting[2]
    with session_scope(url) as session:
        session.execute(update(Match).where(Match.id == out.running_match).values(status="running"))
        session.execute(
            update(Match).where(Match.id == out.failed_match).values(status="failed", error="worker lost")
        )
        out.done_match = session.scalars(
            select(Match.id)
            .where(Match.tournament_id == out.tournaments["spring"])
            .where(Match.status == "done", Match.faults == 0)
            .order_by(Match.id)
        ).first() or 0
        out.fault_match = session.scalars(select(FaultRecord.match_id).order_by(FaultRecord.id)).first() or 0
    assert out.done_match and out.fault_match
    return out


def _create_pg_database() -> tuple[str, str]:
    psycopg = pytest.importorskip("psycopg")
    name = f"tonk_test_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except Exception as exc:
        message = f"PostgreSQL is not reachable ({exc}); run scripts/services.sh"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    return name, f"{base}/{name}"


def _drop_pg_database(name: str) -> None:
    import psycopg

    from arena.store.db import dispose_engines

    dispose_engines()
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


_sqlite_seeded: list[Seeded] = []


def _seeded_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    # One SQLite arena per session, shared by the parametrized fixture and the browser tests.
    if not _sqlite_seeded:
        path: Path = tmp_path_factory.mktemp("dashboard") / "arena.sqlite"
        _sqlite_seeded.append(seed_arena(f"sqlite:///{path}"))
    return _sqlite_seeded[0]


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def seeded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """The seeded arena, once per session and database kind. Read-only."""
    if request.param == "sqlite":
        yield _seeded_sqlite(tmp_path_factory)
        return
    name, url = _create_pg_database()
    try:
        yield seed_arena(url)
    finally:
        _drop_pg_database(name)


@pytest.fixture(scope="session")
def seeded_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    """The seeded arena on SQLite only (browser tests). Read-only."""
    return _seeded_sqlite(tmp_path_factory)


def make_app(url: str, **config: Any) -> Flask:
    from dashboard import create_app

    return create_app({
        "TESTING": True,
        "DATABASE_URL": url,
        "OPERATOR_TOKEN": OPERATOR_TOKEN,
        "BOT_CHECKS": False,
        "CACHE_REFRESH_SECONDS": 0,
        "CACHE_STALE_OK": False,
        "PROGRESS_POLL_MS": 300,
        **config,
    })


@pytest.fixture(scope="session")
def app_factory() -> Callable[..., Flask]:
    """``make_app`` for test modules (importing this module directly would bypass pytest's
    assertion rewriting of it)."""
    return make_app


@pytest.fixture(scope="session")
def app(seeded: Seeded) -> Flask:
    """An app on the seeded arena, made once per database (building one takes ~0.1 s: werkzeug
    compiles every route). Tests must not change its config."""
    return make_app(seeded.url)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An empty database of each kind shared by one test module (for tests whose writes are
    all refused, so they cannot disturb each other)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('module') / 'arena.sqlite'}"
        return
    name, url = _create_pg_database()
    try:
        yield url
    finally:
        _drop_pg_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def writable_url(request: pytest.FixtureRequest) -> str:
    """A fresh, empty database of each kind (the shared conftest fixtures)."""
    url: str = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    return url


def live_arena(url: str) -> tuple[int, list[int]]:
    """A fresh store with a started 3-bot tournament of 6 matches: its id and match ids."""
    from sqlalchemy import select

    from arena.bots.owners import get_or_create_operator
    from arena.bots.registry import host_bot
    from arena.config import Settings
    from arena.store.db import session_scope
    from arena.store.models import Match
    from arena.tournaments.lifecycle import create_tournament, start_tournament

    with session_scope(url) as session:
        house = get_or_create_operator(session, "house")
        bots = (("random", "bots.random_bot:RandomBot"), ("lowball", "helpers.dashboard_fixtures:LowBot"),
                ("greedy", "bots.greedy:GreedyBot"))
        ids = [host_bot(session, house, name, target, check=False).id for name, target in bots]
        t = create_tournament(
            session, name="Live Cup", bot_ids=ids, table_sizes=[2], deals_per_table=1, hands_per_match=6,
            seed=20261111, settings=Settings(database_url=url),
        )
        start_tournament(session, t.id)
        query = select(Match.id).where(Match.tournament_id == t.id).order_by(Match.id)
        matches = list(session.scalars(query))
    return t.id, matches
