"""The match job as RQ runs it: ``arena.runtime.jobs.play_match_job(match_id, database_url)``.

A thin job, importable by dotted path, taking ids: the match's whole life is
arena.play.lifecycle's; this adds only what belongs to the queue. A match that must wait (its
bots have no free slot, or a connected bot is offline) goes back to the end of the queue
after a short pause, and a sequential test's next batch is queued from the worker, so an SPRT
goes on with nobody driving it. ``arena.jobs.play_match_job``, the path of jobs queued by
earlier releases, is this same function.
"""

from __future__ import annotations

import random
import time
from typing import Final

from sqlalchemy import select

from arena.play.lifecycle import Outcome, play_match
from arena.runtime.rq_backend import RqBackend
from arena.runtime.scheduling import unfinished_matches
from arena.store.db import session_scope
from arena.store.models import Match, Tournament
from arena.store.statuses import TournamentKind, TournamentStatus

#: A queued match whose bots are busy waits about this long before it goes back to the queue.
WAITING_PAUSE_S: Final = 0.5
WAITING_RETRIES: Final = 1_000_000


def play_match_job(
    match_id: int, database_url: str, hosted_addresses: dict[str, str] | None = None
) -> object:
    """Play match ``match_id`` of the store at ``database_url`` (arena.play.lifecycle.play_match);
    returns its :class:`~arena.play.lifecycle.Outcome`, or on RQ an rq ``Retry`` for a match
    that must wait. A driver (arena.runtime.driver.run_tournament) submits only matches whose
    bots have room, so a retry is rare."""
    outcome = play_match(match_id, database_url, hosted_addresses)
    current = _current_job()
    if current is None:
        return outcome
    if outcome == Outcome.WAITING:
        from rq import Retry

        time.sleep(WAITING_PAUSE_S * (0.5 + random.random()))
        return Retry(max=WAITING_RETRIES)
    if outcome == Outcome.DONE:
        _queue_next_batch(current, match_id, database_url, hosted_addresses)
    return outcome


def _current_job() -> object | None:
    try:
        from rq import get_current_job
    except ImportError:  # not on RQ: the embedded pool's driver queues the rest
        return None
    return get_current_job()


def _queue_next_batch(job: object, match_id: int, database_url: str, hosted: dict[str, str] | None) -> None:
    """Queue the pairs a sequential test just added (arena/tournaments/sprt.py); a driver, if
    any, would queue them too (job ids dedupe)."""
    with session_scope(database_url) as session:
        row = session.execute(
            select(Tournament.id, Tournament.kind, Tournament.status)
            .join(Match, Match.tournament_id == Tournament.id)
            .where(Match.id == match_id)
        ).one()
    if row.kind != TournamentKind.SPRT or row.status != TournamentStatus.RUNNING:
        return
    backend = RqBackend(database_url, "", job.origin, connection=job.connection, hosted_addresses=hosted)  # type: ignore[attr-defined]
    backend.submit(unfinished_matches(database_url, row.id))
