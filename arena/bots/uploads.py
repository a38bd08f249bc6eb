"""A bot project's archive: checked, stored by content, and unpacked (``tonk submit --upload``).

The one format is a gzip-compressed tar (``.tar.gz``) of the project folder, its manifest
(``tonk.toml``, or ``[tool.tonk]`` in ``pyproject.toml``; arena/sandbox/launch.py) at the root.
A zip is refused with a message saying so. The archive is read as a stream, member by member,
and refused (an :class:`UploadRefusedError` subclass quoting the offending member) when:

- it is larger than ``Settings.upload_max_bytes``, or not a gzip'd tar at all;
- a member is anything but a regular file or a folder: symlinks, hard links, devices, FIFOs
  and sparse files are all refused, so nothing in a bundle can point outside it;
- a path is absolute, has a ``..`` part or a backslash, more than ``upload_max_path_chars``
  characters, more than ``upload_max_depth`` parts or a part of more than 255 bytes, or names a
  member twice;
- a name has a character that is not plain text (:func:`unsafe_character`: controls, format
  characters such as bidi overrides and zero-width ones, invisible fillers, spaces other than
  the ASCII one, private-use, unassigned, or bytes that are not UTF-8): ``unsafe_name``;
- two names are one on a case-insensitive or normalizing file system (the same once Unicode
  NFKC-normalized and case-folded, e.g. ``Bot.py`` and ``bot.py``, ``café`` in NFC and NFD),
  or a name is both a file and a folder: ``name_collision``;
- anything follows the archive's end: the tar's two zero blocks may be followed by zeros up to
  the end of its 10240-byte record only (what tar writers pad with), and the gzip stream by
  nothing (one gzip member): ``trailing_data``;
- there are more than ``upload_max_files`` members, or their sizes add up to more than
  ``upload_max_unpacked_bytes``: sizes are counted from the headers before any data is read
  or written, and the decompressed stream itself is capped too, so a bomb is refused after
  reading at most the limit, never written out.

Nothing is stored on a refusal. An accepted archive is an :class:`Upload` row keyed by the
SHA-256 of its bytes, so the same bytes uploaded twice are stored once; an archive whose build
failed is kept without its bytes (only its build's log is worth keeping).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import tarfile
import tomllib
import unicodedata
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from arena.config import Settings
from arena.errors import ArenaError, UnprocessableError
from arena.sandbox.launch import InvalidLaunchError, Launch
from arena.store.models import BotVersion, Owner, Upload, utcnow
from arena.text import ELLIPSIS, visible

#: The manifest's file names, first found wins; each read at most this many bytes.
MANIFEST: Final = "tonk.toml"
PYPROJECT: Final = "pyproject.toml"
MANIFEST_MAX_BYTES: Final = 64 * 1024
#: Headers and padding a tar adds per member, on top of the members' own bytes.
TAR_OVERHEAD_PER_MEMBER: Final = 1536
#: A tar ends with two zero blocks, padded with zeros to the end of its record (GNU tar's and
#: Python's default blocking factor, 20 blocks); nothing more may follow.
TAR_BLOCK: Final = tarfile.BLOCKSIZE
TAR_RECORD: Final = tarfile.RECORDSIZE
#: Compressed bytes fed to zlib at a time: small, since what a read does not take is copied
#: again at the next (8 KiB kept reading zeros as fast as GzipFile, random bytes within 15%).
INPUT_CHUNK: Final = 1 << 13
#: Bytes of one part of a path (Linux's NAME_MAX).
PART_MAX_BYTES: Final = 255
#: Unicode categories no member name may hold a character of: controls, format characters
#: (bidi overrides and isolates, zero-width ones, soft hyphen, BOM), surrogates (a name's
#: bytes that are not UTF-8), private use, unassigned, line and paragraph separators.
_UNSAFE_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_UNNAMED: Final = {"Cc": "(a control character)", "Co": "(private use)", "Cn": "(unassigned)"}
_SHOWN_CHARS: Final = 160


class UploadRefusedError(UnprocessableError):
    """An archive the arena will not take; nothing of it was stored."""

    code = "upload_refused"


class UploadTooLargeError(UploadRefusedError):
    status = 413
    code = "upload_too_large"


class NotAnArchiveError(UploadRefusedError):
    code = "not_an_archive"


class UnsafeMemberError(UploadRefusedError):
    """A member that could reach outside the bot's folder, or that is no plain file/folder."""

    code = "unsafe_member"


