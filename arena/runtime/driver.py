"""The loop that drives a tournament to its end, and the sweep for tournaments nobody drives.

:func:`run_tournament` starts (or resumes) a tournament and, at each poll, submits to a
backend (arena/runtime/backends.py) the pending matches whose bots have room, recovers
abandoned ones every ``RECOVER_S``, and stops when nothing is left to play. A tournament
started without a driver staying to run it (the dashboard's API) is driven by a
:class:`Sweeper` in the process that started it: the same sweep, every ``RECOVER_S``, over
every running tournament of the store.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final

from sqlalchemy import and_, func, select

from arena.play.deal_end import overdue_deals, reveal_deals, reveal_overdue
from arena.play.lifecycle import MatchLife
from arena.queries.tournaments import Progress, tournament_progress
from arena.runtime.backends import Backend
from arena.runtime.scheduling import matches_to_start, pending_window, unfinished_matches
from arena.store.db import session_scope
from arena.store.models import Match, Tournament
from arena.store.statuses import MatchStatus, TournamentStatus
from arena.tournaments.lifecycle import finish_if_complete, get_tournament_row, start_tournament

log = logging.getLogger("tonk.execution")

#: Seconds between the driver's sweeps: abandoned matches are reset, and every pending match
#: without a job waiting for it (its job failed before claiming it, or the queue was lost in a
#: Redis restart) is queued again.
RECOVER_S: Final = 5.0
_UNFINISHED: Final = (MatchStatus.PENDING, MatchStatus.RUNNING)


def run_tournament(
    database_url: str,
    tournament_id: int,
    backend: Backend,
    *,
    wait: bool = True,
    on_progress: Callable[[Progress], None] | None = None,
    poll_s: float = 0.25,
) -> Progress:
    """Start (or resume) the tournament and play every match not done, retrying failed and
    abandoned ones (a finished tournament is left as it is).

    Without ``wait`` every pending match is submitted at once (nobody stays to pace them: a
    match whose bots are busy goes back to the queue, arena.play.lifecycle). With ``wait``, keep going
    until no match is pending or running (or the tournament is paused): at each poll submit
    the matches whose bots have free capacity (arena.runtime.scheduling), call ``on_progress`` with
    the counts from the store, and sweep for abandoned matches every ``RECOVER_S``. Returns
    the last progress."""
    with session_scope(database_url) as session:
        if get_tournament_row(session, tournament_id).status == TournamentStatus.FINISHED:
            return tournament_progress(session, tournament_id)  # nothing to do: not an error
        start_tournament(session, tournament_id)
        reset = MatchLife.recover(session, tournament_id, retry_failed=True)
    if not wait:
        backend.submit(unfinished_matches(database_url, tournament_id), replace=reset)
    else:
        dead = set(reset)  # their jobs are known dead: replace them when submitted
        _schedule(database_url, tournament_id, backend, dead)
    with session_scope(database_url) as session:
        # Paused after its last match was done: nothing to play, but it must still finish.
        finish_if_complete(session, tournament_id)
        progress = tournament_progress(session, tournament_id)
    if not wait:
        return progress
    swept = time.monotonic()
    while True:
        with session_scope(database_url) as session:
            progress = tournament_progress(session, tournament_id)
            status = get_tournament_row(session, tournament_id).status
        if on_progress is not None:
            on_progress(progress)
        if progress.unfinished == 0 or status != TournamentStatus.RUNNING:
            with session_scope(database_url) as session:  # a sequential test may add pairs here
                finish_if_complete(session, tournament_id)
                progress = tournament_progress(session, tournament_id)
                status = get_tournament_row(session, tournament_id).status
            if progress.unfinished == 0 or status != TournamentStatus.RUNNING:
                break
            backend.submit(unfinished_matches(database_url, tournament_id))  # its next batch
        now = time.monotonic()
        if now - swept >= RECOVER_S:
            swept = now
            with session_scope(database_url) as session:
                dead.update(MatchLife.recover(session, tournament_id))
            reveal_overdue(database_url, tournament_id, getattr(backend, "hosted", None))
        _schedule(database_url, tournament_id, backend, dead)
        pause = getattr(backend, "pause", None)  # a backend that can tell when a match ends
        if pause is not None:
            pause(poll_s)
        else:
            time.sleep(poll_s)
    reveal_overdue(database_url, tournament_id, getattr(backend, "hosted", None))
    with session_scope(database_url) as session:
        finish_if_complete(session, tournament_id)
    return _progress(database_url, tournament_id)


def _schedule(database_url: str, tournament_id: int, backend: Backend, dead: set[int]) -> int:
    """Submit the pending matches whose bots have room now; returns how many."""
    with session_scope(database_url) as session:
        pending = pending_window(session, tournament_id)
    # A backend that cannot tell (one that plays a match as it is submitted) has none queued.
    ask = getattr(backend, "queued", None)
    queued = ask([m for m in pending if m not in dead]) if ask is not None else set()
    with session_scope(database_url) as session:
        chosen = matches_to_start(session, pending, queued)
    replace = dead.intersection(chosen)
    dead.difference_update(chosen)
    return backend.submit(chosen, replace=replace)


class Sweeper:
    """The driver's sweep, in a background thread, for the tournaments nobody drives: every
    ``interval_s``, for each running tournament of the store, abandoned matches back to
    pending, then the pending matches whose bots have room submitted (what
    :func:`run_tournament` does at each poll), and a tournament whose matches are all done
    finished. Matches handed back to wait for an offline connected bot, matches of a pool
    process that died, and whole tournaments a restarted dashboard finds running are all
    queued again this way. A driver running at the same time does no harm: a match is
    claimed once, and RQ job ids are per match.

    ``backend`` is called for the backend the first time there is something to submit (so
    an idle process starts no pool)."""

    def __init__(self, database_url: str, backend: Callable[[], Backend], interval_s: float = RECOVER_S):
        self.database_url = database_url
        self.backend = backend
        self.interval_s = interval_s
        self._dead: dict[int, set[int]] = {}  # per tournament, as run_tournament's ``dead``
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tonk-sweeper", daemon=True)

    def start(self) -> Sweeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sweep()
            except Exception as exc:  # the store or queue away for a moment: next time
                log.warning("the tournament sweep failed: %s", exc)

    def sweep(self) -> int:
        """One sweep over the running tournaments; returns how many matches it submitted."""
        with session_scope(self.database_url) as session:
            unfinished = dict(
                session.execute(
                    select(Tournament.id, func.count(Match.id))
                    .outerjoin(
                        Match, and_(Match.tournament_id == Tournament.id, Match.status.in_(_UNFINISHED))
                    )
                    .where(Tournament.status == TournamentStatus.RUNNING)
                    .group_by(Tournament.id)
                ).all()
            )
        self._dead = {t: dead for t, dead in self._dead.items() if t in unfinished}
        submitted = 0
        for tournament_id, count in sorted(unfinished.items()):
            if self._stop.is_set():
                break
            # EndDeal of deals whose worker died before it claimed the notice: before the
            # tournament may finish (a finished one is not swept).
            self._reveal_overdue(tournament_id)
            if not count:  # its last match was recorded as it was paused and resumed, say
                with session_scope(self.database_url) as session:
                    finish_if_complete(session, tournament_id)
                continue
            dead = self._dead.setdefault(tournament_id, set())
            with session_scope(self.database_url) as session:
                dead.update(MatchLife.recover(session, tournament_id))
                pending = session.scalar(
                    select(Match.id)
                    .where(Match.tournament_id == tournament_id, Match.status == MatchStatus.PENDING)
                    .limit(1)
                )
            if pending is not None:  # all in play by live workers: nothing to do here
                submitted += _schedule(self.database_url, tournament_id, self.backend(), dead)
        return submitted

    def _reveal_overdue(self, tournament_id: int) -> None:
        with session_scope(self.database_url) as session:
            seeds = overdue_deals(session, tournament_id)
        if seeds:  # rare: only then is the backend (and its pool) wanted, for hosted bots
            reveal_deals(self.database_url, tournament_id, seeds, getattr(self.backend(), "hosted", None))


def _progress(database_url: str, tournament_id: int) -> Progress:
    with session_scope(database_url) as session:
        return tournament_progress(session, tournament_id)
