"""Archives for the upload tests: well-formed bot projects and every kind of bad member."""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Iterable, Mapping

MANIFEST = '[bot]\nentry = "tiny_bot:TinyBot"\n'
BOT = """from sdk.bot import Bot


class TinyBot(Bot):
    name = "tiny"
    author = "tests"

    def act(self, obs):
        return self.rng.randrange(len(obs.legal_actions))
"""


def project(
    extra: Mapping[str, str | bytes] | None = None, manifest: str | None = MANIFEST
) -> dict[str, bytes]:
    files: dict[str, str | bytes] = {"tiny_bot.py": BOT}
    if manifest is not None:
        files["tonk.toml"] = manifest
    files.update(extra or {})
    return {name: data.encode() if isinstance(data, str) else data for name, data in files.items()}


def tar_gz(files: Mapping[str, bytes], extra: Iterable[tarfile.TarInfo] = ()) -> bytes:
    """The files (name -> bytes) as a .tar.gz, then the ``extra`` members (links, devices...)."""
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra:
            tar.addfile(info)
    return raw.getvalue()


def member(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info


def bomb(unpacked: int) -> bytes:
    """One file of ``unpacked`` zero bytes: a tiny archive that unpacks huge."""
    raw = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as gz,
        tarfile.open(fileobj=gz, mode="w") as tar,
    ):
        info = tarfile.TarInfo("tonk.toml")
        info.size = len(MANIFEST)
        tar.addfile(info, io.BytesIO(MANIFEST.encode()))
        info = tarfile.TarInfo("zeros.bin")
        info.size = unpacked
        tar.addfile(info, _Zeros(unpacked))
    return raw.getvalue()


class _Zeros(io.RawIOBase):
    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: object) -> int:
        view = memoryview(buffer)  # type: ignore[arg-type]
        n = min(len(view), self.left)
        view[:n] = bytes(n)
        self.left -= n
        return n


def tar(files: Mapping[str, bytes], *, end: bool = True) -> bytes:
    """The files as an uncompressed tar, as Python's tarfile writes it (two zero blocks, then
    zeros to the 10240-byte record); ``end=False``: cut right after the last member."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        members_end = archive.offset
    return raw.getvalue() if end else raw.getvalue()[:members_end]


def gz(data: bytes, level: int = 6) -> bytes:
    """``data`` as one gzip member (no name, no time)."""
    return gzip.compress(data, compresslevel=level, mtime=0)