class TooManyFilesError(UploadRefusedError):
    code = "too_many_files"


class UnpackedTooLargeError(UploadRefusedError):
    code = "unpacked_too_large"


class UnsafeNameError(UnsafeMemberError):
    """A member's name with a character that is not plain text (it could pass for another
    name, or hide part of itself when shown)."""

    code = "unsafe_name"


class DuplicateMemberError(UploadRefusedError):
    code = "duplicate_member"


class NameCollisionError(DuplicateMemberError):
    """Two names one file system would take for the same, or a file that is also a folder."""

    code = "name_collision"


class TrailingDataError(NotAnArchiveError):
    """Bytes after the archive's end: nothing reads them, so nothing may hide there."""

    code = "trailing_data"


class InvalidManifestError(InvalidLaunchError):
    """The manifest is missing, not TOML, or its ``[bot]`` table is malformed."""


class ManifestMissingError(InvalidManifestError):
    code = "manifest_missing"


#: Bounds of a manifest's dependencies: pinned requirements only, no URLs, markers or pip
#: options smuggled in as a name.
MAX_DEPENDENCIES: Final = 64
_REQUIREMENT = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?==[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}"
)
_KEYS: Final = frozenset({"entry", "command", "dependencies"})


@dataclass(frozen=True)
class Manifest:
    """A manifest's ``[bot]`` table: how the bot starts and what the build installs."""

    launch: Launch
    dependencies: tuple[str, ...] = ()


@dataclass(frozen=True)
class Inspected:
    """What checking an archive found: its address, sizes and manifest (``manifest_json``
    as stored on the upload: ``{"file", "bot"}``)."""

    sha256: str
    size: int
    files: int
    unpacked_size: int
    manifest_json: dict[str, Any]
    manifest: Manifest

    @property
    def launch(self) -> Launch:
        return self.manifest.launch


def parse_bot_table(table: Mapping[str, Any]) -> Manifest:
    """The manifest a ``[bot]`` table describes, or InvalidManifestError quoting the value."""
    if not isinstance(table, Mapping):
        raise InvalidManifestError("the manifest's [bot] must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise InvalidManifestError(
            f"unknown key in the manifest's [bot]: {unknown[0][:80]!r} (known: entry, command, dependencies)"
        )
    deps = table.get("dependencies", [])
    if not isinstance(deps, list) or len(deps) > MAX_DEPENDENCIES:
        raise InvalidManifestError(f"dependencies must be a list of at most {MAX_DEPENDENCIES} requirements")
    for item in deps:
        if not isinstance(item, str) or not _REQUIREMENT.fullmatch(item):
            raise InvalidManifestError(
                f"dependency {str(item)[:120]!r} is not a pinned requirement NAME==VERSION "
                "(e.g. 'numpy==2.1.3')"
            )
    launch = Launch.from_manifest({k: v for k, v in table.items() if k != "dependencies"})
    if deps and launch.kind == "command":
        raise InvalidManifestError(
            "a command bot brings its dependencies in its upload (e.g. node_modules); "
            "dependencies = [...] is for Python bots"
        )
    return Manifest(launch, tuple(deps))


def manifest_of(upload: Upload) -> Manifest:
    """A stored upload's manifest."""
    return parse_bot_table(upload.manifest["bot"])


