"""Building an upload once into a bundle, and handing the bundle to any worker.

A *bundle* is a folder::

    code/         the upload's files, unpacked (arena/bots/uploads.py checks them again)
    deps/         a Python bot's declared dependencies (pip --target), else empty
    launch.json   how it starts (arena.sandbox.launch.Launch.to_json)

Dependencies come only from the operator's index (``Settings.build_index_url``; none set:
a bot declaring any is refused "this arena installs no dependencies"), only when each is on
the allow-list (``build_allowed_packages``, when set), pinned (``NAME==VERSION``), as wheels
(``--only-binary=:all:``: no code of the upload or of a package runs at build time) and
without their own dependencies (``--no-deps``: the bot lists every distribution it needs,
so the allow-list means what it says). pip ignores every pip configuration of the machine.
A build has ``build_time_limit_s``; one still running then is killed with its process group.
A bot that runs another language brings its dependencies in its upload (e.g. a vendored
``node_modules``): its build only unpacks it.

The bundle is stored as a tar.gz with its SHA-256 in a :class:`Build` row, with the build's
log (bounded, cleaned). An upload is built once: the next request reuses its ``ok`` build
(a failed one is tried again). A build works in a temporary folder under the data dir's
``builds/``, removed when it ends whatever the outcome. :func:`fetch_bundle` gives a worker
on any machine the bundle, unpacked into its cache by the artifact's SHA-256 after checking
the bytes against it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.bots.uploads import Manifest, manifest_of, unpack
from arena.config import Settings
from arena.errors import NotFoundError, UnprocessableError
from arena.sandbox.launch import Launch
from arena.store.models import Build, Upload
from arena.text import clean_text

#: Characters of a build log kept (its end: where the error is), and quoted in a refusal.
BUILD_LOG_LIMIT: Final = 64 * 1024
REFUSAL_TAIL: Final = 1500
OK, FAILED = "ok", "failed"

_NAME = re.compile(r"[-_.]+")


class BuildFailedError(UnprocessableError):
    """The build failed; the message quotes the end of its log, ``details`` names the build."""

    code = "build_failed"


class BuildTimeLimitError(BuildFailedError):
    code = "build_time_limit"


class DependencyNotAllowedError(UnprocessableError):
    """A declared dependency the arena will not install (none at all, or not on its list)."""

    code = "dependency_not_allowed"


class BundleNotFoundError(NotFoundError):
    code = "bundle_not_found"


class BundleCorruptError(UnprocessableError):
    """A stored bundle whose bytes do not match their SHA-256: never unpacked."""

    code = "bundle_corrupt"


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return _NAME.sub("-", name).lower()


def check_dependencies(manifest: Manifest, settings: Settings) -> None:
    """Refuse, before anything is stored or run, dependencies this arena does not install."""
    if not manifest.dependencies:
        return
    if not settings.build_index_url:
        raise DependencyNotAllowedError(
            f"this arena installs no dependencies, and the manifest declares {manifest.dependencies[0]!r}; "
            "vendor pure-Python code into the project instead, or ask the operator (TONK_BUILD_INDEX_URL)"
        )
    allowed = {normalize(p) for p in settings.build_allowed_packages}
    for requirement in manifest.dependencies:
        name = requirement.split("==")[0]
        if allowed and normalize(name) not in allowed:
            raise DependencyNotAllowedError(
                f"dependency {requirement!r} is not one this arena installs (allowed: "
                f"{', '.join(sorted(allowed))[:500]})"
            )


def ok_build(session: Session, upload_sha: str) -> Build | None:
    """The upload's successful build, if it has one."""
    query = select(Build).where(Build.upload_sha == upload_sha, Build.status == OK).order_by(Build.id)
    return session.scalars(query).first()


@dataclass(frozen=True)
class Built:
    """A build's outcome before it is stored: its log, and its bundle when it succeeded."""

    ok: bool
    log: str
    artifact: bytes | None
    artifact_sha256: str | None
    started_at: dt.datetime
    finished_at: dt.datetime


def run_build(archive: bytes, manifest: Manifest, settings: Settings) -> Built:
    """Build ``archive`` on disk, under the data dir's ``builds/``, touching no store: a
    build takes minutes, and no transaction may hold a write (SQLite's one writer) that long."""
    check_dependencies(manifest, settings)
    started = dt.datetime.now(dt.UTC)
    work = Path(settings.data_dir) / "builds"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="build-", dir=work) as tmp:
        bundle = Path(tmp) / "bundle"
        bundle.mkdir()
        ok, log = _build(archive, manifest, bundle, settings)
        artifact = _pack_bundle(bundle) if ok else None
    return Built(
        ok=ok,
        log=clean_log(log),
        artifact=artifact,
        artifact_sha256=hashlib.sha256(artifact).hexdigest() if artifact is not None else None,
        started_at=started,
        finished_at=dt.datetime.now(dt.UTC),
    )


