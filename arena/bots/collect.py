"""``tonk db gc``: delete the uploads, builds, bundles and logs no bot version uses any more.

What is kept, and why (docs/operator-guide.md, "Collecting old uploads, builds and logs"):

- every upload and build a bot version points at, current or not: versions are never deleted
  (their matches, replays and ratings stay), and a paused tournament may still play an old one;
- anything younger than ``Settings.gc_grace_s``: an upload being built and checked stores
  nothing until it is done, and when it is, it renews its upload's ``created_at`` in a
  statement that locks the row (arena/bots/uploads.store_upload), so a gc racing it either
  deleted the row first (the upload then stores it anew) or finds it young and keeps it;
- the logs of failed builds and what uploaded bots printed in their matches (``match_logs``)
  for ``log_retention_days`` days, and each bot version's last ``log_retention_matches``
  matches' logs whatever their age.

Deleted, in one transaction: failed builds past the log retention, ok builds no version uses,
the bytes of uploads no version uses (the row stays while a failed build's log points at it),
uploads nothing points at, and match logs past their retention. Then, in this machine's data
dir (every machine that builds or plays runs it for its own): what a killed build or check left
in ``builds/``, and bundles in ``bundles/`` (the workers' cache) whose build the store no
longer has. Every deletion re-checks its condition in its own statement, so running it twice,
or on two machines at once, deletes nothing twice; ``dry_run`` only lists.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from sqlalchemy import ColumnElement, and_, delete, false, func, or_, select, update
from sqlalchemy.orm import Session

from arena.bots.builds import OK, bundle_cache
from arena.config import Settings
from arena.store.db import session_scope
from arena.store.models import BotVersion, Build, MatchLog, MatchSeat, Upload, utcnow

#: Rows deleted per statement (SQLite bounds the parameters of one).
CHUNK: Final = 500


@dataclass(frozen=True)
class Garbage:
    """One thing gc deletes (or would): its kind, what names it, its bytes, and why."""

    kind: str  # upload, archive, build, match logs, folder
    name: str
    bytes: int
    why: str
    count: int = 1  # match logs: how many
    bundle: str | None = None  # a build's: its artifact's SHA-256


def collect(
    database_url: str, settings: Settings, *, dry_run: bool = False, now: dt.datetime | None = None
) -> list[Garbage]:
    """Delete (unless ``dry_run``) what no bot version uses any more, in the store and in this
    machine's data dir; returns what it deleted (or would)."""
    now = now or utcnow()
    with session_scope(database_url) as session:
        found = collect_store(session, settings, now, dry_run=dry_run)
    with session_scope(database_url) as session:
        shas = session.scalars(select(Build.artifact_sha256).where(Build.artifact_sha256.is_not(None)))
        kept = {sha for sha in shas if sha is not None}
    if dry_run:  # the bundles of the builds it would delete go too
        kept -= {g.bundle for g in found if g.bundle is not None}
    return found + collect_files(settings, kept, now, dry_run=dry_run)


def collect_store(session: Session, settings: Settings, now: dt.datetime, *, dry_run: bool) -> list[Garbage]:
    """The store's part of :func:`collect`, in ``session`` (the caller commits)."""
    grace = now - dt.timedelta(seconds=settings.gc_grace_s)
    days = settings.log_retention_days
    logs_before = now - dt.timedelta(days=days) if days else None
    found: list[Garbage] = []

    used_build = select(BotVersion.id).where(BotVersion.build_id == Build.id).exists()
    upload_young = select(Upload.sha256).where(Upload.sha256 == Build.upload_sha, Upload.created_at >= grace)
    failed_old: ColumnElement[bool] = (
        and_(Build.status != OK, func.coalesce(Build.finished_at, Build.started_at) < logs_before)
        if logs_before is not None
        else false()  # logs kept for ever: no failed build goes
    )
    builds: ColumnElement[bool] = and_(
        ~used_build,
        or_(failed_old, and_(Build.status == OK, Build.started_at < grace, ~upload_young.exists())),
    )
    size = func.coalesce(func.length(Build.artifact), 0) + func.length(Build.log)
    rows = session.execute(select(Build.id, Build.status, Build.artifact_sha256, size).where(builds)).all()
    for build_id, status, sha, n in rows:
        why = f"a failed build older than {days} days" if status != OK else "an ok build no version uses"
        found.append(Garbage("build", str(build_id), int(n or 0), why, bundle=sha))
    if not dry_run:
        done = _delete(session, Build, Build.id, [r[0] for r in rows], builds)
        rows = [r for r in rows if r[0] in done]
        found = [g for g in found if g.kind != "build" or int(g.name) in done]

    used_upload = select(BotVersion.id).where(BotVersion.upload_sha == Upload.sha256).exists()
    gone_builds = {r[0] for r in rows}
    has_build = select(Build.id).where(Build.upload_sha == Upload.sha256)
    if dry_run and gone_builds:
        has_build = has_build.where(Build.id.not_in(gone_builds))
    old_upload = and_(~used_upload, Upload.created_at < grace)
    uploads = and_(old_upload, ~has_build.exists())
    rows = session.execute(select(Upload.sha256, func.length(Upload.archive)).where(uploads)).all()
    if not dry_run:
        done = _delete(session, Upload, Upload.sha256, [r[0] for r in rows], uploads)
        rows = [r for r in rows if r[0] in done]
    for sha, n in rows:
        found.append(Garbage("upload", sha, int(n or 0), "no version or build uses it"))
    gone = {r[0] for r in rows}
    bytes_only = and_(old_upload, func.length(Upload.archive) > 0)
    rows = session.execute(select(Upload.sha256, func.length(Upload.archive)).where(bytes_only)).all()
    rows = [r for r in rows if r[0] not in gone]
    if not dry_run:
        emptied: set[str] = set()
        for chunk in _chunks([r[0] for r in rows]):
            statement = update(Upload).where(Upload.sha256.in_(chunk), bytes_only).values(archive=b"")
            emptied.update(
                session.scalars(
                    statement.returning(Upload.sha256).execution_options(synchronize_session=False)
                )
            )
        rows = [r for r in rows if r[0] in emptied]
    for sha, n in rows:
        why = "no version uses it (its failed build's log stays)"
        found.append(Garbage("archive", sha, int(n or 0), why))

    if logs_before is not None:
        found.extend(_match_logs(session, settings, logs_before, dry_run=dry_run))
    return found