class _Inflated(io.RawIOBase):
    """The archive's one gzip member, decompressed as it is read: at most ``limit`` bytes given
    out, whatever the headers claim (a bomb costs at most ``limit`` bytes of reading), and
    nothing after the member's end (a second member, or any byte: TrailingDataError). Keeps
    where the last non-zero byte given out ended, for the tar's end (:func:`_check_end`)."""

    def __init__(self, archive: bytes, limit: int):
        self.source, self.at = memoryview(archive), 0
        self.inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip's header and trailer
        self.limit, self.given, self.data_end = limit, 0, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while True:
            if self.inflate.eof:
                if self.inflate.unused_data or self.at < len(self.source):
                    raise TrailingDataError(
                        "the archive has bytes after the end of its gzip stream (a second gzip "
                        "member, or data appended); send the .tar.gz alone"
                    )
                return 0
            chunk = self.inflate.unconsumed_tail
            if not chunk:
                if self.at >= len(self.source):
                    raise NotAnArchiveError("the upload is not a readable .tar.gz: the gzip data ends early")
                chunk = bytes(self.source[self.at : self.at + INPUT_CHUNK])
                self.at += len(chunk)
            data = self.inflate.decompress(chunk, len(view))
            if data:
                break
        if self.given + len(data) > self.limit:
            raise UnpackedTooLargeError(f"the archive unpacks to more than {self.limit} bytes")
        kept = len(data.rstrip(b"\0"))
        if kept:
            self.data_end = self.given + kept
        view[: len(data)] = data
        self.given += len(data)
        return len(data)


