"""Small ``/proc`` files of a sandbox's tasks, read from kept descriptors.

The freezer reads each process's state twice a freeze, and the clock reads each thread's run
delay at every decision (arena/sandbox/freeze.py, arena/sandbox/clock.py): hundreds of times
a match. An open, a read and a close of a ``/proc`` file cost several times a ``pread`` of a
kept descriptor, and with them the worker's side of a freeze and a decision's run delay were
a large part of what a hosted match costs beyond a dialled one (``bench/hosted.py``).

A descriptor of ``/proc/<id>/...`` stays bound to the task it was opened for: once that task
is gone its reads fail (ESRCH), even if the number is reused. Such a read is tried once more
on a fresh open, so a new task under an old number is read, never taken for gone.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable


class ProcFiles:
    """``/proc/<id>/<name>`` of a changing set of tasks (processes or threads), each read by
    ``pread`` of a descriptor kept until :meth:`keep_only` drops it or :meth:`close`."""

    def __init__(self, name: str):
        self.name = name
        self._fds: dict[int, int] = {}
        self._lock = threading.Lock()
        self._closed = False

    def read(self, task: int) -> bytes | None:
        """The file's content now, or None if the task is gone."""
        with self._lock:
            if self._closed:
                return None
            fd = self._fds.get(task)
            if fd is not None:
                try:
                    return os.pread(fd, 4096, 0)
                except OSError:  # that task ended; the number may be another's now
                    del self._fds[task]
                    os.close(fd)
            try:
                fd = os.open(f"/proc/{task}/{self.name}", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return None
            try:
                data = os.pread(fd, 4096, 0)
            except OSError:
                os.close(fd)
                return None
            self._fds[task] = fd
            return data

    def keep_only(self, tasks: Iterable[int]) -> None:
        """Close the descriptors of tasks not in ``tasks`` (ended ones: bounded by what lives)."""
        alive = set(tasks)
        with self._lock:
            gone = [t for t in self._fds if t not in alive]
            for task in gone:
                with contextlib.suppress(OSError):
                    os.close(self._fds.pop(task))

    def close(self) -> None:
        """Close every descriptor; later reads answer None."""
        with self._lock:
            fds, self._fds, self._closed = self._fds, {}, True
        for fd in fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)


__all__ = ["ProcFiles"]
