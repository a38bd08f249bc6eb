"""The heartbeat of a claimed match: proof that its worker is alive, and the running score.

A worker playing a match stamps ``matches.heartbeat_at`` (and the hands played, and each
seat's score so far for the live page) every :data:`HEARTBEAT_S` from a thread, and renews
its bots' capacity slots (arena.play.capacity) in the same transaction. A match whose stamp
is older than :data:`MATCH_LEASE_S` is presumed abandoned (arena.play.lifecycle recovers it).
The heartbeat writes no status: when its conditional stamp touches no row the match was
taken over, and it tells the referee to stop (:class:`MatchTakenError`).
"""

from __future__ import annotations

import logging
import threading
from typing import Final

from sqlalchemy import update

from arena.play import capacity
from arena.store.db import session_scope
from arena.store.models import Match, MatchSeat, utcnow
from arena.store.statuses import MatchStatus
from sdk.referee import HandLog

log = logging.getLogger("tonk.play")

#: Seconds between heartbeats of a running match.
HEARTBEAT_S: Final = 3.0
#: A running match whose heartbeat is older than this is presumed abandoned: ten missed beats.
MATCH_LEASE_S: Final = 30.0


class MatchTakenError(RuntimeError):
    """Raised inside the referee's hand callback to stop a match another worker took over."""


class Heartbeat:
    """Stamps the claimed match every HEARTBEAT_S from a thread; notices a takeover."""

    def __init__(self, database_url: str, match_id: int, worker: str):
        self.url = database_url
        self.match_id = match_id
        self.worker = worker
        self.hands = 0
        self.scores: list[int] = []  # the match score so far, for the live tournament page
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{match_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def on_hand(self, log_: HandLog, scores: list[int]) -> None:
        self.hands += 1
        self.scores = list(scores)
        if self.lost:
            raise MatchTakenError(f"match {self.match_id} was taken over by another worker")

    def beat(self) -> bool:
        """One stamp; False when the match is no longer this worker's (taken over)."""
        with session_scope(self.url) as session:
            stamped = session.execute(
                update(Match)
                .where(
                    Match.id == self.match_id,
                    Match.status == MatchStatus.RUNNING,
                    Match.worker == self.worker,
                )
                .values(heartbeat_at=utcnow(), hands_played=self.hands)
                .execution_options(synchronize_session=False)
            )
            if stamped.rowcount == 0:  # type: ignore[attr-defined]
                return False
            # The running score, shown while the match plays (the store hides a seat's score
            # from everything else until the match is done).
            for seat, score in enumerate(list(self.scores)):
                session.execute(
                    update(MatchSeat)
                    .where(MatchSeat.match_id == self.match_id, MatchSeat.seat == seat)
                    .values(score=score)
                    .execution_options(synchronize_session=False)
                )
            capacity.renew(session, self.match_id, self.worker)
        return True

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                if not self.beat():
                    self.lost = True
                    return
            except Exception as exc:  # a missed beat is survivable: the lease is ten beats long
                log.warning("match %s: heartbeat missed (%s)", self.match_id, exc)
