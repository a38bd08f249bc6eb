"""The read-only runtime a sandboxed Python bot sees: the interpreter and the SDK with the
few packages it imports (gRPC, protobuf), nothing else of the worker.

Which files those are is asked of a fresh interpreter once per worker process (what
``import sdk.server`` loads), so the sandbox follows the installed SDK without a list to
keep. They are *staged*: linked (hard links, or copies across file systems) into a folder
under the sandbox root that the sandbox's own uid can reach (the worker's Python may live
under a private home such as ``/root``), keyed by what they are, once per machine. Inside,
the interpreter's installation appears at its own path and each package in
``/opt/tonk/site``: the arena's code, its settings, the store and the rest of the worker's
environment stay outside.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

SITE = "/opt/tonk/site"
LAUNCHER = "/opt/tonk/launcher.py"
_HERE = Path(__file__).resolve().parent

# Run in a fresh interpreter: the top-level packages and modules `sdk.server` needs, by
# where they live, outside the standard library.
_PROBE = r"""
import json, os, sys, sysconfig
import sdk.server, sdk.players, sdk.bot
checkout = os.path.realpath(sys.argv[1])
found = {}
for name in {n.split(".")[0] for n in list(sys.modules)}:
    top = sys.modules.get(name)
    if top is None or name == "__main__":
        continue
    path = getattr(top, "__file__", None)
    if path is None:  # a namespace package (google): its folder
        paths = list(getattr(top, "__path__", []))
        if not paths:
            continue  # built in
        path = paths[0]
    elif os.path.basename(path) == "__init__.py":
        path = os.path.dirname(path)
    path = os.path.realpath(path)
    if "site-packages" in path or path.startswith(checkout + os.sep):
        found[name] = path
