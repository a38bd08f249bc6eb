"""Packing a bot project for ``tonk submit --upload``: the folder as a .tar.gz.

The archive depends on the files alone (names sorted, no times, owners or permissions but
the executable bit), so packing the same folder twice gives the same bytes and the arena,
which stores uploads by their SHA-256, keeps one copy. Version control, virtualenvs and
caches are left out (:data:`SKIPPED`), and so is ``node_modules/.bin`` (npm's command
shims, symbolic links a running bot does not use); any other symbolic link is refused here rather than by the
arena, with its name. The arena's own checks (docs/bot-author-guide.md, "Uploading your
bot") decide the rest: sizes, file count, the manifest.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path
from typing import Final

#: Folder and file names never packed (anywhere in the tree).
SKIPPED: Final = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", "__pycache__", ".pytest_cache", ".mypy_cache",
    ".ruff_cache", ".tox", ".nox", ".DS_Store", ".idea", ".vscode",
})  # fmt: skip
SKIPPED_SUFFIXES: Final = (".pyc", ".pyo", ".egg-info")
MANIFESTS: Final = ("tonk.toml", "pyproject.toml")


class PackError(ValueError):
    """A folder that cannot be packed (no manifest, a symbolic link, not a folder)."""


def project_files(folder: Path) -> list[Path]:
    """The files and folders packed, relative to ``folder``, sorted."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        here = Path(root)
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not d.endswith(SKIPPED_SUFFIXES))
        if here.name == "node_modules":  # npm's command shims: links, and no part of a running bot
            dirs[:] = [d for d in dirs if d != ".bin"]
        for name in [*dirs, *files]:
            path = here / name
            if name in SKIPPED or name.endswith(SKIPPED_SUFFIXES):
                continue
            if path.is_symlink():
                raise PackError(
                    f"{path.relative_to(folder)} is a symbolic link; the arena takes plain files and "
                    "folders only (copy what it points to)"
                )
            if not (path.is_file() or path.is_dir()):
                raise PackError(f"{path.relative_to(folder)} is not a plain file or folder")
            found.append(path.relative_to(folder))
    return sorted(found, key=lambda p: p.as_posix())


def pack(folder: Path) -> bytes:
    """The project in ``folder`` as .tar.gz bytes; PackError if it is no bot project."""
    if not folder.is_dir():
        raise PackError(f"{folder} is not a folder")
    if not any((folder / name).is_file() for name in MANIFESTS):
        raise PackError(
            f"{folder} has no tonk.toml: the arena reads the bot's entry from it "
            '([bot] entry = "MODULE:CLASS", or command = [...]; tonk new writes one)'
        )
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for relative in project_files(folder):
            path = folder / relative
            info = tarfile.TarInfo(relative.as_posix())
            info.mtime = 0
            if path.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                continue
            info.size = path.stat().st_size
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            with path.open("rb") as data:
                tar.addfile(info, data)
    return raw.getvalue()


__all__ = ["SKIPPED", "PackError", "pack", "project_files"]
