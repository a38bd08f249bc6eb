"""What a hosted bot may use, per sandbox (one match by default): docs/operator-guide.md.

Every limit is an environment setting of the worker (``TONK_SANDBOX_*``). Memory, processes
and CPU are enforced by a control group when the worker may make one (root, cgroup v1 or
v2: arena/sandbox/cgroups.py), which counts every process of the sandbox together; without
one, by resource limits on each process (``RLIMIT_AS``, ``RLIMIT_NPROC``), which a bot can
only spread over its processes, never raise.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Final

#: What a hosted bot's process may outlive (``TONK_SANDBOX_MEMORY``, arena/play/hosted.py):
#: only ``match`` leaves it nothing to remember of a deal's other seat rotations.
MEMORY_SCOPES: Final = ("match", "deal", "worker")


def memory_scope(environ: Mapping[str, str] | None = None) -> str:
    """``TONK_SANDBOX_MEMORY``: match (default), deal or worker."""
    raw = (os.environ if environ is None else environ).get("TONK_SANDBOX_MEMORY", "").strip() or "match"
    if raw not in MEMORY_SCOPES:
        raise ValueError(f"TONK_SANDBOX_MEMORY must be one of {', '.join(MEMORY_SCOPES)}, got {raw!r}")
    return raw


def sandbox_nice(environ: Mapping[str, str] | None = None) -> int:
    """``TONK_SANDBOX_NICE``: the nice value every sandbox runs at (default 0), whatever the
    worker's own: a worker started under ``nice`` must not slow its bots' decisions."""
    raw = (os.environ if environ is None else environ).get("TONK_SANDBOX_NICE", "").strip() or "0"
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(
            f"environment variable TONK_SANDBOX_NICE must be a whole number, got {raw!r}"
        ) from None
    if not -20 <= value <= 19:
        raise ValueError(f"environment variable TONK_SANDBOX_NICE must be from -20 to 19, got {raw!r}")
    return value


_SECONDS: Final = ("start_s", "start_cpu_s")


@dataclass(frozen=True, slots=True)
class Limits:
    #: Memory of all the sandbox's processes together (without a control group: address
    #: space of each process, which Python and gRPC need about 400 MB of to start).
    memory_mb: int = 1024
    #: Processes and threads at once (gRPC servers run a dozen threads).
    processes: int = 64
    #: Open files per process.
    open_files: int = 256
    #: Size of the private ``/tmp`` (memory-backed), and the largest file the bot may write.
    tmp_mb: int = 64
    #: Size of its ``/dev/shm`` (memory-backed): POSIX shared memory, capped on its own.
    shm_mb: int = 64
    #: Size of the socket's folder ``/run/tonk`` (memory-backed): it holds one socket.
    run_mb: int = 1
    #: CPU seconds per process over the whole match: a backstop; each decision is charged
    #: its CPU time by the referee's clock (arena/play/hosted.py).
    cpu_s: int = 600
    #: What the bot prints (stdout and stderr) that is kept per match; the rest is counted.
    output_kb: int = 256
    #: Seconds from the start of the sandbox to the bot answering on its socket.
    start_s: float = 30.0
    #: The start-up budget: CPU seconds of all its processes from launch to serving (imports,
    #: loading), charged like a decision; over it, the bot faults (arena/sandbox/causes.py).
    start_cpu_s: float = 10.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Limits:
        """``TONK_SANDBOX_MEMORY_MB`` and so on; a malformed value is a ValueError naming it."""
        env = os.environ if environ is None else environ
        values: dict[str, float] = {}
        for f in fields(cls):
            name = "TONK_SANDBOX_" + f.name.upper()
            raw = env.get(name, "").strip()
            if not raw:
                continue
            try:
                value = float(raw) if f.name in _SECONDS else int(raw)
            except ValueError:
                raise ValueError(f"environment variable {name} must be a number, got {raw!r}") from None
            if value <= 0:
                raise ValueError(f"environment variable {name} must be positive, got {raw!r}")
            values[f.name] = value
        return cls(**values)  # type: ignore[arg-type]