def _check_end(stream: IO[bytes], inflated: _Inflated, end: int) -> None:
    """Read the rest of the archive after the tar's end at ``end`` (where its first zero block
    starts) and refuse anything but zeros to the end of its record: at most one record more is
    read, however much follows."""
    allowed = -(-(end + 2 * TAR_BLOCK) // TAR_RECORD) * TAR_RECORD
    while inflated.given <= allowed and stream.read(TAR_RECORD):
        pass
    if inflated.data_end > end or inflated.given > allowed:
        raise TrailingDataError(
            f"the archive has data after the tar's end (byte {end}): only zeros up to the end of "
            f"its {TAR_RECORD}-byte record may follow the two zero blocks; send the .tar.gz alone"
        )
    if inflated.given < end + 2 * TAR_BLOCK:
        raise NotAnArchiveError("the tar has no end (two zero blocks): was it cut short?")


#: ``sink(path, member, data)``: called for each member in order (data None for a folder).
Sink = Callable[[str, tarfile.TarInfo, IO[bytes] | None], None]


def walk(archive: bytes, settings: Settings, sink: Sink | None = None) -> tuple[int, int, dict[str, bytes]]:
    """Check every member of ``archive`` as it streams by (see the module's rules), handing
    each to ``sink``; return (members, unpacked bytes, {manifest file: its bytes})."""
    if len(archive) > settings.upload_max_bytes:
        raise UploadTooLargeError(
            f"the archive has {len(archive)} bytes; this arena takes at most {settings.upload_max_bytes} "
            "(TONK_UPLOAD_MAX_BYTES). Leave out build output, virtualenvs and data the bot does not need"
        )
    if archive[:2] == b"PK":
        raise NotAnArchiveError("this is a zip; the arena takes a .tar.gz (tonk submit --upload makes one)")
    if archive[:2] != b"\x1f\x8b":
        raise NotAnArchiveError("the upload is not a gzip-compressed tar (.tar.gz)")
    cap = settings.upload_max_unpacked_bytes + TAR_OVERHEAD_PER_MEMBER * (settings.upload_max_files + 2)
    inflated = _Inflated(archive, cap + TAR_RECORD)
    stream = io.BufferedReader(inflated, TAR_RECORD)
    names = _Names()
    manifests: dict[str, bytes] = {}
    members = total = 0
    try:
        # Names as UTF-8 whatever the locale; bytes that are not become surrogates (refused).
        with tarfile.open(fileobj=stream, mode="r|", encoding="utf-8", errors="surrogateescape") as tar:
            for member in tar:
                members += 1
                if members > settings.upload_max_files:
                    raise TooManyFilesError(
                        f"the archive holds more than {settings.upload_max_files} files and folders "
                        "(TONK_UPLOAD_MAX_FILES)"
                    )
                path = member_path(member.name, settings)
                _check_kind(member, path)
                names.add(path, member.isdir())
                if member.isdir():
                    if sink is not None:
                        sink(path, member, None)
                    continue
                total += member.size
                if total > settings.upload_max_unpacked_bytes:
                    raise UnpackedTooLargeError(
                        f"the archive unpacks to more than {settings.upload_max_unpacked_bytes} bytes "
                        f"(TONK_UPLOAD_MAX_UNPACKED_BYTES), reached at {path!r}"
                    )
                data = tar.extractfile(member)
                if data is None:  # pragma: no cover - regular files always have data
                    raise UnsafeMemberError(f"member {path!r} has no data")
                if path in (MANIFEST, PYPROJECT) and member.size <= MANIFEST_MAX_BYTES:
                    manifests[path] = data.read()
                    data = io.BytesIO(manifests[path])
                if sink is not None:
                    sink(path, member, data)
            if members:
                _check_end(stream, inflated, tar.offset)
    except ArenaError:
        raise
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise NotAnArchiveError(f"the upload is not a readable .tar.gz: {exc}") from None
    if members == 0:
        raise NotAnArchiveError("the archive is empty")
    return members, total, manifests


def member_path(name: str, settings: Settings) -> str:
    """A member's name as a safe relative path ("./a//b/" -> "a/b"), or UnsafeMemberError
    (UnsafeNameError for a character that is not plain text) naming it and the rule."""
    shown = shown_name(name)
    for char in "" if name.isascii() and name.isprintable() else name:  # printable ASCII is safe
        why = unsafe_character(char)
        if why:
            raise UnsafeNameError(
                f"member {shown} has {why} in its name; names may hold only visible characters "
                "and the plain space"
            )
    if "\\" in name:
        raise UnsafeMemberError(f"member {shown} has a backslash in its name")
    if name.startswith("/"):
        raise UnsafeMemberError(f"member {shown} has an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeMemberError(f"member {shown} reaches outside the folder ('..')")
    if not parts:
        raise UnsafeMemberError(f"member {shown} names no file")
    path = "/".join(parts)
    if len(path) > settings.upload_max_path_chars:
        raise UnsafeMemberError(
            f"member {shown} has a path longer than {settings.upload_max_path_chars} characters "
            "(TONK_UPLOAD_MAX_PATH_CHARS)"
        )
    if len(parts) > settings.upload_max_depth:
        raise UnsafeMemberError(
            f"member {shown} is more than {settings.upload_max_depth} folders deep (TONK_UPLOAD_MAX_DEPTH)"
        )
    if any(len(part.encode("utf-8")) > PART_MAX_BYTES for part in parts):
        raise UnsafeNameError(f"member {shown} has a name of more than {PART_MAX_BYTES} bytes (UTF-8)")
    return path


def unsafe_character(char: str) -> str:
    """What is wrong with ``char`` in a member's name ("" when nothing): the one rule of which
    characters a name may hold. Allowed: letters, marks, digits, punctuation, symbols and the
    ASCII space; refused: the categories of _UNSAFE_CATEGORIES, spaces that pass for the ASCII
    one (no-break, ideographic...), and what arena/text.py shows escaped as invisible (Hangul
    fillers, braille blank)."""
    category = unicodedata.category(char)
    if category == "Cs":
        return f"a byte that is not UTF-8 (<U+{ord(char):04X}>)"
    if category in _UNSAFE_CATEGORIES or (category == "Zs" and char != " ") or visible(char) != char:
        label = unicodedata.name(char, _UNNAMED.get(category, "(no name)"))
        return f"the character U+{ord(char):04X} {label} (Unicode category {category})"
    return ""


def shown_name(name: str) -> str:
    """A member's name fit to quote in a refusal: invisible characters written as <U+XXXX>,
    bounded, quoted (repr escapes whatever else is not printable)."""
    head = visible(name[:_SHOWN_CHARS])
    if len(head) > _SHOWN_CHARS or len(name) > _SHOWN_CHARS:
        head = head[:_SHOWN_CHARS] + ELLIPSIS
    return repr(head)


def fold(path: str) -> str:
    """The path as a case-insensitive, normalizing file system compares names: NFKC, case
    folded, NFKC again (case folding can undo a normalization)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", path).casefold())


class _Names:
    """The paths an archive has named so far: the same path twice is a duplicate; two paths,
    or two folders on the way to them, that :func:`fold` makes one collide; a path that is a
    file and also a folder on the way to another collides with itself."""

    def __init__(self) -> None:
        self.members: set[str] = set()
        self.folded: dict[str, tuple[str, bool]] = {}  # fold(prefix) -> (prefix, is a folder)

    def add(self, path: str, is_dir: bool) -> None:
        if path in self.members:
            raise DuplicateMemberError(f"the archive names {shown_name(path)} twice")
        self.members.add(path)
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            folder = i < len(parts) or is_dir
            first = self.folded.setdefault(fold(prefix), (prefix, folder))
            if first[0] != prefix:
                one, other = shown_name(first[0]), shown_name(prefix)
                if unicodedata.normalize("NFC", one) == unicodedata.normalize("NFC", other):
                    # The same letters composed differently look the same: show the code points.
                    one, other = ascii(first[0][:_SHOWN_CHARS]), ascii(prefix[:_SHOWN_CHARS])
                raise NameCollisionError(
                    f"members {one} and {other} differ only in case or Unicode form: one file on "
                    "macOS and Windows, two on Linux; rename one"
                )
            if first[1] != folder:
                raise NameCollisionError(
                    f"{shown_name(prefix)} is a file and a folder (member {shown_name(path)})"
                )


def _check_kind(member: tarfile.TarInfo, path: str) -> None:
    if member.issym():
        raise UnsafeMemberError(
            f"member {path!r} is a symbolic link (to {member.linkname[:200]!r}); the arena takes plain "
            "files and folders only: copy the file it points to"
        )
    if member.islnk():
        raise UnsafeMemberError(
            f"member {path!r} is a hard link; the arena takes plain files and folders only"
        )
    if member.issparse() or not (member.isreg() or member.isdir()):
        raise UnsafeMemberError(
            f"member {path!r} is a device, FIFO or other special file; the arena takes plain files "
            "and folders only"
        )


def read_manifest(manifests: dict[str, bytes]) -> tuple[dict[str, Any], Manifest]:
    """The manifest's ``[bot]`` table and what it says, from ``tonk.toml`` or else
    ``pyproject.toml``'s ``[tool.tonk]`` (``[tool.tonk.bot]``, or the keys right under it)."""
    for name in (MANIFEST, PYPROJECT):
        raw = manifests.get(name)
        if raw is None:
            continue
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise InvalidManifestError(f"{name} is not valid TOML: {str(exc)[:200]}") from None
        table = data.get("bot") if name == MANIFEST else _tool_tonk(data)
        if table is None:
            if name == MANIFEST:
                raise InvalidManifestError(f"{MANIFEST} has no [bot] table")
            continue
        if not isinstance(table, dict):
            raise InvalidManifestError(f"the [bot] of {name} must be a table")
        return {"file": name, "bot": table}, parse_bot_table(table)
    raise ManifestMissingError(
        f"the archive has no manifest: add a {MANIFEST} at the project's root with [bot] entry = "
        '"MODULE:CLASS" (a Python bot) or command = ["program", ...] (tonk new writes one)'
    )


def _tool_tonk(data: dict[str, Any]) -> Any:
    tool = data.get("tool")
    tonk = tool.get("tonk") if isinstance(tool, dict) else None
    if not isinstance(tonk, dict):
        return None
    return tonk.get("bot", tonk)


def inspect_archive(archive: bytes, settings: Settings) -> Inspected:
    """Check ``archive`` whole (limits, members, manifest) without writing anything."""
    members, total, manifests = walk(archive, settings)
    manifest_json, manifest = read_manifest(manifests)
    return Inspected(
        sha256=hashlib.sha256(archive).hexdigest(),
        size=len(archive),
        files=members,
        unpacked_size=total,
        manifest_json=manifest_json,
        manifest=manifest,
    )


def store_upload(
    session: Session,
    owner: Owner,
    archive: bytes,
    settings: Settings,
    found: Inspected | None = None,
    *,
    keep_archive: bool = True,
) -> tuple[Upload, Manifest]:
    """Check ``archive`` (unless ``found`` is its inspection) and store it once, by its SHA-256;
    flushes, never commits. Raises an UploadRefusedError or InvalidManifestError subclass,
    storing nothing, on a bad archive.

    ``keep_archive=False`` (its build failed) stores the row without the bytes (``archive``
    empty), unless a version uses them; an upload of the same bytes that is kept puts them
    back. Either way the row's ``created_at`` is renewed, in a statement that locks the row, so
    ``tonk db gc`` (arena/bots/collect.py), which deletes only rows older than its grace, never
    deletes one an upload in progress is about to use."""
    if found is None:
        found = inspect_archive(archive, settings)
    sha = found.sha256
    renewed = session.execute(
        update(Upload)
        .where(Upload.sha256 == sha)
        .values(created_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if renewed.rowcount == 0:  # type: ignore[attr-defined]
        session.add(
            Upload(
                sha256=sha,
                owner_id=owner.id,
                archive=archive if keep_archive else b"",
                size=found.size,
                files=found.files,
                unpacked_size=found.unpacked_size,
                manifest=found.manifest_json,
            )
        )
    elif keep_archive:
        session.execute(
            update(Upload)
            .where(Upload.sha256 == sha, func.length(Upload.archive) == 0)
            .values(archive=archive)
            .execution_options(synchronize_session=False)
        )
    else:
        used = select(BotVersion.id).where(BotVersion.upload_sha == sha)
        session.execute(
            update(Upload)
            .where(Upload.sha256 == sha, ~used.exists())
            .values(archive=b"")
            .execution_options(synchronize_session=False)
        )
    session.flush()
    upload = session.get(Upload, sha, populate_existing=True)
    assert upload is not None
    return upload, found.manifest


def unpack(archive: bytes, folder: Path, settings: Settings) -> int:
    """Write ``archive``'s files under ``folder`` (which must not exist yet), checking every
    member again as it goes; files keep only their executable bit. Returns the bytes written."""
    folder.mkdir(parents=False, exist_ok=False)
    root = folder.resolve()

    def write(path: str, member: tarfile.TarInfo, data: IO[bytes] | None) -> None:
        target = root / path
        if os.path.commonpath([root, target.parent.resolve()]) != str(root):  # belt and braces
            raise UnsafeMemberError(f"member {path!r} reaches outside the folder")
        if data is None:
            target.mkdir(parents=True, exist_ok=True)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = 0o755 if member.mode & 0o111 else 0o644
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        with os.fdopen(os.open(target, flags, mode), "wb") as out:
            while chunk := data.read(1 << 16):
                out.write(chunk)

    _, total, _ = walk(archive, settings, write)
    return total


__all__ = [
    "DuplicateMemberError",
    "Inspected",
    "InvalidManifestError",
    "Manifest",
    "ManifestMissingError",
    "NameCollisionError",
    "NotAnArchiveError",
    "TooManyFilesError",
    "TrailingDataError",
    "UnpackedTooLargeError",
    "UnsafeMemberError",
    "UnsafeNameError",
    "UploadRefusedError",
    "UploadTooLargeError",
    "fold",
    "inspect_archive",
    "manifest_of",
    "parse_bot_table",
    "read_manifest",
    "shown_name",
    "store_upload",
    "unpack",
    "unsafe_character",
    "walk",
]