def _match_logs(session: Session, settings: Settings, before: dt.datetime, *, dry_run: bool) -> list[Garbage]:
    """Match logs older than ``before``, but for each bot version's last matches."""
    rank = (
        func.row_number()
        .over(partition_by=MatchSeat.bot_version_id, order_by=MatchLog.match_id.desc())
        .label("rank")
    )
    ranked = (
        select(MatchLog.id, MatchLog.created_at, func.length(MatchLog.text).label("size"), rank)
        .join(MatchSeat, and_(MatchSeat.match_id == MatchLog.match_id, MatchSeat.seat == MatchLog.seat))
        .subquery()
    )
    query = select(ranked.c.id, ranked.c.size).where(
        ranked.c.created_at < before, ranked.c.rank > settings.log_retention_matches
    )
    rows = session.execute(query).all()
    if not dry_run:
        done = _delete(session, MatchLog, MatchLog.id, [r[0] for r in rows], MatchLog.created_at < before)
        rows = [r for r in rows if r[0] in done]
    if not rows:
        return []
    why = (
        f"older than {settings.log_retention_days} days, beyond each bot version's last "
        f"{settings.log_retention_matches} matches"
    )
    size = sum(int(r[1] or 0) for r in rows)
    return [Garbage("match logs", f"{len(rows)} match logs", size, why, count=len(rows))]


def collect_files(settings: Settings, kept: set[str], now: dt.datetime, *, dry_run: bool) -> list[Garbage]:
    """The data dir's part: ``builds/`` entries older than the grace (a killed build or check
    left them), and ``bundles/`` entries older than the grace whose build is not in ``kept``
    (artifact SHA-256s the store has), or unfinished unpackings (``.SHA-...``)."""
    cutoff = now.timestamp() - settings.gc_grace_s
    found: list[Garbage] = []
    builds = Path(settings.data_dir) / "builds"
    for path in _entries(builds):
        if _mtime(path) < cutoff:
            why = "left by a build or check that never ended"
            found.append(Garbage("folder", str(path), _size(path), why))
    for path in _entries(bundle_cache(settings)):
        if path.name in kept or _mtime(path) >= cutoff:
            continue
        unfinished = path.name.startswith(".")
        why = "an unpacking that never ended" if unfinished else "its build is not in the store"
        found.append(Garbage("folder", str(path), _size(path), why))
    if not dry_run:
        for item in found:
            path = Path(item.name)
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
    return found


def _delete(
    session: Session, model: Any, key: Any, ids: Sequence[Any], condition: ColumnElement[bool]
) -> set[Any]:
    """Delete the rows of ``ids`` that still meet ``condition`` (checked again as each is
    deleted: a row a concurrent upload renewed stays); returns the keys deleted."""
    deleted: set[Any] = set()
    for chunk in _chunks(ids):
        statement = delete(model).where(key.in_(chunk), condition).returning(key)
        deleted.update(session.scalars(statement.execution_options(synchronize_session=False)))
    return deleted


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def _entries(folder: Path) -> Iterable[Path]:
    try:
        return sorted(folder.iterdir())
    except FileNotFoundError:
        return []


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except FileNotFoundError:  # gone meanwhile (another gc, a finished build)
        return float("inf")


def _size(path: Path) -> int:
    if path.is_symlink() or not path.is_dir():
        return path.lstat().st_size if path.exists() else 0
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def summary(found: Sequence[Garbage]) -> str:
    """One line: how many of each kind, and their bytes."""
    kinds: dict[str, int] = {}
    for item in found:
        kinds[item.kind] = kinds.get(item.kind, 0) + item.count
    parts = [f"{n} {kind if n == 1 or kind.endswith('s') else kind + 's'}" for kind, n in kinds.items()]
    return f"{', '.join(parts) or 'nothing'}: {sum(i.bytes for i in found):,} bytes"


__all__ = ["CHUNK", "Garbage", "collect", "collect_files", "collect_store", "summary"]
