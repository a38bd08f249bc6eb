"""Stopping a long-running command on SIGTERM or SIGINT, whatever its main thread is doing.

Python runs a signal handler in the main thread between two bytecodes of whatever that thread
is running. A handler that raises (``KeyboardInterrupt``, rq's ``StopRequested``) lands
anywhere: inside a weakref callback or a finaliser the exception is printed as "Exception
ignored in ..." and dropped, and the process runs on (issue 35: `tonk dashboard` did not stop);
inside socketserver's accept path it closes a connection a handler thread is still reading.
A handler that takes a lock (``Event.set``, a server's ``stop``) deadlocks when the code it
interrupted holds that lock.

So :class:`StopSignals`' handler only notes the signal (an assignment: no lock, no raise), and
a watcher thread polling that note does the stopping: ``when_requested(server.shutdown)``.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any, Final

#: How often the watcher looks for a signal: the most a stop waits to begin.
POLL_S: Final = 0.1


class StopSignals:
    """SIGTERM and SIGINT (or ``signals``) ask the process to stop, by a note the program
    reads (``requested``, ``wait``) or a watcher acts on (``when_requested``), from
    ``install`` to ``close``."""

    def __init__(self, signals: Iterable[signal.Signals] = (signal.SIGTERM, signal.SIGINT)) -> None:
        self.signals = tuple(signals)
        self.received: list[int] = []  # appended to by the handler only: a list append is atomic
        self._previous: dict[int, Any] = {}
        self._closed = False

    def install(self) -> bool:
        """Install the handlers; False (nothing installed) outside the main thread, where
        Python cannot take signals."""
        if threading.current_thread() is not threading.main_thread():
            return False
        for signum in self.signals:
            self._previous[signum] = signal.signal(signum, self._note)
        return True

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)

    @property
    def requested(self) -> bool:
        return bool(self.received)

    def wait(self, timeout: float | None = None) -> bool:
        """Whether a stop was asked, waiting up to ``timeout`` seconds (None: until it is)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.received:
            left = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
            if left <= 0:
                return False
            time.sleep(left)
        return True

    def when_requested(self, action: Callable[[], None], name: str = "tonk-stop") -> threading.Thread:
        """Run ``action`` once, in a watcher thread, when a stop is asked (never after
        ``close``). The action may take locks and wait: it is not in a signal handler."""

        def watch() -> None:
            while not self._closed:
                if self.received:
                    action()
                    return
                time.sleep(POLL_S)

        watcher = threading.Thread(target=watch, name=name, daemon=True)
        watcher.start()
        return watcher

    def close(self) -> None:
        """End the watchers that have not acted, and put back the handlers ``install`` replaced."""
        self._closed = True
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()
