"""Builds (arena/bots/builds.py): an upload built once into a bundle, with real pip against a
real (local) index, an index that never answers (the build is killed at its time limit), the
dependency rules, and fetching a bundle into a worker's cache with its SHA-256 checked."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.archives import project, tar_gz
from sqlalchemy import func, select, update

from arena.bots.builds import (
    BuildTimeLimitError,
    BundleCorruptError,
    DependencyNotAllowedError,
    build_upload,
    fetch_bundle,
    refusal,
)
from arena.bots.owners import create_owner
from arena.bots.uploads import store_upload
from arena.config import Settings
from arena.processes import descendants
from arena.store.db import session_scope
from arena.store.models import Build, Owner

LOCAL_INDEX = Path("/opt/pypi/simple")
WITH_DEPS = '[bot]\nentry = "tiny_bot:TinyBot"\ndependencies = ["six==1.17.0"]\n'


def settings_for(tmp_path: Path, **changes: object) -> Settings:
    return Settings(data_dir=str(tmp_path / "data"), **changes)  # type: ignore[arg-type]


def build(url: str, archive: bytes, settings: Settings) -> Build:
    with session_scope(url) as session:
        owner = session.scalars(select(Owner)).first() or create_owner(session, "alice")[0]
        upload, _ = store_upload(session, owner, archive, settings)
        made = build_upload(session, upload, settings)
        session.expunge(made)
    return made


def test_an_upload_is_built_once_into_a_bundle(db_url: str, tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    first = build(db_url, tar_gz(project()), settings)
    assert first.status == "ok", first.log
    assert "no dependencies to install" in first.log
    again = build(db_url, tar_gz(project()), settings)
    assert again.id == first.id
    with session_scope(db_url) as session:
        assert session.scalar(select(func.count()).select_from(Build)) == 1
        bundle = fetch_bundle(session, first.id, tmp_path / "cache")
    assert sorted(p.name for p in bundle.iterdir()) == ["code", "deps", "launch.json"]
    assert (bundle / "code" / "tiny_bot.py").read_text().startswith("from sdk.bot import Bot")
    assert json.loads((bundle / "launch.json").read_text())["entry"] == "tiny_bot:TinyBot"
    assert not list((tmp_path / "data" / "builds").iterdir())  # the work folder is gone


def test_a_missing_entry_module_fails_the_build_with_a_readable_log(sqlite_url: str, tmp_path: Path) -> None:
    manifest = '[bot]\nentry = "night_owl:NightOwlBot"\n'
    failed = build(sqlite_url, tar_gz(project(manifest=manifest)), settings_for(tmp_path))
    assert failed.status == "failed" and failed.artifact is None
    refused = refusal(failed)
    assert "the upload has no night_owl.py" in refused.message and refused.details == {"build": failed.id}


@pytest.mark.parametrize(
    ("changes", "quoted"),
    [
        ({}, "this arena installs no dependencies, and the manifest declares 'six==1.17.0'"),
        ({"build_index_url": "file:///nowhere", "build_allowed_packages": ("numpy",)},
         "'six==1.17.0' is not one this arena installs (allowed: numpy)"),
    ],
)  # fmt: skip
def test_a_dependency_not_allowed_is_refused_before_anything_is_built(
    sqlite_url: str, tmp_path: Path, changes: dict[str, object], quoted: str
) -> None:
    with pytest.raises(DependencyNotAllowedError) as refused:
        build(sqlite_url, tar_gz(project(manifest=WITH_DEPS)), settings_for(tmp_path, **changes))
    assert quoted in refused.value.message
    with session_scope(sqlite_url) as session:
        assert session.scalar(select(func.count()).select_from(Build)) == 0
    assert not (tmp_path / "data" / "builds").exists()


@pytest.mark.skipif(not (LOCAL_INDEX / "six").is_dir(), reason="no local package index on this machine")
def test_declared_dependencies_come_from_the_operators_index_only(sqlite_url: str, tmp_path: Path) -> None:
    settings = settings_for(tmp_path, build_index_url=LOCAL_INDEX.as_uri(), build_allowed_packages=("Six",))
    made = build(sqlite_url, tar_gz(project(manifest=WITH_DEPS)), settings)
    assert made.status == "ok", made.log
    with session_scope(sqlite_url) as session:
        bundle = fetch_bundle(session, made.id, tmp_path / "cache")
    assert (bundle / "deps" / "six.py").is_file()


@pytest.fixture
def silent_index() -> Iterator[str]:
    """An index that accepts connections and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/simple"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_a_build_that_never_ends_is_killed_and_refused(
    sqlite_url: str, tmp_path: Path, silent_index: str
) -> None:
    settings = settings_for(tmp_path, build_index_url=silent_index, build_time_limit_s=3)
    failed = build(sqlite_url, tar_gz(project(manifest=WITH_DEPS)), settings)
    assert failed.status == "failed"
    assert "killed: the build time limit is 3 s (TONK_BUILD_TIME_LIMIT_S)" in failed.log
    refused = refusal(failed)
    assert isinstance(refused, BuildTimeLimitError) and "build time limit" in refused.message
    assert not [p for p in descendants(os.getpid()) if is_pip(p.command())]


def is_pip(command: str) -> bool:
    """The build's pip (arena/bots/builds.py runs ``python -m pip``), by its words: a worker of a
    parallel run may also be the parent of a browser whose flags contain "pip"."""
    return " -m pip " in f" {command} "


def test_fetch_bundle_caches_by_sha_and_checks_the_stored_bytes(sqlite_url: str, tmp_path: Path) -> None:
    made = build(sqlite_url, tar_gz(project()), settings_for(tmp_path))
    cache = tmp_path / "cache"
    with session_scope(sqlite_url) as session:
        bundle = fetch_bundle(session, made.upload_sha, cache)
        assert bundle == cache / str(made.artifact_sha256)
        assert fetch_bundle(session, str(made.artifact_sha256), cache) == bundle
        session.execute(update(Build).values(artifact=b"tampered"))
    with session_scope(sqlite_url) as session:
        assert fetch_bundle(session, made.id, cache) == bundle  # cached: the store is not read again
    shutil.rmtree(cache)
    with (
        session_scope(sqlite_url) as session,
        pytest.raises(BundleCorruptError, match="does not match its SHA-256"),
    ):
        fetch_bundle(session, made.id, cache)
    assert not cache.exists() or not list(cache.iterdir())  # nothing half-written left in the cache


def test_workers_fetching_one_bundle_at_once_share_one_whole_copy(db_url: str, tmp_path: Path) -> None:
    made = build(db_url, tar_gz(project()), settings_for(tmp_path))
    cache = tmp_path / "cache"
    got: list[Path] = []

    def fetch() -> None:
        with session_scope(db_url) as session:
            got.append(fetch_bundle(session, made.id, cache))

    threads = [threading.Thread(target=fetch) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 6 and len(set(got)) == 1
    assert sorted(p.name for p in cache.iterdir()) == [str(made.artifact_sha256)]  # no temporary left
    assert (got[0] / "code" / "tiny_bot.py").is_file() and (got[0] / "launch.json").is_file()
