"""Why a sandboxed bot stopped answering: which of its limits it ran into, named for its owner.

From outside, a bot the kernel killed for memory, or one whose gRPC threads could not start
because its processes were used up, only looks unreachable ("Stream removed", a timeout) and
its log just stops. The sandbox can tell which wall it hit (docs/operator-guide.md, "The
sandbox"), from the most certain evidence there is:

- with a control group, the kernel's own counters: ``oom_kill`` in ``memory.events`` (v1:
  ``memory.oom_control``) and ``max`` in ``pids.events`` (arena/sandbox/cgroups.py);
- the CPU it used before it served, against its start-up budget (``from_startup``);
- in every case, how bubblewrap ended (it exits with 128 + the signal that killed the bot):
  ``SIGXCPU`` is the CPU-seconds limit, ``SIGXFSZ`` the file-size limit;
- a writable place (``/tmp``, ``/dev/shm``, the socket folder) that is full, read through a
  handle on the mount the worker keeps for the sandbox's life;
- without a control group only: the threads of the sandbox at the limit now, or the error
  the runtime printed last when a resource limit refused it memory (``MemoryError``, ENOMEM)
  or a thread (EAGAIN): the kernel keeps no count to read there.

:func:`describe` makes the sentence that leads the fault's reason and ends the owner's log.
"""

from __future__ import annotations

import enum
import os
import re
import signal
from dataclasses import dataclass
from typing import Final

from arena.sandbox.limits import Limits

#: Prefix of every sentence: the owner's log page finds the cause in a fault's reason by it.
PREFIX: Final = "sandbox limit: "
#: A bound on the whole sentence (each part is short; four at most).
MAX_LENGTH: Final = 600


class Cause(enum.Enum):
    MEMORY = "out of memory"
    PROCESSES = "process limit"
    DISK = "disk cap"
    CPU = "CPU budget"
    STARTUP = "start-up budget"  # not "... CPU budget (": the log page finds causes by "<name> ("


@dataclass(frozen=True, slots=True)
class Counters:
    """The kernel's counts for one sandbox at a moment, and how much it had printed: what a
    cause is measured *since* (a kept sandbox may have hit a limit in an earlier match)."""

    oom_kills: int = 0
    pids_refused: int = 0
    printed: int = 0


@dataclass(frozen=True, slots=True)
class Finding:
    cause: Cause
    detail: str

    def text(self) -> str:
        return f"{self.cause.value} ({self.detail})"


def describe(findings: list[Finding]) -> str | None:
    """The sentence naming every limit hit, or None for none; bounded by ``MAX_LENGTH``."""
    if not findings:
        return None
    seen: dict[Cause, Finding] = {}
    for f in findings:
        seen.setdefault(f.cause, f)
    text = PREFIX + "; ".join(f.text() for f in seen.values())
    return text if len(text) <= MAX_LENGTH else text[: MAX_LENGTH - 1] + "\u2026"


def from_counters(before: Counters, now: Counters, limits: Limits) -> list[Finding]:
    """What the control group's counters say happened between ``before`` and ``now``."""
    found: list[Finding] = []
    if now.oom_kills > before.oom_kills:
        found.append(
            Finding(
                Cause.MEMORY,
                f"its processes used all {limits.memory_mb} MB of the sandbox's memory and the "
                "kernel killed one",
            )
        )
    if now.pids_refused > before.pids_refused:
        found.append(
            Finding(
                Cause.PROCESSES,
                f"all {limits.processes} processes and threads the sandbox may run were in use, "
                f"so {now.pids_refused - before.pids_refused} new ones were refused",
            )
        )
    return found


def from_exit(returncode: int | None, limits: Limits) -> list[Finding]:
    """What the way bubblewrap ended says (128 + the signal that ended the bot; a negative
    code is bubblewrap itself killed by that signal)."""
    if returncode is None:
        return []
    sig = returncode - 128 if returncode > 128 else -returncode if returncode < 0 else 0
    if sig == signal.SIGXCPU:
        return [Finding(Cause.CPU, f"a process used its {limits.cpu_s} s of CPU time and was ended")]
    if sig == signal.SIGXFSZ:
        return [Finding(Cause.DISK, f"a file reached the {limits.tmp_mb} MB a file may have")]
    return []


def from_startup(cpu_ns: int, limits: Limits) -> list[Finding]:
    """The start-up budget: the CPU its processes used from launch to serving (importing,
    loading: arena/sandbox/freeze.py), against ``Limits.start_cpu_s``."""
    if cpu_ns <= limits.start_cpu_s * 1e9:
        return []
    return [
        Finding(
            Cause.STARTUP,
            f"its processes used {cpu_ns / 1e9:.1f} s of CPU before serving; the start-up budget "
            f"is {limits.start_cpu_s:g} s",
        )
    ]


def full_places(places: dict[str, int], sizes_mb: dict[str, int]) -> list[Finding]:
    """The writable places (path inside -> an open handle on its mount) that are full."""
    found: list[Finding] = []
    for path, fd in places.items():
        try:
            st = os.fstatvfs(fd)
        except OSError:
            continue
        # Full: what is left is less than a 64th of it (a writer's last chunk that did not fit).
        if st.f_blocks and st.f_bavail * 64 < st.f_blocks:
            found.append(Finding(Cause.DISK, f"{path} is full: it holds {sizes_mb.get(path, 0)} MB"))
    return found


# What a runtime prints when a resource limit refused it: Python, C and C++ runtimes, Go, Node.
_MEMORY_TEXT: Final = re.compile(
    r"MemoryError|Cannot allocate memory|std::bad_alloc|out of memory|heap out of memory", re.IGNORECASE
)
_THREAD_TEXT: Final = re.compile(
    r"can't start new thread|Resource temporarily unavailable|pthread_create failed|"
    r"failed to create new OS thread|fork: retry",
    re.IGNORECASE,
)


def from_rlimits(tail: str, threads: int, limits: Limits) -> list[Finding]:
    """Without a control group: the sandbox's threads now (at the limit: forks are being
    refused) and the last thing it printed, if that is a runtime refused memory or a thread."""
    found: list[Finding] = []
    if threads >= limits.processes - 1 or _THREAD_TEXT.search(tail):
        found.append(
            Finding(
                Cause.PROCESSES,
                f"its processes and threads reached the {limits.processes} it may run, "
                "so no new one could start",
            )
        )
    if _MEMORY_TEXT.search(tail):
        found.append(
            Finding(Cause.MEMORY, f"a process reached the {limits.memory_mb} MB of memory it may map")
        )
    return found