print(json.dumps(found))
"""


@dataclass(frozen=True, slots=True)
class PythonRuntime:
    interpreter: str  # the real interpreter (not a virtual environment's link to it)
    prefix: str  # its installation (standard library and shared libraries), bound read-only
    packages: dict[str, str]  # top-level name -> file or folder on the worker


@functools.cache
def python_runtime() -> PythonRuntime:
    """What a sandboxed Python bot runs with; asked once per worker process."""
    checkout = str(_HERE.parent.parent)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, checkout],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    ).stdout
    packages = {
        k: v for k, v in json.loads(out).items() if k not in ("_distutils_hack",) and "__editable__" not in k
    }
    return PythonRuntime(os.path.realpath(sys.executable), os.path.realpath(sys.base_prefix), packages)


# Parts of the standard library a bot has no use for, left out of the staged copy.
_SKIP = {"site-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3"}
_stage_lock = threading.Lock()


def _link_tree(src: Path, dst: Path, skip: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """``dst`` as a copy of ``src`` made of hard links where the file system allows."""

    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    if src.is_file():
        link(str(src), str(dst))
        return
    shutil.copytree(
        src, dst, symlinks=True, copy_function=link, ignore=lambda _d, names: [n for n in names if n in skip]
    )


@functools.cache
def _fingerprint() -> str:
    """What the staged copy is of (paths, sizes, times of every file); once per worker
    process: the walk costs tens of milliseconds, a match's start must not pay it."""
    runtime = python_runtime()
    digest = hashlib.sha256(
        repr((runtime.interpreter, runtime.prefix, sorted(runtime.packages.items()))).encode()
    )
    for path in sorted(runtime.packages.values()):
        for root, _dirs, files in os.walk(path):
            for name in sorted(files):
                st = os.stat(os.path.join(root, name))
                digest.update(f"{root}/{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return digest.hexdigest()[:20]


@dataclass(frozen=True, slots=True)
class StagedRuntime:
    folder: Path
    runtime: PythonRuntime

    @property
    def interpreter(self) -> str:
        return self.runtime.interpreter

    def binds(self) -> list[tuple[str, str]]:
        """(staged path, sandbox path) pairs, all read-only."""
        pairs = [
            (str(self.folder / "prefix"), self.runtime.prefix),
            (str(self.folder / "launcher.py"), LAUNCHER),
        ]
        for name in sorted(self.runtime.packages):
            entry = Path(self.runtime.packages[name]).name
            pairs.append((str(self.folder / "site" / entry), f"{SITE}/{entry}"))
        return pairs


def staged_runtime(root: Path) -> StagedRuntime:
    """The Python runtime staged under ``root`` (made on first use; later calls reuse it)."""
    runtime = python_runtime()
    folder = root / f"runtime-{_fingerprint()}"
    with _stage_lock:
        if not folder.is_dir():
            tmp = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
            try:
                prefix = Path(runtime.prefix)
                (tmp / "prefix" / "bin").mkdir(parents=True)
                exe = Path(runtime.interpreter)
                _link_tree(exe, tmp / "prefix" / "bin" / exe.name)
                lib = prefix / "lib"
                (tmp / "prefix" / "lib").mkdir()
                for item in lib.iterdir():
                    if item.name.startswith("libpython") and not item.is_symlink():
                        _link_tree(item, tmp / "prefix" / "lib" / item.name)
                    elif item.name.startswith("libpython"):
                        os.symlink(os.readlink(item), tmp / "prefix" / "lib" / item.name)
                    elif item.name.startswith("python") and item.is_dir():
                        _link_tree(item, tmp / "prefix" / "lib" / item.name, _SKIP)
                _link_tree(_HERE / "launcher.py", tmp / "launcher.py")
                (tmp / "site").mkdir()
                for path in runtime.packages.values():
                    _link_tree(Path(path), tmp / "site" / Path(path).name, {"templates"})
                # Compiled once here: the sandbox is read-only, and compiling gRPC and protobuf
                # at every start would cost each match most of a second of CPU.
                subprocess.run(
                    [runtime.interpreter, "-I", "-m", "compileall", "-q", "-j", "0", str(tmp / "site")],
                    capture_output=True,
                    timeout=300,
                    check=False,
                )
                for d, _dirs, _files in os.walk(tmp):
                    os.chmod(d, 0o755)
                tmp.rename(folder)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                # Another worker process staged it first (a rename onto a folder that is not
                # empty fails with ENOTEMPTY, not FileExistsError): theirs is as good.
                if not folder.is_dir():
                    raise
    return StagedRuntime(folder, runtime)


def reachable_by_all(path: Path) -> bool:
    """Whether any user may walk to ``path`` (and list it): bubblewrap binds it as the sandbox's uid."""
    for folder in [path, *path.parents]:
        if folder.stat().st_mode & 0o001 == 0:
            return False
    return path.stat().st_mode & 0o004 != 0


def staged_bundle(bundle: Path, root: Path) -> Path:
    """``bundle`` itself if the sandbox's uid can reach it, else a linked copy under ``root``
    (made once per bundle folder and modification time: a built bundle never changes)."""
    bundle = bundle.resolve()
    if reachable_by_all(bundle):
        return bundle
    st = bundle.stat()
    key = hashlib.sha256(f"{bundle}:{st.st_ino}:{st.st_mtime_ns}".encode()).hexdigest()[:24]
    folder = root / "bundles" / key
    with _stage_lock:
        if not folder.is_dir():
            folder.parent.mkdir(mode=0o711, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".staging-", dir=folder.parent))
            try:
                _link_tree(bundle, tmp / "b")
                for d, _dirs, files in os.walk(tmp):
                    os.chmod(d, 0o755)
                    for f in files:
                        fp = os.path.join(d, f)
                        if not os.path.islink(fp):
                            os.chmod(fp, os.stat(fp).st_mode | 0o444)
                (tmp / "b").rename(folder)
            except OSError:
                if not folder.is_dir():  # not another process's copy, made first
                    raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return folder
