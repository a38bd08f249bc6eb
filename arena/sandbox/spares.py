"""Fast starts that carry nothing: a match's fresh sandbox, started before the match asks.

A fresh sandbox per match stays the default (``TONK_SANDBOX_MEMORY=match``, arena/play/
hosted.py). Its start is forked from the bot's template where that path is taken (arena/
sandbox/template.py: tens of milliseconds of CPU instead of ~200), else a sandbox of its own;
either way the match need not wait for it. When a match takes a sandbox for a bot version
(bundle, launch, limits), the worker starts the next one in the background, and the bot's
next match on this worker takes that **spare**, already serving: its start is only the
handshake (issue #37).

A spare is a sandbox like any other (the same namespaces, private ``/tmp`` and ``/dev/shm``,
system-call filter, limits and control group) that no match has used: nothing of one match
reaches the next, by construction. It waits frozen (arena/sandbox/freeze.py): it uses no CPU
until its match's first call.

What it costs: one sandbox's memory per bot version that played on the worker lately
(``TONK_SANDBOX_SPARES`` of them at most, the least recently used closed first; 0 turns the
spares off), each closed once unused for ``IDLE_S``. A spare whose bot died while it waited
is replaced by a start there and then; one that failed to start fails the match that takes
it, with the same error a start there and then would have given.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from arena.sandbox.launch import Launch
from arena.sandbox.limits import Limits
from arena.sandbox.runner import Sandbox
from arena.sandbox.template import TEMPLATES

#: Spares kept per worker process when ``TONK_SANDBOX_SPARES`` is not set.
DEFAULT_SPARES: Final = 8
MAX_SPARES: Final = 256
#: How long a spare is kept unused before it is closed.
IDLE_S: Final = 60.0

Key = tuple[Path, Launch, Limits]


def spare_count(environ: Mapping[str, str] | None = None) -> int:
    """``TONK_SANDBOX_SPARES``: sandboxes kept started ahead of their match (0: none)."""
    raw = (os.environ if environ is None else environ).get("TONK_SANDBOX_SPARES", "").strip()
    if not raw:
        return DEFAULT_SPARES
    what = "environment variable TONK_SANDBOX_SPARES must be"
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{what} a whole number, got {raw!r}") from None
    if not 0 <= value <= MAX_SPARES:
        raise ValueError(f"{what} from 0 to {MAX_SPARES}, got {raw!r}")
    return value


def fresh(bundle: Path, launch: Launch, limits: Limits) -> Sandbox:
    """A new sandbox, started: forked from the bot's template where that path is taken
    (arena/sandbox/template.py: tens of milliseconds of CPU), else a sandbox of its own."""
    forked = TEMPLATES.start(bundle, launch, limits)
    box = forked if forked is not None else Sandbox(bundle, launch, limits=limits).start()
    # A spare waits frozen until its match's first call (arena/sandbox/freeze.py): it thinks
    # nothing for free; its start-up CPU is charged now (over its budget: SandboxStartError).
    box.freeze_between_calls()
    return box


def _spare(bundle: Path, launch: Launch, limits: Limits) -> Sandbox:
    """A spare: started, then frozen until its match's first call (arena/sandbox/freeze.py),
    so it thinks on no one's clock while it waits, and only what its start used is charged to
    its start-up budget (over it: SandboxStartError, for the match that takes it)."""
    box = fresh(bundle, launch, limits)
    try:
        box.freeze_between_calls()
    except BaseException:
        box.close()
        raise
    return box


@dataclass(slots=True)
class _Spare:
    future: Future[Sandbox]
    made: float = field(default_factory=time.monotonic)


def _discard(spare: _Spare) -> None:
    """Close a spare no match will take (once it has started, if it is still starting)."""

    def close(future: Future[Sandbox]) -> None:
        with contextlib.suppress(Exception):  # a start that failed has closed itself
            future.result().close()

    spare.future.add_done_callback(close)


class Spares:
    """The spares of one worker process, by bot version (see the module's docstring)."""

    def __init__(self, capacity: int | None = None):
        self._capacity = capacity  # None: TONK_SANDBOX_SPARES, read at each take
        self._lock = threading.Lock()
        self._kept: OrderedDict[Key, list[_Spare]] = OrderedDict()  # least recently used first
        self._starter: ThreadPoolExecutor | None = None
        self._janitor: threading.Thread | None = None
        self._closed = threading.Event()
        self.hits = 0  # takes served by a spare
        self.misses = 0  # takes that started their sandbox there and then

    def capacity(self) -> int:
        return spare_count() if self._capacity is None else self._capacity

    def take(self, bundle: Path, launch: Launch, limits: Limits) -> Sandbox:
        """A started sandbox no match has used, for one match (the caller closes it): a spare
        if one is kept (waited for if it is still starting), else one started now. Once it
        serves, the bot's next spare is started in the background."""
        capacity = self.capacity()
        if capacity == 0:
            return fresh(bundle, launch, limits)
        key: Key = (Path(bundle).resolve(), launch, limits)
        with self._lock:
            spares = self._kept.get(key, [])
            spare = spares.pop(0) if spares else None
            if not spares:
                self._kept.pop(key, None)
        box = self._claim(spare) if spare is not None else None
        if box is None:
            box = fresh(bundle, launch, limits)
            self.misses += 1
        else:
            self.hits += 1
        # Only after a start that served: a bot that does not start costs one start a match,
        # as it did before there were spares.
        with self._lock:
            self._kept.setdefault(key, []).append(_Spare(self._start_in_background(key)))
            self._kept.move_to_end(key)  # most recently used last
            self._trim(capacity)
        self._ensure_janitor()
        return box

    def _claim(self, spare: _Spare) -> Sandbox | None:
        """The spare's sandbox, or None if its bot died while it waited (its start's error,
        a SandboxStartError, is raised as a start there and then would raise it)."""
        box = spare.future.result()
        if box.process is None or box.process.poll() is not None:
            box.close()
            return None
        return box

    def _start_in_background(self, key: Key) -> Future[Sandbox]:
        if self._starter is None:
            self._starter = ThreadPoolExecutor(2, thread_name_prefix="tonk-sandbox-spare")
        bundle, launch, limits = key
        return self._starter.submit(_spare, bundle, launch, limits)

    def _trim(self, capacity: int) -> None:
        """Close the least recently used spares beyond ``capacity`` (lock held)."""
        count = sum(len(v) for v in self._kept.values())
        while count > capacity and self._kept:
            key, spares = next(iter(self._kept.items()))
            _discard(spares.pop(0))
            count -= 1
            if not spares:
                del self._kept[key]

    def _expire(self) -> None:
        now = time.monotonic()
        with self._lock:
            for key, spares in list(self._kept.items()):
                for spare in [s for s in spares if now - s.made > IDLE_S]:
                    spares.remove(spare)
                    _discard(spare)
                if not spares:
                    del self._kept[key]

    def _ensure_janitor(self) -> None:
        if self._janitor is None or not self._janitor.is_alive():
            self._closed.clear()
            self._janitor = threading.Thread(target=self._sweep, name="tonk-sandbox-spares", daemon=True)
            self._janitor.start()

    def _sweep(self) -> None:
        while not self._closed.wait(IDLE_S / 4):
            self._expire()

    def kept(self) -> int:
        """Spares kept now, started or starting."""
        with self._lock:
            return sum(len(v) for v in self._kept.values())

    def wait_started(self, timeout_s: float = 60.0) -> None:
        """Until every kept spare has finished starting (well or not)."""
        with self._lock:
            futures = [s.future for v in self._kept.values() for s in v]
        deadline = time.monotonic() + timeout_s
        for future in futures:
            with contextlib.suppress(Exception):
                future.exception(timeout=max(0.0, deadline - time.monotonic()))

    def close_all(self) -> None:
        """Close every spare, waiting for those still starting."""
        with self._lock:
            kept, self._kept = [s for v in self._kept.values() for s in v], OrderedDict()
        self._closed.set()
        for spare in kept:
            with contextlib.suppress(Exception):  # a start that failed has closed itself
                spare.future.result(timeout=120).close()


#: The worker process's spares (arena/play/hosted.py takes its match sandboxes from them).
SPARES = Spares()


def close_all() -> None:
    """Close this process's spares and templates (arena/sandbox/template.py), waiting for
    them: at a worker process's end, which need not run ``atexit`` (a pool process leaves by
    ``os._exit``), rather than leave them to the kernel's slower end of their namespaces."""
    SPARES.close_all()
    TEMPLATES.close_all()


atexit.register(close_all)
