"""The match job, and the store-side steps that make it safe to run anywhere, any number of
times: on an RQ worker, in the embedded process pool, twice at once, or again after a crash.

``play_match_job(match_id, database_url)`` is the whole job (RQ imports it by dotted path):

0. **Wait** while a connected bot of the match is offline, within the tournament's grace
   period (arena/link/waiting.py): the match stays pending and the job returns ``waiting``.

1. **Claim** with one conditional UPDATE: ``pending -> running`` (or take over a ``running``
   match whose heartbeat went stale), only while the tournament is running, and in the same
   transaction a capacity slot of each of its bots (arena.capacity). A match that is done,
   or held by a live worker, is left alone: the job is a no-op; one whose bots are all busy
   stays pending (``waiting``) for the driver to submit again.
2. **Play** it under the referee, while a heartbeat thread stamps ``heartbeat_at`` (and the
   hands played so far) every few seconds. If the match is taken from us (we were presumed
   dead), the heartbeat notices and the play stops early.
3. **Record** result, seats, faults and replay in ONE transaction whose first statement is
   ``UPDATE matches SET status='done' ... WHERE id=:id AND status != 'done'``; if that
   touches no row, another worker recorded the match first and everything is rolled back.
   So a match is counted once, whoever races.
4. **Finish** the tournament if that was its last match (conditional again).
5. **Reveal** the deal if that was its last match: EndDeal to its bots (arena/deals.py).

A worker killed mid-match leaves its match ``running``. :func:`recover_matches` puts it back
to ``pending`` when its worker process is gone (same host) or its heartbeat is older than
``LEASE_S``; it is then played again from scratch: same seed, same deals.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import random
import socket
import threading
import time
import traceback
from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import and_, insert, or_, select, update
from sqlalchemy.orm import Session

from arena import capacity
from arena.addresses import redact_addresses
from arena.config import load_settings
from arena.db import dispose_engines, session_scope
from arena.deals import reveal_if_complete
from arena.errors import MatchNotFoundError
from arena.link.admission import attribute_to_latest
from arena.link.player import BotOfflineError, GatewayLostError
from arena.link.waiting import release, start_grace, wait_for_bots
from arena.match_runner import MatchPlan, load_plan, run_match, seat_stats
from arena.models import FaultRecord, Match, MatchSeat, Replay, Tournament, utcnow
from arena.replays import FORMAT, encode_logs
from arena.statuses import MatchStatus, TournamentStatus
from arena.text import REASON_LIMIT, clean_text
from arena.tournaments import finish_if_complete
from sdk.referee import Fault, HandLog, MatchResult

#: Seconds between heartbeats of a running match.
HEARTBEAT_S: Final = 3.0
#: A running match whose heartbeat is older than this is presumed abandoned.
LEASE_S: Final = 30.0
#: A queued match whose bots are busy waits about this long before it goes back to the queue.
WAITING_PAUSE_S: Final = 0.5
WAITING_RETRIES: Final = 1_000_000

#: FaultRecord.kind of a slow lifecycle notice (sdk.referee.SlowNotice): recorded, not charged.
SLOW: Final = "slow"
SLOW_DECISION: Final = {"StartMatch": -1, "EndHand": -2, "EndMatch": -3}

# What play_match_job returns (RQ keeps it as the job's result).
DONE, ALREADY_DONE, BUSY, NOT_RUNNING, LOST = "done", "already-done", "busy", "not-running", "lost"
#: The match waits: a bot of it has no free capacity, or a connected bot is offline (arena/link).
WAITING = "waiting"


class MatchTakenError(RuntimeError):
    """Raised inside the referee's hand callback to stop a match another worker took over."""


def play_match_job(
    match_id: int, database_url: str, hosted_addresses: dict[str, str] | None = None
) -> Any:
    """Play match ``match_id`` of the store at ``database_url`` unless it is done or being
    played; returns one of ``done``, ``already-done``, ``busy``, ``not-running``, ``lost``,
    ``waiting``.
    ``hosted_addresses`` (bot name -> HOST:PORT) reaches hosted bots served over gRPC.

    On RQ, a ``waiting`` match goes back to the end of the queue (an rq ``Retry``) after a
    short pause, so that nothing is lost when nobody drives the tournament (``--no-wait``,
    the dashboard); a driver (arena.execution.run_tournament) submits only matches whose
    bots have room, so this is rare."""
    outcome = _play(match_id, database_url, hosted_addresses)
    if outcome == WAITING:
        from rq import Retry, get_current_job

        if get_current_job() is not None:
            time.sleep(WAITING_PAUSE_S * (0.5 + random.random()))
            return Retry(max=WAITING_RETRIES)
    return outcome


