"""How many hosted bots a machine runs at once: sandbox slots shared by its workers.

A hosted seat's capacity is not its author's to declare: the arena starts the process, so what
bounds its matches in flight is the worker machine's CPU. Without a bound, a pool of 32 match
threads per process starts 64 sandboxes at once on two cores, and every match then crawls:
`bench/hosted.py` measured 0.72 matches/s with 64 sandboxes in flight against 1.98 with 8.

A slot is a file in ``<sandbox root>/slots/`` held under an exclusive ``flock`` for the
match. The lock belongs to the open file, so it is shared fairly by the threads of one process
and by the worker processes of one machine, and the kernel lets go of it when its holder dies
(kill -9 included): no slot is ever leaked. ``TONK_SANDBOX_SLOTS`` sets the number (default:
four per core).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

#: Seconds between looks for free slots (with jitter, so waiters do not move in step).
POLL_S: Final = 0.02
#: Slots per core when ``TONK_SANDBOX_SLOTS`` is not set.
PER_CORE: Final = 4


def slot_count(environ: Mapping[str, str] | None = None) -> int:
    """``TONK_SANDBOX_SLOTS``, else four per core; a malformed value is a ValueError naming it."""
    env = os.environ if environ is None else environ
    raw = env.get("TONK_SANDBOX_SLOTS", "").strip()
    if not raw:
        return PER_CORE * (os.cpu_count() or 1)
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"environment variable TONK_SANDBOX_SLOTS must be a number, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"environment variable TONK_SANDBOX_SLOTS must be positive, got {raw!r}")
    return value


def _try_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def sandbox_slots(root: Path, wanted: int, total: int, *, patience_s: float = 600.0) -> Iterator[int]:
    """Hold ``wanted`` slots of ``total`` (all at once, or a match of two waiting for its second
    seat's slot could hold one that another such match needs) for the ``with`` block; yields
    how many are held. ``wanted`` beyond ``total`` takes them all. After ``patience_s`` without
    enough, the match plays anyway with what it holds: a limit is for throughput, and a match
    must not wait forever on a busy machine."""
    wanted = max(0, min(wanted, total))
    folder = root / "slots"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    held: list[int] = []
    give_up = time.monotonic() + patience_s
    try:
        while wanted:
            order = random.sample(range(total), total)
            for index in order:
                fd = _try_lock(folder / str(index))
                if fd is not None:
                    held.append(fd)
                    if len(held) == wanted:
                        break
            if len(held) == wanted or time.monotonic() > give_up:
                break
            for fd in held:  # all or none: hand back the partial take and look again
                os.close(fd)
            held.clear()
            time.sleep(POLL_S * (0.5 + random.random()))
        yield len(held)
    finally:
        for fd in held:
            os.close(fd)
