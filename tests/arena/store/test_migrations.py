"""Alembic migrations (arena/migrations, arena/store/migrate.py) on SQLite and PostgreSQL:

- the head revision is exactly arena/store/models.py (what ``alembic check`` verifies);
- a database at the initial revision, full of data, is upgraded to head with its data kept;
- a database made by ``create_all`` before migrations existed is recognised and stamped;
- ``tonk db upgrade`` / ``tonk db current``, and a wheel that ships the migrations.
"""

from __future__ import annotations

import datetime as dt
import logging
import shutil
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from helpers.paths import ROOT
from sqlalchemy import Engine, MetaData, create_engine, insert, inspect, pool, select, text
from sqlalchemy.orm import Session

from arena.processes import run_process
from arena.store import migrate as m
from arena.store.models import (
    Base,
    Bot,
    BotVersion,
    FaultRecord,
    Match,
    MatchSeat,
    Owner,
    RatingSnapshot,
    Replay,
    Tournament,
    TournamentEntry,
)
from sdk.cli import main as tonk

INITIAL = "0001"
BIG_SEED = 2**64 - 5  # above 2**63: stored as a negative number


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'arena.sqlite'}"
    url: str = request.getfixturevalue("pg_empty_url")
    return url


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    engine = create_engine(db_url, poolclass=pool.NullPool)
    yield engine
    engine.dispose()


def revisions() -> list[str]:
    script = ScriptDirectory.from_config(m.alembic_config())
    return [r.revision for r in reversed(list(script.walk_revisions()))]


def differences(engine: Engine) -> list[object]:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))


def test_history_is_linear_and_starts_at_the_initial_revision() -> None:
    script = ScriptDirectory.from_config(m.alembic_config())
    assert len(script.get_heads()) == 1, "branched history: merge the heads"
    assert revisions()[0] == INITIAL
    assert m.head_revision() == revisions()[-1]


def test_head_is_exactly_the_models(db_url: str, engine: Engine) -> None:
    assert m.migrate(db_url) == m.head_revision()
    assert differences(engine) == []
    # The same check as `alembic check` from a checkout, through the packaged environment.
    with engine.begin() as connection:
        config = m.alembic_config(db_url)
        config.attributes["connection"] = connection
        command.check(config)


