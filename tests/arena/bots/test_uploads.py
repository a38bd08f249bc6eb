"""Uploaded archives (arena/bots/uploads.py) against real SQLite and PostgreSQL stores: each
refusal is a clear error quoting the member and stores nothing; the same bytes are one row;
the SDK's packer makes archives the arena takes, byte for byte the same each time."""

from __future__ import annotations

import datetime as dt
import random
import shutil
import tarfile
import unicodedata
from pathlib import Path

import pytest
from helpers.archives import BOT, MANIFEST, bomb, gz, member, project, tar, tar_gz
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from arena.bots.owners import create_owner
from arena.bots.uploads import (
    DuplicateMemberError,
    InvalidManifestError,
    Manifest,
    ManifestMissingError,
    NotAnArchiveError,
    TooManyFilesError,
    UnpackedTooLargeError,
    UnsafeMemberError,
    UploadRefusedError,
    UploadTooLargeError,
    inspect_archive,
    member_path,
    parse_bot_table,
    store_upload,
    unpack,
    walk,
)
from arena.config import Settings
from arena.errors import ArenaError
from arena.processes import run_process
from arena.sandbox.launch import InvalidLaunchError, Launch
from arena.store.db import session_scope
from arena.store.models import Upload
from sdk.packing import PackError, pack

SMALL = Settings(
    upload_max_bytes=64 * 1024,
    upload_max_files=20,
    upload_max_unpacked_bytes=256 * 1024,
    upload_max_path_chars=80,
    upload_max_depth=4,
)

