"""A bot project's archive: checked, stored by content, and unpacked (``tonk submit --upload``).

The one format is a gzip-compressed tar (``.tar.gz``) of the project folder, its manifest
(``tonk.toml``, or ``[tool.tonk]`` in ``pyproject.toml``; arena/sandbox/launch.py) at the root.
A zip is refused with a message saying so. The archive is read as a stream, member by member,
and refused (an :class:`UploadRefusedError` subclass quoting the offending member) when:

- it is larger than ``Settings.upload_max_bytes``, or not a gzip'd tar at all;
- a member is anything but a regular file or a folder: symlinks, hard links, devices, FIFOs
  and sparse files are all refused, so nothing in a bundle can point outside it;
- a path is absolute, has a ``..`` part, control characters, more than
  ``upload_max_path_chars`` characters or more than ``upload_max_depth`` parts, or names a
  member twice;
- there are more than ``upload_max_files`` members, or their sizes add up to more than
  ``upload_max_unpacked_bytes``: sizes are counted from the headers before any data is read
  or written, and the decompressed stream itself is capped too, so a bomb is refused after
  reading at most the limit, never written out.

Nothing is stored on a refusal. An accepted archive is an :class:`Upload` row keyed by the
SHA-256 of its bytes, so the same bytes uploaded twice are stored once.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import tarfile
import tomllib
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from sqlalchemy.orm import Session

from arena.config import Settings
from arena.errors import ArenaError, UnprocessableError
from arena.sandbox.launch import InvalidLaunchError, Launch
from arena.store.models import Owner, Upload

#: The manifest's file names, first found wins; each read at most this many bytes.
MANIFEST: Final = "tonk.toml"
PYPROJECT: Final = "pyproject.toml"
MANIFEST_MAX_BYTES: Final = 64 * 1024
#: Headers and padding a tar adds per member, on top of the members' own bytes.
TAR_OVERHEAD_PER_MEMBER: Final = 1536


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


class DuplicateMemberError(UploadRefusedError):
    code = "duplicate_member"


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


class _Capped(io.RawIOBase):
    """The decompressed stream, refusing to give more than ``limit`` bytes: whatever the
    headers claim, a bomb costs at most ``limit`` bytes of reading."""

    def __init__(self, inner: gzip.GzipFile, limit: int):
        self.inner, self.limit, self.read_so_far = inner, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)
        data = self.inner.read(len(view))
        self.read_so_far += len(data)
        if self.read_so_far > self.limit:
            raise UnpackedTooLargeError(f"the archive unpacks to more than {self.limit} bytes")
        view[: len(data)] = data
        return len(data)


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
    stream = io.BufferedReader(_Capped(gzip.GzipFile(fileobj=io.BytesIO(archive)), cap))
    seen: set[str] = set()
    manifests: dict[str, bytes] = {}
    members = total = 0
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                members += 1
                if members > settings.upload_max_files:
                    raise TooManyFilesError(
                        f"the archive holds more than {settings.upload_max_files} files and folders "
                        "(TONK_UPLOAD_MAX_FILES)"
                    )
                path = member_path(member.name, settings)
                _check_kind(member, path)
                if path in seen:
                    raise DuplicateMemberError(f"the archive names {path!r} twice")
                seen.add(path)
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
    except ArenaError:
        raise
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise NotAnArchiveError(f"the upload is not a readable .tar.gz: {exc}") from None
    if members == 0:
        raise NotAnArchiveError("the archive is empty")
    return members, total, manifests


def member_path(name: str, settings: Settings) -> str:
    """A member's name as a safe relative path ("./a//b/" -> "a/b"), or UnsafeMemberError."""
    shown = name[:200]
    if any(ord(c) < 32 or ord(c) == 127 for c in name) or "\\" in name:
        raise UnsafeMemberError(f"member {shown!r} has control characters or backslashes in its name")
    if name.startswith("/"):
        raise UnsafeMemberError(f"member {shown!r} has an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeMemberError(f"member {shown!r} reaches outside the folder ('..')")
    if not parts:
        raise UnsafeMemberError(f"member {shown!r} names no file")
    path = "/".join(parts)
    if len(path) > settings.upload_max_path_chars:
        raise UnsafeMemberError(
            f"member {shown!r} has a path longer than {settings.upload_max_path_chars} characters "
            "(TONK_UPLOAD_MAX_PATH_CHARS)"
        )
    if len(parts) > settings.upload_max_depth:
        raise UnsafeMemberError(
            f"member {shown!r} is more than {settings.upload_max_depth} folders deep (TONK_UPLOAD_MAX_DEPTH)"
        )
    return path


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
    session: Session, owner: Owner, archive: bytes, settings: Settings, found: Inspected | None = None
) -> tuple[Upload, Manifest]:
    """Check ``archive`` (unless ``found`` is its inspection) and store it once, by its SHA-256;
    flushes, never commits. Raises an UploadRefusedError or InvalidManifestError subclass,
    storing nothing, on a bad archive."""
    if found is None:
        found = inspect_archive(archive, settings)
    upload = session.get(Upload, found.sha256)
    if upload is None:
        upload = Upload(
            sha256=found.sha256,
            owner_id=owner.id,
            archive=archive,
            size=found.size,
            files=found.files,
            unpacked_size=found.unpacked_size,
            manifest=found.manifest_json,
        )
        session.add(upload)
        session.flush()
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
    "NotAnArchiveError",
    "TooManyFilesError",
    "UnpackedTooLargeError",
    "UnsafeMemberError",
    "UploadRefusedError",
    "UploadTooLargeError",
    "inspect_archive",
    "manifest_of",
    "parse_bot_table",
    "read_manifest",
    "store_upload",
    "unpack",
    "walk",
]