def _play(match_id: int, database_url: str, hosted_addresses: dict[str, str] | None) -> str:
    _forget_inherited_engines()
    worker = worker_id()
    if wait_for_bots(database_url, match_id, load_settings().offline_grace_s):
        return WAITING  # pending still: the driver's next sweep queues it again
    with session_scope(database_url) as session:  # claim and read the plan in one transaction
        waits, since = start_grace(session, match_id, load_settings().offline_grace_s)
        refused = claim_match(session, match_id, worker)
        if refused is not None:
            return refused
        plan = load_plan(session, match_id, hosted_addresses, offline_waits=waits)
        if any(seat.connected for seat in plan.seats):
            attribute_to_latest(session, match_id)  # the version connected now plays it
        if not capacity.acquire(session, match_id, [seat.bot_id for seat in plan.seats], worker):
            session.rollback()  # the claim too: the match stays pending
            return WAITING
    try:
        result, duration_ms = play_claimed(database_url, plan, worker)
    except MatchTakenError:
        _release(database_url, match_id, worker)
        return LOST
    # The arena's failure, or a bot gone just before its match began (the store had not yet
    # caught up, arena/link/waiting.py): not a bot's fault; play it again from its start.
    except (GatewayLostError, BotOfflineError) as exc:
        with session_scope(database_url) as session:
            release(session, match_id, worker, since if isinstance(exc, BotOfflineError) else None)
            capacity.release(session, match_id, worker)
        return WAITING
    except Exception as exc:  # an interrupt or exit leaves it running: recovery replays it
        mark_failed(database_url, match_id, worker, exc)
        raise
    try:
        recorded = record_result(database_url, plan, result, duration_ms, worker)
    except Exception as exc:  # e.g. the database went away: fail it now rather than at lease end
        mark_failed(database_url, match_id, worker, exc)
        raise
    if not recorded:
        return ALREADY_DONE
    # EndDeal, once the deal is done; before the tournament may finish, so that a worker dying
    # in between leaves it running and a sweep sends the notice (arena/deals.reveal_overdue).
    reveal_if_complete(database_url, plan, hosted_addresses)
    with session_scope(database_url) as session:
        finish_if_complete(session, plan.tournament_id)
    _queue_next_batch(database_url, plan.tournament_id, hosted_addresses)
    return DONE


def _queue_next_batch(database_url: str, tournament_id: int, hosted: dict[str, str] | None) -> None:
    """On an RQ worker, queue the pairs a sequential test just added (arena/sprt.py), so it
    goes on with nobody driving it; a driver, if any, would queue them too (job ids dedupe)."""
    try:
        from rq import get_current_job
    except ImportError:  # not on RQ: the embedded pool's driver queues them
        return
    job = get_current_job()
    if job is None:
        return
    with session_scope(database_url) as session:
        kind, status = session.execute(
            select(Tournament.kind, Tournament.status).where(Tournament.id == tournament_id)
        ).one()
        if kind != "sprt" or status != TournamentStatus.RUNNING:
            return
    from arena.execution import RqBackend, unfinished_matches  # execution imports this module

    backend = RqBackend(database_url, "", job.origin, connection=job.connection, hosted_addresses=hosted)
    backend.submit(unfinished_matches(database_url, tournament_id))


def worker_id() -> str:
    """Who is playing: ``host:pid``, so a resume on the same host can tell a live worker from
    a killed one at once instead of waiting for the lease to run out."""
    return f"{socket.gethostname()}:{os.getpid()}"


def claim_match(session: Session, match_id: int, worker: str) -> str | None:
    """Take the match for ``worker`` (atomic conditional UPDATE; the caller commits): None
    when claimed, else the reason it was not (``already-done``, ``busy``, ``not-running``)."""
    now = utcnow()
    stale = now - dt.timedelta(seconds=LEASE_S)
    running = select(Tournament.id).where(Tournament.status == TournamentStatus.RUNNING).scalar_subquery()
    claimed = session.execute(
        update(Match)
        .where(
            Match.id == match_id,
            or_(
                Match.status == MatchStatus.PENDING,
                and_(
                    Match.status == MatchStatus.RUNNING,
                    or_(Match.heartbeat_at.is_(None), Match.heartbeat_at < stale),
                ),
            ),
            Match.tournament_id.in_(running),
        )
        .values(
            status=MatchStatus.RUNNING,
            worker=worker,
            attempts=Match.attempts + 1,
            started_at=now,
            heartbeat_at=now,
            hands_played=0,
            error=None,
            waiting_since=None,  # a later wait for an offline bot gets its whole grace again
        )
        .execution_options(synchronize_session=False)
    )
    if claimed.rowcount == 1:  # type: ignore[attr-defined]
        return None
    status = session.execute(select(Match.status).where(Match.id == match_id)).scalar_one_or_none()
    if status is None:
        raise MatchNotFoundError(f"there is no match {match_id!r}")
    if status == MatchStatus.DONE:
        return ALREADY_DONE
    return BUSY if status == MatchStatus.RUNNING else NOT_RUNNING