REFUSED: dict[str, tuple[bytes, type[ArenaError], str]] = {
    "dotdot": (tar_gz(project({"../evil.py": "x"})), UnsafeMemberError, "'../evil.py'"),
    "dotdot-inside": (tar_gz(project({"a/../../evil.py": "x"})), UnsafeMemberError, "a/../../evil.py"),
    "absolute": (tar_gz(project({"/etc/cron.d/evil": "x"})), UnsafeMemberError, "absolute"),
    "symlink-out": (
        tar_gz(project(), [member("data", tarfile.SYMTYPE, "/etc/passwd")]),
        UnsafeMemberError,
        "symbolic link (to '/etc/passwd')",
    ),
    "symlink-in": (
        tar_gz(project(), [member("alias.py", tarfile.SYMTYPE, "tiny_bot.py")]),
        UnsafeMemberError,
        "'alias.py' is a symbolic link",
    ),
    "hardlink": (
        tar_gz(project(), [member("h", tarfile.LNKTYPE, "/etc/shadow")]),
        UnsafeMemberError,
        "hard link",
    ),
    "device": (tar_gz(project(), [member("dev", tarfile.CHRTYPE)]), UnsafeMemberError, "'dev' is a device"),
    "fifo": (
        tar_gz(project(), [member("pipe", tarfile.FIFOTYPE)]),
        UnsafeMemberError,
        "'pipe' is a device, FIFO",
    ),
    "duplicate": (
        tar_gz(project(), [member("./tiny_bot.py", tarfile.DIRTYPE)]),
        DuplicateMemberError,
        "'tiny_bot.py' twice",
    ),
    "too-deep": (tar_gz(project({"a/b/c/d/e.py": "x"})), UnsafeMemberError, "more than 4 folders deep"),
    "long-path": (tar_gz(project({"x" * 100: "x"})), UnsafeMemberError, "longer than 80 characters"),
    "control-char": (tar_gz(project({"evil\x1b[2J.py": "x"})), UnsafeMemberError, "U+001B"),
    "too-many-files": (
        tar_gz(project({f"f{i}.txt": "x" for i in range(25)})),
        TooManyFilesError,
        "more than 20 files",
    ),
    "unpacked-too-large": (
        tar_gz(project({"big.bin": bytes(300 * 1024)})),
        UnpackedTooLargeError,
        "reached at 'big.bin'",
    ),
    "bomb": (bomb(50 * 1024 * 1024), UnpackedTooLargeError, "reached at 'zeros.bin'"),
    "oversized": (
        tar_gz(project({"noise.bin": random.Random(1).randbytes(100_000)})),
        UploadTooLargeError,
        "at most 65536",
    ),
    "zip": (b"PK\x03\x04" + bytes(100), NotAnArchiveError, "this is a zip"),
    "not-gzip": (b"hello, arena", NotAnArchiveError, "not a gzip"),
    "truncated": (tar_gz(project())[:60], NotAnArchiveError, "not a readable .tar.gz"),
    "no-manifest": (tar_gz(project(manifest=None)), ManifestMissingError, "has no manifest"),
    "bad-toml": (tar_gz(project(manifest="[bot\n")), InvalidManifestError, "not valid TOML"),
    "no-entry": (
        tar_gz(project(manifest="[bot]\n")),
        InvalidLaunchError,
        "exactly one of 'entry' or 'command'",
    ),
    "both": (
        tar_gz(project(manifest='[bot]\nentry = "a:B"\ncommand = ["x"]\n')),
        InvalidLaunchError,
        "exactly one",
    ),
    "bad-entry": (
        tar_gz(project(manifest='[bot]\nentry = "os.system"\n')),
        InvalidLaunchError,
        "'os.system'",
    ),
    "pip-option": (
        tar_gz(project(manifest='[bot]\nentry = "a:B"\ndependencies = ["--index-url=http://evil"]\n')),
        InvalidManifestError,
        "'--index-url=http://evil' is not a pinned requirement",
    ),
    "unpinned": (
        tar_gz(project(manifest='[bot]\nentry = "a:B"\ndependencies = ["numpy"]\n')),
        InvalidManifestError,
        "'numpy' is not a pinned",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_bad_archive_is_refused_clearly_and_nothing_is_stored(case: str, db_url: str) -> None:
    archive, kind, quoted = REFUSED[case]
    with session_scope(db_url) as session:
        owner, _ = create_owner(session, "alice")
    with pytest.raises(kind) as refused, session_scope(db_url) as session:
        owner = session.get(type(owner), owner.id)
        assert owner is not None
        store_upload(session, owner, archive, SMALL)
    assert quoted in refused.value.message
    assert isinstance(refused.value, UploadRefusedError | InvalidLaunchError)
    assert refused.value.status in (400, 413, 422)
    with session_scope(db_url) as session:
        assert session.scalar(select(func.count()).select_from(Upload)) == 0


#: Names a hostile probe got past the checks (issue #35): case -> (files, the refusal's code,
#: what its message must quote).
HOSTILE_NAMES: dict[str, tuple[dict[str, bytes], str, str]] = {
    "rtl-override": (project({"evil\u202egnp.py": "x"}), "unsafe_name", "'evil<U+202E>gnp.py'"),
    "rtl-in-a-folder": (project({"docs\u202e/a.py": "x"}), "unsafe_name", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    "bidi-isolate": (project({"a\u2066b.py": "x"}), "unsafe_name", "U+2066 LEFT-TO-RIGHT ISOLATE"),
    "zero-width-space": (project({"tiny\u200b_bot.py": "x"}), "unsafe_name", "'tiny<U+200B>_bot.py'"),
    "zero-width-joiner": (project({"a\u200db.py": "x"}), "unsafe_name", "U+200D ZERO WIDTH JOINER"),
    "byte-order-mark": (project({"\ufefftonk.toml": "x"}), "unsafe_name", "U+FEFF"),
    "soft-hyphen": (project({"ti\xadny.py": "x"}), "unsafe_name", "U+00AD SOFT HYPHEN"),
    "no-break-space": (project({"tiny\xa0bot.py": "x"}), "unsafe_name", "U+00A0 NO-BREAK SPACE"),
    "hangul-filler": (project({"a\u3164.py": "x"}), "unsafe_name", "U+3164 HANGUL FILLER"),
    "line-separator": (project({"a\u2028b.py": "x"}), "unsafe_name", "U+2028 LINE SEPARATOR"),
    "private-use": (project({"a\ue000.py": "x"}), "unsafe_name", "U+E000"),
    "escape": (project({"evil\x1b[2J.py": "x"}), "unsafe_name", "U+001B (a control character)"),
    "not-utf-8": (project({"bad\udcff.py": "x"}), "unsafe_name", "not UTF-8"),
    "part-too-long": (project({"\U0001f600" * 65 + ".py": "x"}), "unsafe_name", "more than 255 bytes"),
    "case": (project({"Tiny_Bot.py": "x"}), "name_collision", "'tiny_bot.py' and 'Tiny_Bot.py'"),
    "case-of-a-folder": (
        project({"Lib/a.py": "x", "lib/b.py": "y"}), "name_collision", "'Lib' and 'lib'"
    ),
    "nfc-nfd": (
        project({"caf\u00e9.py": "x", "cafe\u0301.py": "y"}),
        "name_collision",
        "'caf\\xe9.py' and 'cafe\\u0301.py'",
    ),
    "fullwidth": (project({"\uff54iny_bot.py": "x"}), "name_collision", "'tiny_bot.py' and"),
    "sharp-s": (project({"stra\u00dfe.py": "x", "STRASSE.py": "y"}), "name_collision", "'STRASSE.py'"),
    "file-and-folder": (
        project({"lib": "x", "lib/b.py": "y"}), "name_collision", "'lib' is a file and a folder"
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_NAMES))
def test_a_hostile_member_name_is_refused_with_its_rule_and_nothing_is_stored(case: str, db_url: str) -> None:
    files, code, quoted = HOSTILE_NAMES[case]
    with session_scope(db_url) as session:
        owner, _ = create_owner(session, "alice")
    with pytest.raises(UploadRefusedError) as refused, session_scope(db_url) as session:
        owner = session.get(type(owner), owner.id)
        assert owner is not None
        store_upload(session, owner, tar_gz(files), SMALL)
    assert refused.value.code == code and refused.value.status == 422
    message = refused.value.message
    assert quoted in message, message
    assert len(message) < 600 and message.isprintable()  # bounded, and shown as it is
    with session_scope(db_url) as session:
        assert session.scalar(select(func.count()).select_from(Upload)) == 0


def test_names_the_rules_allow_unpack_as_they_are(tmp_path: Path) -> None:
    files = {
        "tonk.toml": MANIFEST.encode(), "tiny_bot.py": BOT.encode(),
        "caf\u00e9/r\u00e9sum\u00e9 v2.txt": b"x", "\u65e5\u672c/\u30c6\u30b9\u30c8.py": b"y",
        "lib/a.py": b"", "lib/b.py": b"", "@scope/p-k_g+1~.js": b"",
    }  # fmt: skip
    unpack(tar_gz(files), tmp_path / "code", SMALL)
    code = tmp_path / "code"
    got = sorted(p.relative_to(code).as_posix() for p in code.rglob("*") if p.is_file())
    assert got == sorted(files)


#: Archives with something after their end, each as it was accepted before (issue #35).
ZEROS = 16 * 1024 * 1024
TRAILING: dict[str, tuple[bytes, str]] = {
    "zeros-after-the-tar": (gz(tar(project()) + bytes(ZEROS), 9), "after the tar's end"),
    "junk-after-the-tar": (gz(tar(project()) + b"#!/bin/sh\nrm -rf ~\n"), "after the tar's end"),
    "junk-after-one-zero-block": (
        gz(tar(project(), end=False) + bytes(512) + tar({"hidden.py": b"x"})), "after the tar's end"
    ),
    "second-tar-after-the-first": (gz(tar(project()) + tar({"hidden.py": b"x"})), "after the tar's end"),
    "no-end-blocks": (gz(tar(project(), end=False)), "has no end"),
    "bytes-after-the-gzip": (tar_gz(project()) + b"hidden", "after the end of its gzip stream"),
    "zeros-after-the-gzip": (tar_gz(project()) + bytes(4096), "after the end of its gzip stream"),
    "second-gzip-member": (tar_gz(project()) + gz(b"hidden"), "after the end of its gzip stream"),
    "bad-crc": (tar_gz(project())[:-8] + bytes(8), "not a readable .tar.gz"),
}


@pytest.mark.parametrize("case", sorted(TRAILING))
def test_anything_after_the_archive_s_end_is_refused(case: str, db_url: str) -> None:
    archive, quoted = TRAILING[case]
    assert len(archive) < SMALL.upload_max_bytes
    with session_scope(db_url) as session:
        owner, _ = create_owner(session, "alice")
        with pytest.raises(NotAnArchiveError) as refused:
            store_upload(session, owner, archive, SMALL)
    assert quoted in refused.value.message, refused.value.message
    assert refused.value.code in ("trailing_data", "not_an_archive")
    with session_scope(db_url) as session:
        assert session.scalar(select(func.count()).select_from(Upload)) == 0


def test_zeros_after_the_tar_are_read_only_to_the_record_s_end() -> None:
    """200 MB of zeros cost a refusal after at most one record more, not 200 MB of reading."""
    archive = gz(tar(project()) + bytes(200 * 1024 * 1024), 9)
    given: list[str] = []
    with pytest.raises(NotAnArchiveError, match="after the tar's end") as refused:
        walk(archive, Settings(upload_max_bytes=1 << 20), lambda path, info, data: given.append(path))
    assert refused.value.code == "trailing_data" and sorted(given) == ["tiny_bot.py", "tonk.toml"]


def test_honest_writers_end_their_archives_as_the_rule_allows(tmp_path: Path) -> None:
    files = project({"pkg/__init__.py": ""})
    go_style = tar(files, end=False) + bytes(1024)  # two zero blocks, no record padding
    for archive in (tar_gz(files), gz(tar(files)), gz(go_style)):
        assert inspect_archive(archive, SMALL).files == 3
    if shutil.which("tar"):  # GNU tar, as an author might pack by hand
        for name, data in files.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_bytes(data)
        run_process(["tar", "czf", str(tmp_path / "p.tar.gz"), "-C", str(tmp_path), "tonk.toml",
                        "tiny_bot.py", "pkg"], check=True)  # fmt: skip
        assert inspect_archive((tmp_path / "p.tar.gz").read_bytes(), SMALL).files == 4  # pkg/ too


def test_a_bomb_is_refused_before_any_of_it_is_written() -> None:
    written: list[str] = []
    with pytest.raises(UnpackedTooLargeError):
        walk(bomb(50 * 1024 * 1024), SMALL, lambda path, info, data: written.append(path))
    assert written == ["tonk.toml"]  # the bomb's member was refused at its header


def test_unpack_refuses_midway_and_writes_nothing_unsafe(tmp_path: Path) -> None:
    archive = tar_gz(project({"../outside.py": "x"}))
    with pytest.raises(UnsafeMemberError):
        unpack(archive, tmp_path / "code", SMALL)
    assert not (tmp_path / "outside.py").exists()


def test_the_same_archive_is_stored_once(db_url: str) -> None:
    archive = tar_gz(project())
    with session_scope(db_url) as session:
        alice, _ = create_owner(session, "alice")
        bob, _ = create_owner(session, "bob")
        first, manifest = store_upload(session, alice, archive, SMALL)
        second, _ = store_upload(session, bob, archive, SMALL)
        assert first is second and first.owner_id == alice.id
        assert manifest == Manifest(Launch("python", entry="tiny_bot:TinyBot"))
    with session_scope(db_url) as session:
        rows = session.scalars(select(Upload)).all()
        assert len(rows) == 1 and rows[0].archive == archive and rows[0].files == 2
        assert rows[0].unpacked_size == len(BOT) + len(MANIFEST)
        assert rows[0].manifest == {"file": "tonk.toml", "bot": {"entry": "tiny_bot:TinyBot"}}


def test_an_archive_whose_build_failed_is_kept_without_its_bytes_until_sent_again(db_url: str) -> None:
    archive = tar_gz(project())
    with session_scope(db_url) as session:
        alice, _ = create_owner(session, "alice")
        upload, _ = store_upload(session, alice, archive, SMALL, keep_archive=False)
        assert upload.archive == b"" and upload.size == len(archive)
        session.execute(update(Upload).values(created_at=dt.datetime(2020, 1, 1, tzinfo=dt.UTC)))
    with session_scope(db_url) as session:
        alice = session.get(type(alice), alice.id)
        assert alice is not None
        upload, _ = store_upload(session, alice, archive, SMALL)  # sent again, built: kept
        assert upload.archive == archive and upload.created_at.year > 2020  # its grace starts anew
    with session_scope(db_url) as session:
        rows = session.scalars(select(Upload)).all()
        assert [(r.archive, r.created_at.year > 2020) for r in rows] == [(archive, True)]


def test_pyproject_tool_tonk_is_a_manifest_too() -> None:
    pyproject = '[project]\nname = "x"\n\n[tool.tonk.bot]\nentry = "tiny_bot:TinyBot"\n'
    found = inspect_archive(tar_gz(project({"pyproject.toml": pyproject}, manifest=None)), SMALL)
    assert found.launch.entry == "tiny_bot:TinyBot" and found.manifest_json["file"] == "pyproject.toml"


def test_a_command_manifest_and_its_socket_argument() -> None:
    manifest = '[bot]\ncommand = ["node", "bot.js", "--socket", "{socket}"]\n'
    launch = inspect_archive(tar_gz(project(manifest=manifest)), SMALL).launch
    assert launch == Launch("command", command=("node", "bot.js", "--socket", "{socket}"))
    assert Launch.from_json(launch.to_json()) == launch
    with pytest.raises(InvalidManifestError, match="brings its dependencies in its upload"):
        parse_bot_table({"command": ["node", "bot.js"], "dependencies": ["left-pad==1.0.0"]})
    with pytest.raises(InvalidManifestError, match="unknown key in the manifest's \\[bot\\]: 'entrypoint'"):
        parse_bot_table({"entrypoint": "a:B"})


def test_the_sdk_packer_makes_the_same_bytes_twice_and_the_arena_takes_them(tmp_path: Path) -> None:
    for name, data in project({"pkg/__init__.py": "", "pkg/util.py": "X = 1\n"}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: x")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "x.pyc").write_bytes(b"\0")
    first = pack(tmp_path)
    (tmp_path / "tiny_bot.py").touch()  # a new mtime, the same content
    assert pack(tmp_path) == first
    found = inspect_archive(first, SMALL)
    assert found.files == 5  # tonk.toml, tiny_bot.py, pkg/, pkg/__init__.py, pkg/util.py
    out = tmp_path.parent / "out"
    unpack(first, out, SMALL)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        "pkg", "pkg/__init__.py", "pkg/util.py", "tiny_bot.py", "tonk.toml",
    ]  # fmt: skip
    (tmp_path / "link.py").symlink_to(tmp_path / "tiny_bot.py")
    with pytest.raises(PackError, match=r"link\.py is a symbolic link"):
        pack(tmp_path)


def test_the_packer_needs_a_manifest(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text("x = 1\n")
    with pytest.raises(PackError, match=r"has no tonk\.toml"):
        pack(tmp_path)


names = st.text(alphabet="abcdefghij_", min_size=1, max_size=8)


@settings(max_examples=30, deadline=None)
@given(
    files=st.dictionaries(
        st.lists(names, min_size=1, max_size=3).map("/".join), st.binary(max_size=200), max_size=8
    )
)
def test_any_project_within_the_limits_unpacks_to_exactly_its_files(
    tmp_path_factory: pytest.TempPathFactory, files: dict[str, bytes]
) -> None:
    # A path that is also another's folder cannot be a file too: keep the leaves only.
    leaves = {p: d for p, d in files.items() if not any(o.startswith(p + "/") for o in files)}
    leaves = {p: d for p, d in leaves.items() if p != "tonk.toml"}
    archive = tar_gz({"tonk.toml": MANIFEST.encode(), **leaves})
    out = tmp_path_factory.mktemp("p") / "code"
    assert unpack(archive, out, SMALL) == len(MANIFEST) + sum(map(len, leaves.values()))
    got = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert got == {"tonk.toml": MANIFEST.encode(), **leaves}


def test_nothing_is_left_in_the_session_after_a_refusal(sqlite_url: str) -> None:
    with session_scope(sqlite_url) as session:
        owner, _ = create_owner(session, "carol")
        with pytest.raises(UnsafeMemberError):
            store_upload(session, owner, REFUSED["dotdot"][0], SMALL)
        assert not [o for o in session.new if isinstance(o, Upload)]
        assert isinstance(session, Session)


NAME_CHARS = list("aAb./\\\x00\x1b:~ \u202e\u200b\xa0\udcff\xe9")


@settings(max_examples=300, deadline=None)
@given(name=st.text(alphabet=st.sampled_from(NAME_CHARS), max_size=30))
def test_a_member_name_is_either_refused_or_a_plain_path_inside_the_folder(name: str) -> None:
    try:
        path = member_path(name, SMALL)
    except UnsafeMemberError:
        return
    parts = path.split("/")
    assert not path.startswith("/") and ".." not in parts and "" not in parts and "." not in parts
    assert "\\" not in path and all(c == " " or unicodedata.category(c)[0] in "LNPS" for c in path)
    assert len(parts) <= SMALL.upload_max_depth and len(path) <= SMALL.upload_max_path_chars