def fill_initial_schema(engine: Engine) -> None:
    """One of everything, written with plain SQL against the initial revision's tables (not
    the current models, which may have moved on)."""
    meta = MetaData()
    meta.reflect(engine)
    t = meta.tables
    now = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    with engine.begin() as c:
        c.execute(insert(t["owners"]), [
            {"id": 1, "name": "house", "token_hash": "a" * 64, "is_operator": True, "created_at": now},
            {"id": 2, "name": "alice", "token_hash": "b" * 64, "is_operator": False, "created_at": now},
        ])  # fmt: skip
        c.execute(insert(t["bots"]), [
            {"id": 1, "name": "random", "owner_id": 1, "address": None,
             "hosted": "bots.random_bot:RandomBot", "status": "active", "created_at": now},
            {"id": 2, "name": "lowball", "owner_id": 2, "address": "bots.example.org:50051",
             "hosted": None, "status": "retired", "created_at": now},
        ])  # fmt: skip
        c.execute(insert(t["bot_versions"]), [
            {"id": 1, "bot_id": 1, "number": 1, "address": None, "hosted": "bots.random_bot:RandomBot",
             "info": {"name": "random"}, "created_at": now},
            {"id": 2, "bot_id": 2, "number": 1, "address": "bots.example.org:50051", "hosted": None,
             "info": {"name": "lowball", "language": "go"}, "created_at": now},
        ])  # fmt: skip
        c.execute(insert(t["tournaments"]).values(
            id=1, name="old cup", seed=BIG_SEED - 2**64, status="finished", table_sizes=[2],
            matches_per_table=1, hands_per_match=3, rules={"turn_cap": 200}, config={"max_faults": 3},
            created_at=now, finished_at=now,
        ))  # fmt: skip
        c.execute(insert(t["tournament_entries"]), [
            {"id": 1, "tournament_id": 1, "bot_id": 1, "bot_version_id": 1},
            {"id": 2, "tournament_id": 1, "bot_id": 2, "bot_version_id": 2},
        ])  # fmt: skip
        c.execute(insert(t["matches"]).values(
            id=1, tournament_id=1, key="t0/d0/r0", table_index=0, deal_index=0, rotation=0,
            seed=BIG_SEED - 2**64, hands=3, status="done", attempts=1, worker="w1", label="m-1",
            heartbeat_at=now, hands_played=3, decisions=40, faults=1, forfeited_seat=None,
            error=None, duration_ms=120, created_at=now, started_at=now, finished_at=now,
        ))  # fmt: skip
        c.execute(insert(t["match_seats"]), [
            {"id": 1, "match_id": 1, "seat": 0, "bot_id": 1, "bot_version_id": 1, "score": 4,
             "hands_won": 2, "decisions": 20, "faults": 0, "latency_us_total": 2**40, "latency_us_max": 900},
            {"id": 2, "match_id": 1, "seat": 1, "bot_id": 2, "bot_version_id": 2, "score": -4,
             "hands_won": 1, "decisions": 20, "faults": 1, "latency_us_total": 5, "latency_us_max": 3},
        ])  # fmt: skip
        c.execute(insert(t["replays"]).values(match_id=1, format="tonk-replay/1+zlib", data=b"\x00\x01\xff"))
        c.execute(insert(t["faults"]).values(
            id=1, match_id=1, seat=1, bot_id=2, hand_index=2, decision=7, kind="timeout", reason="late"
        ))  # fmt: skip
        c.execute(insert(t["rating_snapshots"]).values(
            id=1, tournament_id=1, bot_id=2, elo=1512.5, low=1400.0, high=1625.0, matches=1,
            provisional=True, created_at=now,
        ))  # fmt: skip
        if engine.dialect.name == "postgresql":  # ids were given: move the sequences past them
            for table in ("owners", "bots", "bot_versions", "tournaments", "matches", "match_seats"):
                c.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), 100)"))


def check_data_kept(engine: Engine) -> None:
    """Everything fill_initial_schema wrote, read back through today's models."""
    with Session(engine) as s:
        owners = {o.name: o for o in s.scalars(select(Owner))}
        assert set(owners) == {"house", "alice"} and owners["house"].is_operator
        bots = {b.name: b for b in s.scalars(select(Bot))}
        assert bots["random"].hosted == "bots.random_bot:RandomBot"
        assert (bots["lowball"].status, bots["lowball"].owner.name) == ("retired", "alice")
        assert bots["lowball"].versions[0].info == {"name": "lowball", "language": "go"}
        tournament = s.get(Tournament, 1)
        assert tournament is not None
        assert (tournament.name, tournament.seed, tournament.table_sizes) == ("old cup", BIG_SEED, [2])
        assert tournament.deals_per_table == 1  # the column renamed (0007) kept its value
        assert tournament.finished_at is not None and tournament.finished_at.year == 2026
        assert len(s.scalars(select(TournamentEntry)).all()) == 2
        match = s.get(Match, 1)
        assert match is not None
        assert (match.seed, match.public_id, match.status, match.faults) == (BIG_SEED, "m-1", "done", 1)
        seats = s.scalars(select(MatchSeat).order_by(MatchSeat.seat)).all()
        assert [x.score for x in seats] == [4, -4] and seats[0].latency_us_total == 2**40
        replay = s.get(Replay, 1)
        assert replay is not None and replay.data == b"\x00\x01\xff"
        fault = s.scalars(select(FaultRecord)).one()
        assert (fault.kind, fault.reason, fault.decision) == ("timeout", "late", 7)
        snapshot = s.scalars(select(RatingSnapshot)).one()
        assert (snapshot.elo, snapshot.provisional) == (1512.5, True)
        # New rows get fresh ids after the old ones.
        owner = Owner(name="bob", token_hash="c" * 64)
        s.add(owner)
        s.flush()
        s.add(Bot(name="newbie", owner=owner, address="h:1", versions=[BotVersion(number=1, info={})]))
        s.commit()
        assert owner.id > 2