def record_build(session: Session, upload_sha: str, built: Built) -> Build:
    """Store a build's outcome (flushed)."""
    build = Build(
        upload_sha=upload_sha,
        status=OK if built.ok else FAILED,
        log=built.log,
        artifact=built.artifact,
        artifact_sha256=built.artifact_sha256,
        started_at=built.started_at,
        finished_at=built.finished_at,
    )
    session.add(build)
    session.flush()
    return build


def build_upload(session: Session, upload: Upload, settings: Settings) -> Build:
    """The upload's ok build, or a new build of it (ok or failed), flushed."""
    existing = ok_build(session, upload.sha256)
    if existing is not None:
        return existing
    return record_build(session, upload.sha256, run_build(upload.archive, manifest_of(upload), settings))


def refusal(build: Build) -> BuildFailedError:
    """The refusal for a failed build, quoting the end of its log."""
    tail = build.log[-REFUSAL_TAIL:]
    kind = BuildTimeLimitError if "build time limit" in build.log[-400:] else BuildFailedError
    return kind(f"the build failed; the end of its log:\n{tail}", details={"build": build.id})


def _build(archive: bytes, manifest: Manifest, bundle: Path, settings: Settings) -> tuple[bool, str]:
    launch = manifest.launch
    log = [f"$ unpack the upload ({len(archive)} bytes)"]
    unpacked = unpack(archive, bundle / "code", settings)
    log.append(f"{unpacked} bytes of files")
    (bundle / "deps").mkdir()
    (bundle / "launch.json").write_text(json.dumps(launch.to_json(), sort_keys=True))
    if launch.kind == "python":
        missing = _missing_module(bundle / "code", launch)
        if missing:
            log.append(missing)
            return False, "\n".join(log)
    if not manifest.dependencies:
        log.append("no dependencies to install")
        return True, "\n".join(log)
    command = [
        sys.executable, "-m", "pip", "install", "--target", str(bundle / "deps"),
        "--only-binary=:all:", "--no-deps", "--no-cache-dir", "--no-input",
        "--disable-pip-version-check", "--no-compile", "--index-url", settings.build_index_url,
        *manifest.dependencies,
    ]  # fmt: skip
    log.append("$ pip install " + " ".join(manifest.dependencies))
    ok, output = run_limited(command, settings.build_time_limit_s, cwd=bundle)
    log.append(output)
    return ok, "\n".join(log)


def _missing_module(code: Path, launch: Launch) -> str | None:
    module = (launch.entry or "").split(":")[0]
    base = code.joinpath(*module.split("."))
    if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
        return None
    return (
        f"entry {launch.entry!r}: the upload has no {module.replace('.', '/')}.py (nor "
        f"{module.replace('.', '/')}/__init__.py) at its root"
    )


def run_limited(command: list[str], limit_s: float, *, cwd: Path) -> tuple[bool, str]:
    """Run ``command`` in its own process group with a clean environment (no pip
    configuration of this machine applies), at most ``limit_s`` seconds, then kill the whole
    group. (succeeded, its output's end)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PYTHONNOUSERSITE="1", HOME=str(cwd.parent))  # not in the bundle
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        started = time.monotonic()
        try:
            code = process.wait(timeout=limit_s)
            note = "" if code == 0 else f"\nexit status {code}"
        except subprocess.TimeoutExpired:
            _kill_group(process)
            code = -1
            note = f"\nkilled: the build time limit is {limit_s:g} s (TONK_BUILD_TIME_LIMIT_S)"
        finally:
            _kill_group(process)  # whatever it left behind in its group
        out.seek(0, io.SEEK_END)
        size = out.tell()
        out.seek(max(0, size - 4 * BUILD_LOG_LIMIT))
        text = out.read().decode("utf-8", "replace")
    took = time.monotonic() - started
    return code == 0, f"{text.rstrip()}{note}\n({took:.1f} s)"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def clean_log(log: str) -> str:
    """The log's end, at most BUILD_LOG_LIMIT characters, controls removed but line breaks
    kept (arena/text.py's rule, line by line)."""
    tail = log[-BUILD_LOG_LIMIT:]
    lines = [clean_text(line, 1000) if line.strip() else "" for line in tail.splitlines()]
    text = "\n".join(lines)
    return text[-BUILD_LOG_LIMIT:]


def _pack_bundle(bundle: Path) -> bytes:
    """The bundle as a tar.gz that depends on its files only (names sorted, no times or
    owners), so its SHA-256 names its content."""
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for path in sorted(bundle.rglob("*")):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(bundle).as_posix())
            if not (info.isreg() or info.isdir()):
                continue  # pip makes no links; nothing else belongs in a bundle
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            info.mode = 0o755 if info.isdir() or info.mode & 0o111 else 0o644
            if info.isreg():
                with path.open("rb") as data:
                    tar.addfile(info, data)
            else:
                tar.addfile(info)
    return raw.getvalue()


