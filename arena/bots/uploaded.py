"""Entering an uploaded bot: the third way in, beside a dialled address and a connection.

``tonk submit --name N --upload DIR`` sends the project as a .tar.gz; :func:`submit_upload`
then, in order, and refusing at the first step that fails:

1. checks the name (new: free; ``update``: the caller's own bot, or any as an operator);
2. checks the archive and its manifest (arena/bots/uploads.py) and the dependencies it
   declares against the operator's settings (arena/bots/builds.py): nothing stored on a
   refusal;
3. builds it into a bundle, unless the same archive was built before (a failed build is a
   BuildFailedError quoting its log's end; the build is stored with the upload's row but not
   its bytes, and the caller commits them first so the log stays readable at
   ``GET /api/v1/builds/ID``; nothing of it stays on disk);
4. runs the built bot in the sandbox (arena/sandbox) and gives it the same admission check
   as every other bot (arena/bots/admission.py, what ``tonk check`` runs), from a private
   copy of the new bundle removed afterwards (the workers' cache, ``bundles/``, holds only
   stored builds);
5. stores the archive once by its SHA-256, the build, and the bot or its new version with its
   upload, build and launch: every write comes after the build and the check.

Like arena/bots/registry.py, it flushes and never commits.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.bots.addresses import DialTarget, validate_bot_name
from arena.bots.admission import check_served_bot
from arena.bots.builds import (
    bundle_cache,
    check_dependencies,
    fetch_bundle,
    ok_build,
    record_build,
    refusal,
    run_build,
    staged_bundle,
)
from arena.bots.registry import (
    InvalidHostedBotError,
    _ensure_may_change,
    _ensure_name_free,
    _next_number,
    add_bot,
    find_bot,
    get_bot,
    same_answers,
)
from arena.bots.uploads import inspect_archive, store_upload
from arena.config import Settings
from arena.errors import NotFoundError
from arena.sandbox.launch import Launch
from arena.store.models import Bot, BotVersion, Build, MatchLog, Owner, Upload
from arena.store.statuses import BotStatus

#: ``admit(bundle, launch, settings) -> info``: run the built bot and check it (raise a
#: BotCheckFailedError to refuse); the default runs it in the sandbox.
Admitter = Callable[[Path, Launch, Settings], dict[str, Any]]


def submit_upload(
    session: Session,
    owner: Owner,
    name: str,
    archive: bytes,
    *,
    settings: Settings,
    update: bool = False,
    check: bool = True,
    admit: Admitter | None = None,
) -> Bot:
    """Enter (or, with ``update``, make a new version of) ``owner``'s bot ``name`` from the
    project ``archive``; the same archive, started alike and reporting the same GetInfo as
    the latest version, is that version still (its rating goes on). Raises the registry's
    name errors, the upload refusals of arena/bots/uploads.py, DependencyNotAllowedError,
    BuildFailedError, and the admission check's BotCheckFailedError subclasses.
    ``check=False`` skips running the bot (trusted callers and tests only)."""
    validate_bot_name(name)
    bot = None
    if update:
        bot = get_bot(session, name)
        _ensure_may_change(owner, bot)
        if bot.hosted or bot.connected:
            kind = "hosted by the arena" if bot.hosted else "connected (tonk serve --connect)"
            raise InvalidHostedBotError(f"bot {name!r} is {kind}; it cannot be replaced by an upload")
    else:
        _ensure_name_free(session, name, owner)
    found = inspect_archive(archive, settings)
    check_dependencies(found.manifest, settings)
    launch, cache = found.launch, bundle_cache(settings)
    uploader = owner if bot is None else bot.owner
    # Nothing is written until the build and the check are done: they take minutes, and a
    # write would hold SQLite's one writer lock all along. A failed build is stored, its log
    # to be read; a bot failing its check leaves nothing.
    build = ok_build(session, found.sha256)
    built = None
    if build is None:
        built = run_build(archive, found.manifest, settings)
        if not built.ok:
            store_upload(session, uploader, archive, settings, found, keep_archive=False)
            raise refusal(record_build(session, found.sha256, built))
    info: dict[str, Any] = {}
    if check:
        if build is not None:
            info = (admit or sandbox_admission)(fetch_bundle(session, build.id, cache), launch, settings)
        else:
            assert built is not None
            with staged_bundle(built, settings) as bundle:
                info = (admit or sandbox_admission)(bundle, launch, settings)
    upload, _ = store_upload(session, uploader, archive, settings, found)
    if built is not None:
        build = record_build(session, upload.sha256, built)
    assert build is not None
    version = BotVersion(
        address=None,
        hosted=None,
        info=info,
        upload_sha=upload.sha256,
        build_id=build.id,
        launch=launch.to_json(),
    )
    if bot is None:
        bot = Bot(name=name, owner=owner, address=None, hosted=None, status=BotStatus.ACTIVE)
        version.number = 1
        bot.versions.append(version)
        add_bot(session, bot, name)
        return bot
    bot.address = None  # an upload now, whatever it was before
    bot.status = BotStatus.ACTIVE
    latest = uploaded_version(bot)
    if (
        latest is not None
        and (latest.upload_sha, latest.launch) == (version.upload_sha, version.launch)
        and same_answers(latest.info, info)
    ):  # the same archive, started alike, saying the same: that version still (its rating too)
        latest.info = info  # with the latest check's warnings
        session.flush()
        return bot
    version.number = _next_number(bot)
    bot.versions.append(version)
    session.flush()
    return bot


def sandbox_admission(bundle: Path, launch: Launch, settings: Settings) -> dict[str, Any]:
    """Start the built bot in the sandbox (arena/sandbox/runner.py; its limits are the
    worker's ``TONK_SANDBOX_*``) and run the admission check on its socket. A bot that does
    not start is refused with what it printed (SandboxStartError, 422)."""
    from arena.sandbox.runner import Sandbox

    with Sandbox(bundle, launch) as running:
        address = running.address
        return check_served_bot(address, settings, target=DialTarget(address), box=running)


class NothingToSeeError(NotFoundError):
    """No such build or log for this caller: one answer whether it exists and is another's,
    or does not exist, so nobody learns what another owner uploaded."""

    code = "not_found"


def bot_build(session: Session, viewer: Owner | None, name: str) -> Build:
    """The build of ``name``'s latest uploaded version, for its owner or an operator."""
    bot = find_bot(session, name)
    version = uploaded_version(bot) if bot is not None else None
    if bot is None or version is None or version.build_id is None or not may_see(viewer, bot):
        raise NothingToSeeError(f"no build of a bot {name[:80]!r} that you own")
    build = session.get(Build, version.build_id)
    assert build is not None
    return build


def build_for(session: Session, viewer: Owner | None, build_id: int) -> Build:
    """A build by id (a failed one too: ``tonk submit`` names it), for the owner of its
    upload or an operator."""
    build = session.get(Build, build_id)
    upload = session.get(Upload, build.upload_sha) if build is not None else None
    if (
        build is None
        or upload is None
        or viewer is None
        or not (viewer.is_operator or viewer.id == upload.owner_id)
    ):
        raise NothingToSeeError(f"no build {build_id} of an upload of yours")
    return build


def match_logs(
    session: Session, viewer: Owner | None, name: str, *, match_id: int | None = None, limit: int = 20
) -> list[dict[str, Any]]:
    """What ``name`` printed in its recent matches (newest first), or in one match, for its
    owner or an operator; texts only when one match is asked for (they can be long)."""
    bot = find_bot(session, name)
    if bot is None or not may_see(viewer, bot):
        raise NothingToSeeError(f"no logs of a bot {name[:80]!r} that you own")
    query = select(MatchLog).where(MatchLog.bot_id == bot.id)
    if match_id is not None:
        query = query.where(MatchLog.match_id == match_id)
    rows = session.scalars(query.order_by(MatchLog.match_id.desc(), MatchLog.seat).limit(limit)).all()
    if match_id is not None and not rows:
        raise NothingToSeeError(f"bot {name[:80]!r} left no log in match {match_id}")
    return [
        {
            "match": row.match_id,
            "seat": row.seat,
            "bytes": row.bytes,
            "truncated": row.truncated,
            "created_at": row.created_at.isoformat() if row.created_at else None,
            **({"text": row.text} if match_id is not None else {}),
        }
        for row in rows
    ]


def uploaded_version(bot: Bot) -> BotVersion | None:
    """The bot's latest version when it is an upload, else None."""
    version = max(bot.versions, key=lambda v: v.number, default=None)
    return version if version is not None and version.upload_sha is not None else None


def may_see(viewer: Owner | None, bot: Bot) -> bool:
    """Whether ``viewer`` may see the bot's code, builds and logs: its owner or an operator."""
    return viewer is not None and (viewer.is_operator or viewer.id == bot.owner_id)


__all__ = [
    "Admitter",
    "NothingToSeeError",
    "bot_build",
    "build_for",
    "match_logs",
    "may_see",
    "sandbox_admission",
    "submit_upload",
    "uploaded_version",
]
