"""Pool processes die with the command that started them.

``tonk tournament run`` plays matches in a local process pool (arena/execution.py). Killed
with ``kill -9``, the command cannot shut its pool down, and the pool's processes, blocked on
a queue nobody will ever write to again, used to run on forever (about 195 MB) together with
multiprocessing's fork server and resource tracker. The pool's processes are children of the
fork server, not of the command, and the fork server only exits once they are gone (each one
holds the pipe whose end-of-file tells it its clients are gone), so nothing ended.

So each pool process calls :func:`die_with` first thing (the pool's initializer) with the
command's process id, and exits as soon as that process is gone: a thread waits on a pidfd
(Linux 5.3 and later: woken by the kernel, immune to a reused pid) or else checks every
``POLL_S``. With the pool gone, the fork server and the resource tracker see their pipes
close and exit too. A match being played is left ``running`` in the store;
``tonk tournament resume`` plays it again.
"""

from __future__ import annotations

import os
import select
import threading
from typing import Final

#: Seconds between looks at the command where no pidfd can be had.
POLL_S: Final = 1.0


def die_with(pid: int) -> None:
    """Exit this process (at once, without cleanup: it only plays matches) when ``pid`` exits."""
    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux, an old kernel, or already gone
        if not _alive(pid):
            os._exit(1)
        threading.Thread(target=_poll, args=(pid,), name="lifeline", daemon=True).start()
        return
    threading.Thread(target=_wait, args=(handle,), name="lifeline", daemon=True).start()


def _wait(handle: int) -> None:
    poller = select.poll()
    poller.register(handle, select.POLLIN)
    while not poller.poll():  # readable once the process has exited
        pass
    os._exit(1)


def _poll(pid: int) -> None:
    while _alive(pid):
        threading.Event().wait(POLL_S)
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


__all__ = ["die_with"]
