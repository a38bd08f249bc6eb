"""Entering an uploaded bot (arena/bots/uploaded.py): built once, started in the real
bubblewrap sandbox (arena/sandbox) and given the same admission check as every bot; each
refusal leaves the store as it was."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.archives import project, tar_gz
from helpers.arena import UNHURRIED_CHECK
from sqlalchemy import func, select

from arena.bots.admission import BotCheckFailedError, ConformanceFailedError
from arena.bots.builds import BuildFailedError
from arena.bots.owners import create_owner
from arena.bots.registry import NameTakenError, NotOwnerError, bot_to_json
from arena.bots.uploaded import sandbox_admission, submit_upload
from arena.config import Settings
from arena.sandbox.launch import Launch
from arena.store.db import session_scope
from arena.store.models import Bot, Build, Owner, Upload

ILLEGAL = """from sdk.bot import Bot


class TinyBot(Bot):
    name = "illegal"

    def act(self, obs):
        return len(obs.legal_actions) + 7
"""

#: Holds one decision 1.2 s, once, at the protocol check's first table of three (the
#: conformance match has two seats and a time bank; the protocol check gives no bank):
#: ``HOLD`` says how, sleeping (no CPU) or computing (1.2 s of CPU).
HOLDING = """import time

from sdk.bot import Bot

HOLD = {hold!r}
held = []


class TinyBot(Bot):
    name = "holding"

    def act(self, obs):
        if len(obs.players) == 3 and not held:
            held.append(1)
            if HOLD == "sleep":
                time.sleep(1.2)
            else:
                began = time.process_time()
                while time.process_time() - began < 1.2:
                    pass
        return self.rng.randrange(len(obs.legal_actions))
