"""The test run's own temporary folder (loaded first by tests/conftest.py).

Everything the suite puts in the temporary folder, and everything the processes it starts put
there (pytest's ``tmp_path`` folders, multiprocessing's ``pymp-*``, a browser's profile, the
sandboxes' folder), goes under one folder, ``tonk-test-run-*``, made by the first pytest of a
run and removed when that pytest ends, so a run leaves nothing in ``/tmp``. Processes a test
kills never get to remove their own folders; here that costs nothing.

The run's folder is passed on in ``TONK_TEST_TMPDIR`` and ``TMPDIR``: pytest-xdist's workers and
a pytest that a test runs reuse it (and leave its removal to its maker). A command a test
starts with an environment built from scratch carries ``TMPDIR`` on (``"TMPDIR":
os.environ["TMPDIR"]`` in each such environment): a ``tonk dashboard`` or ``make demo`` killed
without it left its ``pymp-*`` folder in ``/tmp``.

``TONK_KEEP_TMP=1`` keeps it, to look at a failed test's files; its path is printed then.
A run killed by SIGKILL never gets to its exit handlers: its watchdog (tests/leakcheck.py,
arena/processes.py's ``watch_run``) removes the folders :func:`made` names.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

RUN_TMP = "TONK_TEST_TMPDIR"
_made: list[Path] = []


def enter() -> Path:
    """The run's folder, made (and its removal at exit arranged) if this is the run's first
    pytest; ``TMPDIR`` points at it from now on, for this process and what it starts."""
    inherited = os.environ.get(RUN_TMP)
    if inherited and Path(inherited).is_dir():
        folder = Path(inherited)
    else:
        folder = Path(tempfile.mkdtemp(prefix="tonk-test-run-"))
        # Sandboxed bots run as other users and must pass through it to their own folders.
        folder.chmod(0o711)
        os.environ[RUN_TMP] = str(folder)
        atexit.register(_remove, folder)
        _made.append(folder)
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again (it caches its first answer)
    return folder


def made() -> list[Path]:
    """The folders this pytest made and is to remove at its end (none if they are kept)."""
    return [] if os.environ.get("TONK_KEEP_TMP") else list(_made)


def _remove(folder: Path) -> None:
    if os.environ.get("TONK_KEEP_TMP"):
        print(f"\nthe run's temporary files are kept in {folder}", file=sys.stderr)
        return
    shutil.rmtree(folder, ignore_errors=True)
