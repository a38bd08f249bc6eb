"""``tonk db gc`` (arena/bots/collect.py) against real SQLite and PostgreSQL stores and real
builds: it deletes what no bot version uses (failed builds and match logs past their retention,
orphan uploads and bundles, what a killed build left on disk), keeps everything a version uses
and everything younger than its grace, lists the same with ``--dry-run``, does nothing the second
time, and never takes an upload from under a submission of the same bytes."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.archives import project, tar_gz
from helpers.arena import UNHURRIED_CHECK
from helpers.paths import ROOT
from sqlalchemy import create_engine, func, select, text, update

from arena.bots.builds import BuildFailedError, bundle_cache, fetch_bundle, record_build, run_build
from arena.bots.collect import collect, summary
from arena.bots.owners import create_owner
from arena.bots.uploaded import submit_upload
from arena.bots.uploads import inspect_archive, store_upload
from arena.config import Settings
from arena.processes import run_process
from arena.store.db import session_scope
from arena.store.models import (
    Bot,
    BotVersion,
    Build,
    Match,
    MatchLog,
    MatchSeat,
    Owner,
    Tournament,
    Upload,
    utcnow,
)  # fmt: skip

NOW = dt.datetime(2030, 6, 1, tzinfo=dt.UTC)
LONG_AGO = NOW - dt.timedelta(days=90)
BROKEN = tar_gz(project(manifest='[bot]\nentry = "elsewhere:Bot"\n'))


def settings_for(tmp_path: Path, url: str) -> Settings:
    return Settings(
        **UNHURRIED_CHECK, data_dir=str(tmp_path / "data"), database_url=url, gc_grace_s=3600,
        log_retention_days=30, log_retention_matches=2,
    )  # fmt: skip


def alice(session: object) -> Owner:
    found = session.scalars(select(Owner).where(Owner.name == "alice")).one()  # type: ignore[attr-defined]
    assert isinstance(found, Owner)
    return found


def age_everything(url: str, when: dt.datetime) -> None:
    """Make every stored row and file as old as ``when`` (a clock the test controls)."""
    with session_scope(url) as session:
        session.execute(update(Upload).values(created_at=when))
        session.execute(update(Build).values(started_at=when, finished_at=when))
        session.execute(update(MatchLog).values(created_at=when))


def touch_tree(folder: Path, when: dt.datetime) -> None:
    for path in [folder, *folder.rglob("*")]:
        os.utime(path, (when.timestamp(), when.timestamp()), follow_symlinks=False)


def add_matches(url: str, version_id: int, count: int) -> None:
    """``count`` played matches of the version, each with its log."""
    with session_scope(url) as session:
        version = session.get(BotVersion, version_id)
        assert version is not None
        tournament = Tournament(name="t", seed=1, table_sizes=[2], deals_per_table=1, hands_per_match=1)
        session.add(tournament)
        session.flush()
        for i in range(count):
            match = Match(tournament_id=tournament.id, key=f"m{i}", table_index=0, deal_index=i,
                          rotation=0, seed=i, hands=1, status="done")  # fmt: skip
            session.add(match)
            session.flush()
            seat = {"match_id": match.id, "seat": 0, "bot_id": version.bot_id}
            session.add(MatchSeat(**seat, bot_version_id=version.id))
            session.add(MatchLog(**seat, text=f"log {i}", bytes=5))


def counts(url: str) -> dict[str, int]:
    with session_scope(url) as session:
        return {
            "uploads": session.scalar(select(func.count()).select_from(Upload)) or 0,
            "archives": session.scalar(select(func.count()).where(func.length(Upload.archive) > 0)) or 0,
            "builds": session.scalar(select(func.count()).select_from(Build)) or 0,
            "logs": session.scalar(select(func.count()).select_from(MatchLog)) or 0,
        }


def test_gc_deletes_what_no_version_uses_and_keeps_the_rest(db_url: str, tmp_path: Path) -> None:
    settings = settings_for(tmp_path, db_url)
    data = Path(settings.data_dir)
    with session_scope(db_url) as session:
        create_owner(session, "alice")
    v1, v2 = tar_gz(project()), tar_gz(project({"README.md": "v2"}))
    with session_scope(db_url) as session:  # two versions of one bot: both kept
        submit_upload(session, alice(session), "tiny", v1, settings=settings, check=False)
    with session_scope(db_url) as session:
        bot = submit_upload(session, alice(session), "tiny", v2, settings=settings, check=False, update=True)
        versions = [v.id for v in bot.versions]
        builds = [v.build_id for v in bot.versions]
    with session_scope(db_url) as session, pytest.raises(BuildFailedError):  # a failed build
        submit_upload(session, alice(session), "broken", BROKEN, settings=settings)
    orphan = tar_gz(project({"README.md": "never built"}))
    with session_scope(db_url) as session:  # an upload nothing points at (a crash, an old release)
        store_upload(session, alice(session), orphan, settings)
    with session_scope(db_url) as session:  # a worker's cache: both versions' bundles
        for build_id in builds:
            assert build_id is not None
            fetch_bundle(session, build_id, bundle_cache(settings))
    add_matches(db_url, versions[0], 5)
    # What processes killed midway left: a build's folder, an unpacking, a pre-fix check bundle.
    leftovers = [
        data / "builds" / "build-killed", data / "bundles" / ".abc123-killed", data / "bundles" / ("0" * 64)
    ]
    for folder in leftovers:
        (folder / "code").mkdir(parents=True)
        (folder / "code" / "bot.py").write_bytes(b"x" * 1000)
    assert counts(db_url) == {"uploads": 4, "archives": 3, "builds": 3, "logs": 5}

    assert collect(db_url, settings) == []  # all of it is younger than the grace (an hour)
    age_everything(db_url, LONG_AGO)
    for folder in [data / "builds", data / "bundles"]:
        touch_tree(folder, LONG_AGO)
    (data / "builds" / "build-in-flight").mkdir()  # a build running now: never collected
    os.utime(data / "builds" / "build-in-flight", (NOW.timestamp(), NOW.timestamp()))

    listed = collect(db_url, settings, now=NOW, dry_run=True)
    assert counts(db_url) == {"uploads": 4, "archives": 3, "builds": 3, "logs": 5}  # listed only
    assert all(folder.exists() for folder in leftovers)
    kinds = sorted((g.kind, g.count) for g in listed)
    assert kinds == [("build", 1), ("folder", 1), ("folder", 1), ("folder", 1), ("match logs", 3),
                     ("upload", 1), ("upload", 1)]  # fmt: skip
    assert {g.name for g in listed if g.kind == "folder"} == {str(f) for f in leftovers}
    assert sum(g.bytes for g in listed if g.kind == "folder") == 3000
    assert "3 match logs" in summary(listed) and "2 uploads" in summary(listed)

    done = collect(db_url, settings, now=NOW)
    assert sorted(map(str, done)) == sorted(map(str, listed))
    assert counts(db_url) == {"uploads": 2, "archives": 2, "builds": 2, "logs": 2}
    assert not any(folder.exists() for folder in leftovers)
    assert (data / "builds" / "build-in-flight").is_dir()
    with session_scope(db_url) as session:
        kept = session.scalars(select(MatchLog.text).order_by(MatchLog.match_id)).all()
        assert kept == ["log 3", "log 4"]  # the version's last two matches, old as they are
        assert sorted(b.id for b in session.scalars(select(Build))) == sorted(builds)  # type: ignore[type-var]
        assert session.scalar(select(func.count()).select_from(Bot)) == 1
        for build_id in builds:  # every version still plays: its bundle is in the cache
            assert build_id is not None
            assert (fetch_bundle(session, build_id, bundle_cache(settings)) / "launch.json").is_file()
    assert len(list((data / "bundles").iterdir())) == 2
    assert collect(db_url, settings, now=NOW) == []  # idempotent


def test_logs_kept_for_ever_keep_failed_builds_but_not_their_bytes(sqlite_url: str, tmp_path: Path) -> None:
    settings = Settings(
        **UNHURRIED_CHECK, data_dir=str(tmp_path / "data"), database_url=sqlite_url, log_retention_days=0
    )
    with session_scope(sqlite_url) as session:
        owner, _ = create_owner(session, "alice")
        # As the code before issue #35 stored a failed build: with its archive's bytes.
        found = inspect_archive(BROKEN, settings)
        store_upload(session, owner, BROKEN, settings, found)
        record_build(session, found.sha256, run_build(BROKEN, found.manifest, settings))
    age_everything(sqlite_url, LONG_AGO)
    done = collect(sqlite_url, settings, now=NOW)
    assert [(g.kind, g.bytes) for g in done] == [("archive", len(BROKEN))]
    assert counts(sqlite_url) == {"uploads": 1, "archives": 0, "builds": 1, "logs": 0}


def test_gc_never_takes_an_upload_from_under_a_submission_of_its_bytes(db_url: str, tmp_path: Path) -> None:
    """The same bytes as an old failed build's, sent again while gc runs: on PostgreSQL gc's
    delete of the upload waits for the submission's transaction, then finds the row renewed and
    leaves it (without the renewal it failed on the new build's foreign key); on SQLite it waits
    for the one writer. Either way the version keeps its upload and build."""
    settings = settings_for(tmp_path, db_url)
    with session_scope(db_url) as session:
        create_owner(session, "alice")
    archive = tar_gz(project())
    found = inspect_archive(archive, settings)
    with session_scope(db_url) as session:  # sent once, its build failed (a bad index, say)
        store_upload(session, alice(session), archive, settings, found, keep_archive=False)
        failed = run_build(BROKEN, inspect_archive(BROKEN, settings).manifest, settings)
        record_build(session, found.sha256, failed)
    age_everything(db_url, utcnow() - dt.timedelta(days=90))  # by the clock uploads are renewed by
    built = run_build(archive, found.manifest, settings)
    assert built.ok
    results: list[object] = []
    with session_scope(db_url) as session:  # the submission's last transaction, held open
        upload, _ = store_upload(session, alice(session), archive, settings, found)  # locks the row
        build = record_build(session, upload.sha256, built)
        bot = Bot(name="tiny", owner=alice(session), address=None, hosted=None)
        bot.versions.append(BotVersion(number=1, info={}, upload_sha=upload.sha256, build_id=build.id))
        session.add(bot)
        session.flush()
        gc = threading.Thread(target=lambda: results.append(collect(db_url, settings)))
        gc.start()
        if db_url.startswith("postgresql"):  # commit only once gc waits for the upload's row
            wait_for_a_lock_wait(db_url)
    gc.join(60)
    assert not gc.is_alive() and len(results) == 1
    assert [(g.kind, g.name) for g in results[0]] in ([("build", str(build.id - 1))], [])  # type: ignore[attr-defined]
    with session_scope(db_url) as session:
        version = session.scalars(select(BotVersion)).one()
        upload_row = session.get(Upload, version.upload_sha)
        assert upload_row is not None and upload_row.archive == archive
        assert session.get(Build, version.build_id) is not None
    collect(db_url, settings)  # and once more, with nothing in flight
    assert counts(db_url) == {"uploads": 1, "archives": 1, "builds": 1, "logs": 0}


LOCK_WAITS = text(
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
)


def wait_for_a_lock_wait(url: str) -> None:
    """Until another session of this database waits for a row lock (gc's delete of the upload
    the open transaction renewed). Without the renewal gc's delete would go ahead once the
    transaction commits and fail on the new build's foreign key."""
    engine = create_engine(url)
    try:
        for _ in range(1200):
            with engine.connect() as connection:
                waiting = connection.scalar(LOCK_WAITS)
            if waiting:
                return
            time.sleep(0.05)
        raise AssertionError("gc never waited for the upload's row")
    finally:
        engine.dispose()


def test_an_upload_gc_deleted_is_stored_anew_when_sent_again(sqlite_url: str, tmp_path: Path) -> None:
    settings = settings_for(tmp_path, sqlite_url)
    archive = tar_gz(project())
    with session_scope(sqlite_url) as session:
        owner, _ = create_owner(session, "alice")
        store_upload(session, owner, archive, settings)
    age_everything(sqlite_url, LONG_AGO)
    assert [g.kind for g in collect(sqlite_url, settings, now=NOW)] == ["upload"]
    with session_scope(sqlite_url) as session:
        bot = submit_upload(session, alice(session), "tiny", archive, settings=settings, check=False)
        assert bot.versions[0].upload_sha is not None
    assert counts(sqlite_url) == {"uploads": 1, "archives": 1, "builds": 1, "logs": 0}


def test_tonk_db_gc_lists_then_deletes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {**os.environ, "TONK_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)}
    env.pop("TONK_DATABASE_URL", None)
    old = data / "builds" / "build-killed"
    old.mkdir(parents=True)
    (old / "x").write_bytes(b"x" * 10)
    os.utime(old, (0, 0))

    def tonk(*args: str) -> subprocess.CompletedProcess[str]:
        return run_process([sys.executable, "-m", "sdk.cli", "db", "gc", *args], env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    listed = tonk("--dry-run")
    assert listed.returncode == 0, listed.stderr
    assert f"would delete folder {old} (left by a build or check that never ended): 10 bytes" in listed.stdout
    assert "would delete 1 folder: 10 bytes" in listed.stdout and old.exists()
    deleted = tonk()
    assert deleted.returncode == 0 and "deleted 1 folder: 10 bytes" in deleted.stdout and not old.exists()
    assert "deleted nothing: 0 bytes" in tonk().stdout
    env["TONK_LOG_RETENTION_DAYS"] = "-3"
    bad = tonk()
    assert bad.returncode != 0 and "TONK_LOG_RETENTION_DAYS must be an integer from 0 to 36500" in bad.stderr