def test_upgrade_from_the_initial_revision_keeps_every_row(db_url: str, engine: Engine) -> None:
    assert m.migrate(db_url, INITIAL) == INITIAL
    fill_initial_schema(engine)
    done = m.upgrade(db_url)
    assert (done.before, done.recognised, done.after) == (INITIAL, None, m.head_revision())
    check_data_kept(engine)
    assert differences(engine) == []
    assert m.migrate(db_url) == m.head_revision()  # again: nothing to do


def test_every_revision_downgrades_and_upgrades_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'roundtrip.sqlite'}"
    m.migrate(url)
    config = m.alembic_config(url)
    command.downgrade(config, "base")
    assert m.current_revision(url) is None
    assert m.migrate(url) == m.head_revision()


def test_a_database_made_by_create_all_is_recognised_and_stamped(db_url: str, engine: Engine) -> None:
    # What arena/store/db.py did before migrations: create_all, no revision recorded.
    Base.metadata.create_all(engine)
    with Session(engine) as s:
        owner = Owner(name="carol", token_hash="d" * 64)
        s.add(Bot(name="keeper", owner=owner, address="h:2", versions=[BotVersion(number=1, info={})]))
        s.commit()
    assert m.current_revision(db_url) is None
    done = m.upgrade(db_url)
    assert (done.before, done.recognised, done.after) == (None, m.head_revision(), m.head_revision())
    with Session(engine) as s:
        assert s.scalars(select(Bot.name)).all() == ["keeper"]
    assert differences(engine) == []


def test_a_database_at_the_initial_schema_without_a_revision_is_stamped_there(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    m.migrate(url, INITIAL)
    engine = create_engine(url, poolclass=pool.NullPool)
    fill_initial_schema(engine)
    with engine.begin() as c:
        c.execute(text("DROP TABLE alembic_version"))
    with engine.connect() as c:
        assert m.detect_revision(c) == INITIAL
    assert m.upgrade(url).recognised == INITIAL
    check_data_kept(engine)
    engine.dispose()


def test_a_schema_matching_no_revision_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'odd.sqlite'}"
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.begin() as c:
        c.execute(text("CREATE TABLE owners (id INTEGER PRIMARY KEY, nickname TEXT)"))
    with pytest.raises(m.MigrationError, match="matches no known schema revision"):
        m.migrate(url)
    assert m.current_revision(url) is None  # nothing was stamped
    engine.dispose()