def play_claimed(database_url: str, plan: MatchPlan, worker: str) -> tuple[MatchResult, int]:
    """Play a claimed match with the heartbeat running; returns the result and its time."""
    beat = _Heartbeat(database_url, plan.match_id, worker)
    beat.start()
    started = time.perf_counter()
    try:
        result = run_match(plan, on_hand=beat.on_hand)
    finally:
        beat.stop()
    if beat.lost:
        raise MatchTakenError(f"match {plan.match_id} was taken over by another worker")
    return result, round((time.perf_counter() - started) * 1000)


def record_result(
    database_url: str, plan: MatchPlan, result: MatchResult, duration_ms: int, worker: str
) -> bool:
    """Write a played match in one transaction, guarded so it counts once: False (and
    nothing written) if the match was already done."""
    result = clean_result(result, [seat.address for seat in plan.seats])
    blob = encode_logs(result.hands, seed=result.seed, players=result.players, rules=result.rules)
    stats = seat_stats(result)
    bots = [seat.bot_id for seat in plan.seats]
    with session_scope(database_url) as session:
        # First statement of the transaction: on SQLite it takes the write lock at once, on
        # PostgreSQL a racing writer blocks on the row and then sees status = 'done'.
        done = session.execute(
            update(Match)
            .where(Match.id == plan.match_id, Match.status != MatchStatus.DONE)
            .values(
                status=MatchStatus.DONE,
                worker=worker,
                finished_at=utcnow(),
                heartbeat_at=None,
                hands_played=len(result.hands),
                decisions=result.decisions,
                faults=len(result.faults),
                forfeited_seat=result.forfeited,
                duration_ms=duration_ms,
                error=None,
            )
            .execution_options(synchronize_session=False)
        )
        if done.rowcount != 1:  # type: ignore[attr-defined]
            session.rollback()
            return False
        for s in stats:
            session.execute(
                update(MatchSeat)
                .where(MatchSeat.match_id == plan.match_id, MatchSeat.seat == s.seat)
                .values(
                    score=s.score,
                    hands_won=s.hands_won,
                    decisions=s.decisions,
                    faults=s.faults,
                    latency_us_total=s.latency_us_total,
                    latency_us_max=s.latency_us_max,
                )
                .execution_options(synchronize_session=False)
            )
        rows = [
            {
                "match_id": plan.match_id,
                "seat": f.seat,
                "bot_id": bots[f.seat],
                "hand_index": f.hand_index,
                "decision": f.decision,
                "kind": f.kind.value,
                "reason": f.reason,
            }
            for f in result.faults
        ]
        # Slow lifecycle calls cost no chips but are kept with the faults, kind "slow"
        # (decision -1: StartMatch, -2: an EndHand, -3: the EndMatch), so slowness shows.
        rows += [
            {
                "match_id": plan.match_id,
                "seat": note.seat,
                "bot_id": bots[note.seat],
                "hand_index": note.hand_index,
                "decision": SLOW_DECISION.get(note.rpc, -3),
                "kind": SLOW,
                "reason": note.reason,
            }
            for note in result.slow_notices
        ]
        if rows:
            session.execute(insert(FaultRecord), rows)
        session.execute(insert(Replay).values(match_id=plan.match_id, format=FORMAT, data=blob))
        capacity.release(session, plan.match_id)
    return True


def clean_result(result: MatchResult, addresses: Sequence[str | None] = ()) -> MatchResult:
    """``result`` with every fault reason (a bot's own error text, in part) fit to store
    (arena.text.clean_text): one NUL in one reason would make PostgreSQL refuse the whole
    match, every other seat's result with it. Reasons are public and name where an
    unreachable bot listens: ``addresses`` and IP addresses are redacted (arena/claims.py)."""
    cleaned: dict[int, Fault] = {}

    def clean(fault: Fault) -> Fault:
        if id(fault) not in cleaned:
            reason = clean_text(redact_addresses(fault.reason, addresses), REASON_LIMIT)
            cleaned[id(fault)] = dataclasses.replace(fault, reason=reason)
        return cleaned[id(fault)]

    hands = [
        dataclasses.replace(log, faults=[clean(f) for f in log.faults]) if log.faults else log
        for log in result.hands
    ]
    return dataclasses.replace(result, hands=hands, faults=[clean(f) for f in result.faults])


