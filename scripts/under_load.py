#!/usr/bin/env python3
"""Run pytest beside two busy loops per core (``make test-under-load``), so a test whose verdict
depends on how busy the machine is fails here rather than now and then on someone's laptop.

    scripts/under_load.py [pytest args...]     # e.g. tests/arena/play/test_time_accounting.py -x
    TONK_LOAD_LOOPS=2 scripts/under_load.py    # another number of loops (default: 2 x nproc)

The loops are killed however pytest ends (its exit, Ctrl-C, SIGTERM to this script), and each
dies with this script even if it is SIGKILLed: they and pytest are started by
arena/processes.py's ``spawn`` (PR_SET_PDEATHSIG), under this script's watchdog (``watch_run``),
as the tests start theirs: none outlives it. The exit status is pytest's
(128 + the signal, as a shell gives it, if a signal ended pytest)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from arena.processes import ensure_watched, spawn

ROOT = Path(__file__).resolve().parents[1]
BUSY = "while True: pass"


def main(args: list[str]) -> int:
    count = int(os.environ.get("TONK_LOAD_LOOPS") or 2 * (os.cpu_count() or 1))
    pytest = os.environ.get("PYTEST") or str(Path(sys.executable).with_name("pytest"))
    loops: list[subprocess.Popen[bytes]] = []
    tests: subprocess.Popen[bytes] | None = None

    def forward(signum: int, _frame: object) -> None:
        if tests is not None and tests.poll() is None:
            tests.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    ensure_watched()
    try:
        for _ in range(count):
            # A session of their own: a Ctrl-C at the terminal reaches pytest, not the loops
            # (they are ended below, once pytest has).
            loops.append(spawn([sys.executable, "-c", BUSY], start_new_session=True))
        print(f"under load: {count} busy loop(s) beside pytest", file=sys.stderr, flush=True)
        tests = spawn([pytest, *args], cwd=ROOT)
        while True:
            try:
                status = tests.wait()
                return 128 - status if status < 0 else status  # killed by a signal: as a shell says
            except KeyboardInterrupt:  # pytest had the Ctrl-C too: wait for it to finish
                continue
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