"""

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data dir the sandbox's own uid can reach (pytest's temporary folders are 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="tonk-uploaded-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def owners(url: str) -> None:
    with session_scope(url) as session:
        create_owner(session, "alice")
        create_owner(session, "bob")


def owner(session: object, name: str) -> Owner:
    found = session.scalars(select(Owner).where(Owner.name == name)).one()  # type: ignore[attr-defined]
    assert isinstance(found, Owner)
    return found


def counts(url: str) -> tuple[int, int, int]:
    with session_scope(url) as session:
        return tuple(  # type: ignore[return-value]
            session.scalar(select(func.count()).select_from(table)) for table in (Bot, Upload, Build)
        )


def test_an_uploaded_bot_is_built_once_checked_in_the_sandbox_and_entered(
    db_url: str, data_dir: Path
) -> None:
    settings = Settings(**UNHURRIED_CHECK, data_dir=str(data_dir), database_url=db_url)
    owners(db_url)
    archive = tar_gz(project())
    with session_scope(db_url) as session:
        bot = submit_upload(session, owner(session, "alice"), "tiny", archive, settings=settings)
        version = bot.versions[0]
        assert version.info["name"] == "tiny" and version.info["language"] == "python"
        assert version.launch == {"entry": "tiny_bot:TinyBot"} and version.build_id is not None
        assert bot.address is None and not bot.hosted and not bot.connected
        assert bot_to_json(bot)["uploaded"] is True
        first_build = version.build_id
    with session_scope(db_url) as session:  # the same archive again: the same version still
        bot = submit_upload(session, owner(session, "alice"), "tiny", archive, settings=settings, update=True)
        assert [v.number for v in bot.versions] == [1]  # its rating goes on (issue #27)
        assert bot.versions[0].build_id == first_build  # built once
    assert counts(db_url) == (1, 1, 1)
    changed = tar_gz(project({"README.md": "v2"}))
    with session_scope(db_url) as session:  # another archive: a new version, rated apart
        bot = submit_upload(session, owner(session, "alice"), "tiny", changed, settings=settings, update=True)
        assert [v.number for v in bot.versions] == [1, 2]
        assert bot.versions[1].build_id != first_build
    assert counts(db_url) == (1, 2, 2)


def test_a_bot_failing_its_check_in_the_sandbox_is_refused_and_nothing_stays(
    sqlite_url: str, data_dir: Path
) -> None:
    settings = Settings(**UNHURRIED_CHECK, data_dir=str(data_dir), database_url=sqlite_url)
    owners(sqlite_url)
    with pytest.raises(ConformanceFailedError) as refused, session_scope(sqlite_url) as session:
        submit_upload(session, owner(session, "alice"), "illegal", tar_gz(project({"tiny_bot.py": ILLEGAL})),
                      settings=settings)  # fmt: skip
    assert "illegal" in refused.value.message or "action" in refused.value.message
    assert counts(sqlite_url) == (0, 0, 0)
    assert left_on_disk(data_dir) == []  # its bundle never became a version: not in bundles/


def test_an_uploads_check_times_it_by_its_cpu_as_its_matches_do(sqlite_url: str, data_dir: Path) -> None:
    """A decision held 1.2 s past a 500 ms deadline: waiting, it costs no CPU and passes (a
    loaded host stretches the wall clock the same way); computing, it is refused. On the
    wall clock both were refused, and an honest upload beside busy loops could be too."""
    settings = Settings(decision_deadline_ms=500, data_dir=str(data_dir), database_url=sqlite_url)
    owners(sqlite_url)
    waiting = tar_gz(project({"tiny_bot.py": HOLDING.format(hold="sleep")}))
    with session_scope(sqlite_url) as session:
        bot = submit_upload(session, owner(session, "alice"), "waiting", waiting, settings=settings)
        assert bot.versions[0].info["name"] == "holding"
    computing = tar_gz(project({"tiny_bot.py": HOLDING.format(hold="compute")}))
    with pytest.raises(BotCheckFailedError) as refused, session_scope(sqlite_url) as session:
        submit_upload(session, owner(session, "bob"), "computing", computing, settings=settings)
    assert "timeout" in refused.value.message and "3 seats" in refused.value.message
    assert counts(sqlite_url) == (1, 1, 1)


def test_a_failed_build_is_refused_with_the_end_of_its_log(db_url: str, data_dir: Path) -> None:
    settings = Settings(**UNHURRIED_CHECK, data_dir=str(data_dir), database_url=db_url)
    owners(db_url)
    archive = tar_gz(project(manifest='[bot]\nentry = "elsewhere:Bot"\n'))
    with session_scope(db_url) as session:
        with pytest.raises(BuildFailedError, match=r"the upload has no elsewhere\.py") as refused:
            submit_upload(session, owner(session, "alice"), "nowhere", archive, settings=settings)
        build = session.get(Build, refused.value.details["build"])
        assert build is not None and build.status == "failed"
    with session_scope(db_url) as session:  # its log is kept for its owner; the archive is not
        build = session.get(Build, refused.value.details["build"])
        assert build is not None and "elsewhere.py" in build.log
        upload = session.get(Upload, build.upload_sha)
        assert upload is not None and upload.archive == b"" and upload.size == len(archive)
    assert left_on_disk(data_dir) == []
    with session_scope(db_url) as session, pytest.raises(BuildFailedError):  # built again, not kept
        submit_upload(session, owner(session, "alice"), "nowhere", archive, settings=settings)
    with session_scope(db_url) as session:
        assert [u.archive for u in session.scalars(select(Upload))] == [b""]
        assert session.scalar(select(func.count()).select_from(Build)) == 2
    fixed = tar_gz(project())
    with session_scope(db_url) as session:  # a build that works keeps its archive
        submit_upload(session, owner(session, "alice"), "somewhere", fixed, settings=settings)
    with session_scope(db_url) as session:
        assert {u.archive for u in session.scalars(select(Upload))} == {b"", fixed}
    assert left_on_disk(data_dir) == []


def left_on_disk(data_dir: Path) -> list[str]:
    """What builds and checks left in the data dir (bundles/ is the workers' cache: the
    check of a new upload must not fill it)."""
    return sorted(
        p.relative_to(data_dir).as_posix()
        for folder in ("builds", "bundles")
        if (data_dir / folder).is_dir()
        for p in (data_dir / folder).iterdir()
    )


def test_names_and_owners_are_checked_before_anything_is_stored(sqlite_url: str, data_dir: Path) -> None:
    settings = Settings(**UNHURRIED_CHECK, data_dir=str(data_dir), database_url=sqlite_url)
    owners(sqlite_url)
    with session_scope(sqlite_url) as session:
        submit_upload(
            session, owner(session, "alice"), "tiny", tar_gz(project()), settings=settings, check=False
        )
    other = tar_gz(project({"README.md": "another"}))
    with pytest.raises(NameTakenError), session_scope(sqlite_url) as session:
        submit_upload(session, owner(session, "bob"), "tiny", other, settings=settings, check=False)
    with pytest.raises(NotOwnerError), session_scope(sqlite_url) as session:
        submit_upload(
            session, owner(session, "bob"), "tiny", other, settings=settings, update=True, check=False
        )
    assert counts(sqlite_url) == (1, 1, 1)


def test_nothing_is_written_until_the_build_and_check_are_done(sqlite_url: str, data_dir: Path) -> None:
    """SQLite has one writer: while a bot is built and checked (minutes, at worst), the arena
    must go on recording matches. Here another writer commits in the middle of the check."""
    settings = Settings(**UNHURRIED_CHECK, data_dir=str(data_dir), database_url=sqlite_url)
    owners(sqlite_url)

    def admit(bundle: Path, launch: Launch, settings: Settings) -> dict[str, Any]:
        with session_scope(sqlite_url) as other:  # would wait for the lock, then fail, if held
            create_owner(other, "carol")
        assert (bundle / "code" / "tiny_bot.py").is_file()
        return sandbox_admission(bundle, launch, settings)

    with session_scope(sqlite_url) as session:
        bot = submit_upload(
            session, owner(session, "alice"), "tiny", tar_gz(project()), settings=settings, admit=admit
        )
        assert bot.versions[0].info["name"] == "tiny"
    with session_scope(sqlite_url) as session:
        assert owner(session, "carol").name == "carol"
