"""Running ladders: the scheduler loop behind ``tonk ladder run``, on either backend.

:class:`LadderRunner` ticks every running ladder (or the ones named) every ``poll_s``: for
each, it takes or renews the ladder's lease and tops it up with tables
(arena/ladder/scheduler.py); if it holds the lease it also does the driver's work for the
ladder (arena/runtime/driver.py): matches abandoned by a dead worker back to pending, the
pending matches whose bots have room submitted to the backend, overdue EndDeal notices sent.
While it runs, a thread of its own probes the health of dialled bots found offline
(arena/bots/reachability.py), off the ticks: one back answering gets tables again.
Without the lease it only waits, ready to take over: run it on two machines and one
schedules while the other stands by; kill the first and the second takes over once the
lease expires (``lease_s``), recovering the matches the dead one's workers left running.

With the embedded backend the matches are played by this process's pool; with RQ by
``tonk worker`` processes anywhere (the runner only queues them: job ids are per match, so a
match is never queued twice). The store is the truth throughout: nothing a killed
scheduler or worker held is lost or counted twice (a match is claimed and recorded once,
arena/play/lifecycle.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import select

from arena.bots import reachability
from arena.config import load_settings
from arena.ladder.lease import LEASE_S, give_up, holder_id, lease_name
from arena.ladder.scheduler import Tick, tick
from arena.play import capacity
from arena.play.deal_end import reveal_overdue
from arena.play.lifecycle import MatchLife
from arena.runtime.backends import Backend
from arena.runtime.driver import _schedule
from arena.store.db import session_scope
from arena.store.models import Tournament
from arena.store.statuses import TournamentKind, TournamentStatus

log = logging.getLogger("tonk.ladder")

#: Seconds between ticks.
POLL_S = 1.0
#: Seconds between sweeps for abandoned matches (each tick would be needlessly often).
RECOVER_S = 5.0


@dataclass
class LadderRunner:
    database_url: str
    backend: Backend
    ladder_ids: Sequence[int] | None = None  # None: every running ladder of the store
    holder: str = field(default_factory=holder_id)
    lease_s: float = LEASE_S
    #: Seconds between rounds of health probes of offline dialled bots.
    probe_every_s: float = reachability.PROBE_EVERY_S
    #: Per ladder: its last tick, and the matches whose jobs are known dead.
    last: dict[int, Tick] = field(default_factory=dict)
    #: Per ladder: seconds its last tick took, the transaction's commit included, and of
    #: those, the CPU seconds of this thread (steadier on a busy machine: no waiting counted).
    last_s: dict[int, float] = field(default_factory=dict)
    last_cpu_s: dict[int, float] = field(default_factory=dict)
    _dead: dict[int, set[int]] = field(default_factory=dict)
    _held: set[int] = field(default_factory=set)
    _swept: dict[int, float] = field(default_factory=dict)

    def ladders(self) -> list[int]:
        with session_scope(self.database_url) as session:
            query = select(Tournament.id).where(
                Tournament.kind == TournamentKind.LADDER, Tournament.status == TournamentStatus.RUNNING
            )
            if self.ladder_ids is not None:
                query = query.where(Tournament.id.in_(list(self.ladder_ids)))
            return list(session.scalars(query.order_by(Tournament.id)))

    def step(self) -> int:
        """One tick of every ladder; returns how many matches were submitted."""
        submitted = 0
        for ladder_id in self.ladders():
            started, started_cpu = time.perf_counter(), time.thread_time()
            with session_scope(self.database_url) as session:
                result = tick(session, ladder_id, self.holder, capacity.capacities, lease_s=self.lease_s)
            self.last_s[ladder_id] = time.perf_counter() - started
            self.last_cpu_s[ladder_id] = time.thread_time() - started_cpu
            self.last[ladder_id] = result
            if not result.held:
                if ladder_id in self._held:
                    log.warning("ladder %s: lost the scheduler lease to another process", ladder_id)
                self._held.discard(ladder_id)
                continue
            dead = self._dead.setdefault(ladder_id, set())
            now = time.monotonic()
            if ladder_id not in self._held or now - self._swept.get(ladder_id, 0.0) >= RECOVER_S:
                # Taking over: the previous holder's abandoned matches (its failed ones too,
                # as a resume retries them) are played again.
                first = ladder_id not in self._held
                self._held.add(ladder_id)
                self._swept[ladder_id] = now
                with session_scope(self.database_url) as session:
                    dead.update(MatchLife.recover(session, ladder_id, retry_failed=first))
                reveal_overdue(self.database_url, ladder_id, getattr(self.backend, "hosted", None))
            submitted += _schedule(self.database_url, ladder_id, self.backend, dead)
        return submitted

    def run(
        self,
        stop: threading.Event | None = None,
        *,
        poll_s: float = POLL_S,
        on_step: Callable[[LadderRunner], None] | None = None,
    ) -> None:
        """Tick until ``stop`` is set; a failing tick (the store away for a moment) is logged
        and tried again. Gives up its leases on the way out, so a standby takes over at once."""
        stop = stop or threading.Event()
        done = threading.Event()
        prober = threading.Thread(
            target=self._probe_loop, args=(stop, done), name="tonk-ladder-probe", daemon=True
        )
        prober.start()
        try:
            while not stop.is_set():
                try:
                    self.step()
                except Exception as exc:
                    log.warning("ladder tick failed: %s", exc)
                if on_step is not None:
                    on_step(self)
                pause = getattr(self.backend, "pause", None)
                if pause is not None:
                    pause(poll_s)  # returns early when a match finishes: its slots refill at once
                else:
                    stop.wait(poll_s)
        finally:
            done.set()
            prober.join()  # a round is bounded: PROBES_PER_ROUND probes of PROBE_TIMEOUT_S, a few at a time
            self.release()

    def probe(self) -> dict[int, bool]:
        """One round of health probes of the dialled bots found offline (bot id -> answered)."""
        return reachability.probe_due(self.database_url, load_settings().allowed_bot_hosts)

    def _probe_loop(self, stop: threading.Event, done: threading.Event) -> None:
        """Probe rounds every ``probe_every_s`` until the runner stops; a failed round (the store
        away for a moment) is logged and tried again."""
        while not (stop.is_set() or done.is_set()):
            try:
                self.probe()
            except Exception as exc:
                log.warning("ladder: health probes failed: %s", exc)
            done.wait(self.probe_every_s)

    def release(self) -> None:
        for ladder_id in list(self._held):
            try:
                with session_scope(self.database_url) as session:
                    give_up(session, lease_name(ladder_id), self.holder)
            except Exception as exc:  # it expires by itself
                log.warning("ladder %s: lease not released (%s)", ladder_id, exc)
        self._held.clear()