def mark_failed(database_url: str, match_id: int, worker: str, exc: BaseException) -> None:
    """Record why a match could not be played (an arena problem, not a bot's fault: those
    are faults inside the match). Only the claimant may; a resume retries failed matches."""
    text = clean_text("".join(traceback.format_exception_only(type(exc), exc)), REASON_LIMIT)
    try:
        with session_scope(database_url) as session:
            session.execute(
                update(Match)
                .where(Match.id == match_id, Match.status == MatchStatus.RUNNING, Match.worker == worker)
                .values(status=MatchStatus.FAILED, error=text, heartbeat_at=None)
                .execution_options(synchronize_session=False)
            )
            capacity.release(session, match_id, worker)
    except Exception:  # the original error matters more; the lease recovers the match
        pass


def recover_matches(
    session: Session, tournament_id: int, *, retry_failed: bool = False, now: dt.datetime | None = None
) -> list[int]:
    """Put the tournament's abandoned matches back to ``pending``: ``running`` ones whose
    worker is gone (a dead process on this host, or a heartbeat older than ``LEASE_S``), and
    with ``retry_failed`` the ``failed`` ones. Returns their ids. Each reset is conditional on
    the row being as read, so a worker that is in fact alive and just wrote is not disturbed."""
    now = now or utcnow()
    statuses = (MatchStatus.RUNNING, MatchStatus.FAILED) if retry_failed else (MatchStatus.RUNNING,)
    rows = session.execute(
        select(Match.id, Match.status, Match.worker, Match.heartbeat_at).where(
            Match.tournament_id == tournament_id, Match.status.in_(statuses)
        )
    ).all()
    reset: list[int] = []
    for match_id, status, worker, beat in rows:
        if status == MatchStatus.RUNNING and is_alive(worker, beat, now):
            continue
        guard = [Match.id == match_id, Match.status == status]
        if status == MatchStatus.RUNNING:
            guard.append(Match.heartbeat_at == beat if beat is not None else Match.heartbeat_at.is_(None))
        changed = session.execute(
            update(Match)
            .where(*guard)
            .values(status=MatchStatus.PENDING, heartbeat_at=None)
            .execution_options(synchronize_session=False)
        )
        if changed.rowcount == 1:  # type: ignore[attr-defined]
            reset.append(match_id)
            if status == MatchStatus.RUNNING:  # its worker is gone: its bots' slots are free at once
                capacity.release(session, match_id, worker)
    return reset


def _release(database_url: str, match_id: int, worker: str) -> None:
    try:
        with session_scope(database_url) as session:
            capacity.release(session, match_id, worker)
    except Exception:  # the leases expire on their own
        pass


def is_alive(worker: str | None, heartbeat_at: dt.datetime | None, now: dt.datetime) -> bool:
    if heartbeat_at is None:
        return False
    if heartbeat_at.tzinfo is None:  # SQLite returns naive datetimes; they were stored in UTC
        heartbeat_at = heartbeat_at.replace(tzinfo=dt.UTC)
    if (now - heartbeat_at).total_seconds() > LEASE_S:
        return False
    host, _, pid = (worker or "").rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        return _process_alive(int(pid))
    return True


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    try:  # a zombie (killed, not yet reaped) is as dead as it gets
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


class _Heartbeat:
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

    def on_hand(self, log: HandLog, scores: list[int]) -> None:
        self.hands += 1
        self.scores = list(scores)
        if self.lost:
            raise MatchTakenError(f"match {self.match_id} was taken over by another worker")

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                with session_scope(self.url) as session:
                    beat = session.execute(
                        update(Match)
                        .where(
                            Match.id == self.match_id,
                            Match.status == MatchStatus.RUNNING,
                            Match.worker == self.worker,
                        )
                        .values(heartbeat_at=utcnow(), hands_played=self.hands)
                        .execution_options(synchronize_session=False)
                    )
                    if beat.rowcount == 0:  # type: ignore[attr-defined]
                        self.lost = True
                        return
                    # The running score, shown while the match plays (the store hides a
                    # seat's score from everything else until the match is done).
                    for seat, score in enumerate(list(self.scores)):
                        session.execute(
                            update(MatchSeat)
                            .where(MatchSeat.match_id == self.match_id, MatchSeat.seat == seat)
                            .values(score=score)
                            .execution_options(synchronize_session=False)
                        )
                    capacity.renew(session, self.match_id, self.worker)
            except Exception:  # a missed beat is survivable; the lease is long
                continue


_engines_pid = os.getpid()


def _forget_inherited_engines() -> None:
    """After a fork (an RQ work horse, a pool process) the parent's pooled connections must
    not be used, nor closed (closing would end the parent's sessions): drop them."""
    global _engines_pid
    if os.getpid() == _engines_pid:
        return
    _engines_pid = os.getpid()
    dispose_engines(close=False)