@contextlib.contextmanager
def staged_bundle(built: Built, settings: Settings) -> Iterator[Path]:
    """A new build's bundle, unpacked for its admission check in a private folder under the
    data dir's ``builds/`` and removed whatever happens: a bundle that never becomes a version
    never reaches ``bundles/``, which holds only stored builds' bundles (``tonk db gc`` removes
    what a killed process left in either)."""
    if built.artifact is None or built.artifact_sha256 is None:
        raise BundleNotFoundError("a failed build has no bundle")
    work = Path(settings.data_dir) / "builds"
    work.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="check-", dir=work))
    try:
        folder.chmod(0o755)  # mkdtemp's 0700 would keep the sandbox's own uid out
        yield unpack_bundle(built.artifact, built.artifact_sha256, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bundle_cache(settings: Settings) -> Path:
    """Where a worker keeps the bundles it fetched: its data dir's ``bundles/``."""
    return Path(settings.data_dir) / "bundles"


def fetch_bundle(session: Session, build_id_or_sha: int | str, cache_dir: Path) -> Path:
    """The unpacked bundle of a build (its id, its artifact's SHA-256, or its upload's SHA-256
    for that upload's ok build), from ``cache_dir`` when there, else from the store: the bytes
    are checked against their SHA-256 (BundleCorruptError, nothing cached) and unpacked into a
    temporary folder renamed into place, so a reader never sees half a bundle."""
    sha = _artifact_sha(session, build_id_or_sha)
    target = cache_dir / sha
    if (target / "launch.json").is_file():
        return target
    artifact = session.scalars(select(Build.artifact).where(Build.artifact_sha256 == sha)).first()
    return unpack_bundle(artifact, sha, cache_dir)


def unpack_bundle(artifact: bytes | None, sha: str, cache_dir: Path) -> Path:
    """``cache_dir/SHA``: the bundle ``artifact`` unpacked there once its bytes match ``sha``."""
    target = cache_dir / sha
    if (target / "launch.json").is_file():
        return target
    if artifact is None or hashlib.sha256(artifact).hexdigest() != sha:
        raise BundleCorruptError(
            f"the stored bundle {sha[:12]} does not match its SHA-256; rebuild the upload"
        )
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{sha[:12]}-", dir=cache_dir))
    try:
        with tarfile.open(fileobj=io.BytesIO(artifact), mode="r:gz") as tar:
            tar.extractall(tmp, filter="data")
        tmp.chmod(0o755)  # mkdtemp's 0700 would keep the sandbox's own uid out
        try:
            os.rename(tmp, target)
        except OSError:  # another process put it there first: theirs is as good
            if not (target / "launch.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _artifact_sha(session: Session, key: int | str) -> str:
    if isinstance(key, int):
        build = session.get(Build, key)
    else:
        build = session.scalars(select(Build).where(Build.artifact_sha256 == key)).first()
        build = build or ok_build(session, key)
    if build is None or build.status != OK or build.artifact_sha256 is None:
        raise BundleNotFoundError(f"no successful build {str(key)[:64]!r}")
    return build.artifact_sha256


def build_to_json(build: Build) -> dict[str, object]:
    """A build as its owner sees it (``GET /api/v1/bots/NAME/build``)."""
    return {
        "id": build.id,
        "upload": build.upload_sha,
        "status": build.status,
        "log": build.log,
        "bundle_sha256": build.artifact_sha256,
        "started_at": build.started_at.isoformat() if build.started_at else None,
        "finished_at": build.finished_at.isoformat() if build.finished_at else None,
    }


__all__ = [
    "BUILD_LOG_LIMIT",
    "BuildFailedError",
    "BuildTimeLimitError",
    "Built",
    "BundleCorruptError",
    "BundleNotFoundError",
    "DependencyNotAllowedError",
    "build_to_json",
    "build_upload",
    "bundle_cache",
    "check_dependencies",
    "fetch_bundle",
    "ok_build",
    "record_build",
    "refusal",
    "run_build",
    "run_limited",
    "staged_bundle",
    "unpack_bundle",
]