def test_other_tables_in_the_database_are_left_alone(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.begin() as c:
        c.execute(text("CREATE TABLE someone_elses (x INTEGER)"))
        c.execute(text("INSERT INTO someone_elses VALUES (7)"))
    assert m.migrate(url) == m.head_revision()
    with engine.connect() as c:
        assert c.execute(text("SELECT x FROM someone_elses")).scalar() == 7
    engine.dispose()


def test_ensure_schema_creates_and_stamps_a_fresh_database(
    db_url: str, engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    m.ensure_schema(engine)
    assert m.current_revision(db_url) == m.head_revision()
    assert differences(engine) == []
    m.ensure_schema(engine)  # second use: nothing to do, nothing said
    assert "tonk db upgrade" not in caplog.text
    with engine.begin() as c:
        c.execute(text("DROP TABLE alembic_version"))
    with caplog.at_level(logging.WARNING, logger="arena.store.migrate"):
        m.ensure_schema(engine)  # tables but no revision: left alone, with a warning
    assert "tonk db upgrade" in caplog.text
    assert m.current_revision(db_url) is None
    assert m.upgrade(db_url).recognised == m.head_revision()


@pytest.mark.postgres
def test_the_postgresql_fixtures_are_a_set_up_store_and_a_blank_one(
    pg_url: str, pg_empty_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """tests/conftest.py: ``pg_url`` copies a template made by ensure_schema, so arena/store/db.py's
    first use finds it at head with nothing to do; ``pg_empty_url`` has no tables at all."""
    engine, empty = (create_engine(url, poolclass=pool.NullPool) for url in (pg_url, pg_empty_url))
    try:
        assert m.current_revision(pg_url) == m.head_revision()
        assert differences(engine) == []
        with caplog.at_level(logging.WARNING, logger="arena.store.migrate"):
            m.ensure_schema(engine)
        assert "tonk db upgrade" not in caplog.text
        with empty.connect() as c:
            assert inspect(c).get_table_names() == []
    finally:
        engine.dispose()
        empty.dispose()


def test_the_head_constant_is_the_newest_revision() -> None:
    from arena.store.migrations import HEAD

    assert m.head_revision() == HEAD, "a new revision: update HEAD in arena/store/migrations/__init__.py"


def test_ensure_schema_on_a_set_up_database_does_not_import_alembic(tmp_path: Path) -> None:
    """Every worker and dashboard process calls it: it must stay cheap."""
    url = f"sqlite:///{tmp_path / 'ready.sqlite'}"
    m.migrate(url)
    code = (
        "import sys; from sqlalchemy import create_engine; from arena.store.migrate import ensure_schema; "
        f"ensure_schema(create_engine({url!r})); "
        "print(sorted(n for n in sys.modules if n.startswith('alembic')))"
    )
    result = run_process([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    assert "tonk db upgrade" not in result.stderr  # at head: no warning


def test_tonk_db_upgrade_and_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'sub' / 'cli.sqlite'}"  # the folder is created
    monkeypatch.setenv("TONK_DATABASE_URL", url)
    assert tonk(["db", "current"]) == 1
    assert "run `tonk db upgrade`" in capsys.readouterr().out
    assert tonk(["db", "upgrade"]) == 0
    assert f"upgraded from an empty database to revision {m.head_revision()}" in capsys.readouterr().out
    assert tonk(["db", "upgrade"]) == 0
    assert "(up to date)" in capsys.readouterr().out
    assert tonk(["db", "current"]) == 0
    assert capsys.readouterr().out.strip() == f"{m.head_revision()} (head)"


def test_tonk_db_upgrade_hides_the_password(
    pg_empty_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = pg_empty_url.replace("postgres@", "postgres:s3cret-pw@", 1)  # trust auth ignores it
    monkeypatch.setenv("TONK_DATABASE_URL", url)
    assert tonk(["db", "upgrade"]) == 0
    out = capsys.readouterr().out
    assert "s3cret-pw" not in out and "***" in out


@pytest.mark.slow
def test_the_wheel_ships_the_migrations(tmp_path: Path) -> None:
    """An installed wheel has env.py, the template and every revision inside arena/, which
    is where alembic_config() points (a package resource, not a path in a checkout)."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules")
    for name in ("sdk", "arena", "dashboard", "bots"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    run_process(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
         str(tmp_path / "dist"), str(src)],
        check=True, capture_output=True, timeout=240,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("tonk_arena-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    migrations = "arena/store/migrations"
    wanted = {"arena/store/migrate.py", f"{migrations}/env.py", f"{migrations}/script.py.mako"}
    wanted |= {f"{migrations}/versions/{p.name}" for p in (ROOT / migrations / "versions").glob("*.py")}
    assert wanted <= names, sorted(wanted - names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text_ = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "db = arena.commands.db:register" in text_ and "owners = arena.commands.owners:register" in text_
