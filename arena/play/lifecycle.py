"""A match's life, and the one class that changes its status: :class:`MatchLife`.

Every write of ``matches.status`` is a method here; the other modules of this floor answer
questions (is a bot offline, is there a free slot, what is the plan) or write other columns
(the heartbeat's stamp, a seat's running score, ``waiting_since``). docs/architecture.md
draws the same diagram::

        create (tournaments)         claim                 record
    ───────────────────▶ pending ───────────▶ running ───────────▶ done
                          ▲  ▲                 │  │ │
                          │  └── hand back ────┘  │ └── fail ──▶ failed
                          │       (bot offline at │                 │
                          │        start, a blip, │                 │
                          │        gateway lost)  │                 │
                          └────── recover ────────┘◀── recover ─────┘
                               (worker gone,          (retry_failed,
                                lease expired)         on resume)

:meth:`MatchLife.play` is the whole life as a worker lives it, safe to run anywhere, any
number of times: on an RQ worker, in the embedded process pool, twice at once, or again
after a crash:

0. **Wait** while a connected bot of the match is offline, within the tournament's grace
   period (arena/play/offline.py): the match stays ``pending``; outcome ``waiting``.
1. **Claim** with one conditional UPDATE: ``pending -> running`` (or take over a ``running``
   match whose heartbeat went stale), only while the tournament is running, and in the same
   transaction a capacity slot of each of its bots (arena/play/capacity.py). A match that
   is done, or held by a live worker, is left alone; one whose bots are all busy stays
   ``pending`` (``waiting``) for the driver to submit again.
2. **Play** it under the referee while a heartbeat (arena/play/heartbeat.py) stamps it. If
   the match is taken from us (we were presumed dead), the play stops early: ``lost``.
3. **Record** result, seats, faults and replay in ONE transaction whose first statement is
   ``UPDATE matches SET status='done' ... WHERE id=:id AND status != 'done'``; if that
   touches no row, another worker recorded the match first and everything is rolled back.
   So a match is counted once, whoever races.
4. **Reveal** the deal if that was its last match: EndDeal to its bots
   (arena/play/deal_end.py), before the tournament may finish, so that a worker dying in
   between leaves it running and a sweep sends the notice.
5. **Finish** the tournament if that was its last match (conditional again).

A worker killed mid-match leaves its match ``running``: :meth:`MatchLife.recover` puts it
back to ``pending`` when its worker process is gone (same host) or its heartbeat is older
than ``MATCH_LEASE_S``; it is then played again from scratch, dealt afresh: a match stopped
part-way is never dealt again cards a seat has seen (arena/play/cuts.py).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import logging
import os
import socket
import time
import traceback
from collections.abc import Sequence
from typing import Final

from sqlalchemy import and_, insert, or_, select, update
from sqlalchemy.orm import Session

from arena.bots import reachability
from arena.bots.addresses import redact_addresses
from arena.bots.builds import clean_log
from arena.config import load_settings
from arena.link.player import BotLinkLostError, BotOfflineError, GatewayLostError
from arena.play import capacity
from arena.play.cuts import as_it_stood, judge_drop, link_tag, replay_seed, standing
from arena.play.deal_end import reveal_if_complete
from arena.play.heartbeat import MATCH_LEASE_S, Heartbeat, MatchTakenError
from arena.play.hosted import SeatOutput
from arena.play.offline import relink_wait, start_grace, wait_for_bots
from arena.play.plan import MatchPlan, load_plan, run_match, seat_stats
from arena.processes import alive
from arena.store.db import dispose_engines, session_scope
from arena.store.models import (
    RELINK_NOTICE_KIND,
    SLOW_NOTICE_KIND,
    BotVersion,
    FaultRecord,
    Match,
    MatchLog,
    MatchSeat,
    Replay,
    Tournament,
    utcnow,
)
from arena.store.replays import FORMAT, closest_hand, encode_logs
from arena.store.statuses import MatchStatus, TournamentStatus
from arena.text import REASON_LIMIT, clean_text
from arena.tournaments.lifecycle import finish_if_complete
from sdk.referee import Fault, FaultKind, HandLog, MatchResult

log = logging.getLogger("tonk.play")

#: FaultRecord.kind of a slow lifecycle notice (sdk.referee.SlowNotice): recorded, not charged.
SLOW: Final = SLOW_NOTICE_KIND
SLOW_DECISION: Final = {"StartMatch": -1, "EndHand": -2, "EndMatch": -3}
#: FaultRecord.decision of a relink notice: the drop, wherever in the match it came.
RELINK_DECISION: Final = -4


class Outcome(enum.StrEnum):
    """What one attempt at a match came to (RQ keeps it as the job's result)."""

    DONE = "done"
    #: Another worker recorded it first (nothing of ours was written).
    ALREADY_DONE = "already-done"
    #: A live worker holds it.
    BUSY = "busy"
    #: Its tournament is not running (paused, finished).
    NOT_RUNNING = "not-running"
    #: Taken over mid-play by another worker (we were presumed dead).
    LOST = "lost"
    #: Still pending: a bot has no free capacity, or a connected bot is offline (arena/link).
    WAITING = "waiting"
    #: The match is no more: a ladder withdrew its table before anyone played it (a bot left).
    WITHDRAWN = "withdrawn"


def play_match(match_id: int, database_url: str, hosted_addresses: dict[str, str] | None = None) -> Outcome:
    """Play match ``match_id`` of the store at ``database_url`` unless it is done or being
    played. ``hosted_addresses`` (bot name -> HOST:PORT) reaches hosted bots served over gRPC."""
    _forget_inherited_engines()
    return MatchLife(database_url, match_id, worker_id()).play(hosted_addresses)


class MatchLife:
    """One match as one worker sees it; the only writer of ``matches.status``.

    Each write is conditional on the row being as this worker left it, so two workers, a
    recovery and a late heartbeat can race without a match being lost or counted twice."""

    def __init__(self, database_url: str, match_id: int, worker: str):
        self.url = database_url
        self.match_id = match_id
        self.worker = worker
        #: What the match's hosted bots printed, by seat (arena/play/hosted.py), kept with its result.
        self.outputs: dict[int, SeatOutput] = {}
        #: The hands completed in the current play, for a match scored as it stood at a drop.
        self.played: list[HandLog] = []

    # The life, as a worker lives it.

    def play(self, hosted_addresses: dict[str, str] | None = None) -> Outcome:
        grace_s = load_settings().offline_grace_s
        if wait_for_bots(self.url, self.match_id, grace_s):
            return Outcome.WAITING  # pending still: the driver's next sweep queues it again
        with session_scope(self.url) as session:  # claim and read the plan in one transaction
            may_wait, since = start_grace(session, self.match_id, grace_s)
            refused = self.claim(session)
            if refused is not None:
                return refused
            plan = load_plan(
                session,
                self.match_id,
                hosted_addresses,
                offline_waits=may_wait,
                relink_wait_s=relink_wait(session, self.match_id, grace_s),
            )
            if any(seat.connected for seat in plan.seats):
                self.seat_connected_versions(session)
            bots = [seat.bot_id for seat in plan.seats]
            if not capacity.acquire(session, self.match_id, bots, self.worker):
                session.rollback()  # the claim too: the match stays pending
                return Outcome.WAITING
        started = time.perf_counter()
        try:
            result, duration_ms = self.play_claimed(plan)
        except MatchTakenError:
            self.free_slots()
            return Outcome.LOST
        # The arena's failure, or a bot gone just before its match began (the store had not
        # yet caught up, arena/play/offline.py): not a bot's fault; play it again from its
        # start. A bot whose link dropped mid-match and came back (BotLinkLostError): replayed
        # or scored as it stood, as arena/play/cuts.py judges the drop.
        except (GatewayLostError, BotOfflineError) as exc:
            if isinstance(exc, BotLinkLostError):  # the bot's own link: arena/play/cuts.py
                if self.hand_back(relinked=(plan.seats[exc.seat].bot_id, exc), plan=plan) is not None:
                    return Outcome.WAITING
                # Not replayed free: the match is scored as it stood at the drop.
                result = as_it_stood(
                    public_id=plan.public_id, seed=plan.seed, names=[s.name for s in plan.seats],
                    rules=plan.rules, hands=plan.hands, played=self.played, seat=exc.seat,
                    reason=clean_text(f"{exc}; the match is scored as it stood, the rest forfeited",
                                      REASON_LIMIT),
                )  # fmt: skip
                duration_ms = round((time.perf_counter() - started) * 1000)
            else:
                # A gateway lost part-way dealt cards: the replay is dealt afresh. A bot
                # absent at the start saw none: the seed is kept (a duplicate deal stays one).
                lost_gateway = isinstance(exc, GatewayLostError)
                self.hand_back(None if lost_gateway else since, reseed=lost_gateway)
                return Outcome.WAITING
        except Exception as exc:  # an interrupt or exit leaves it running: recovery replays it
            self.fail(exc)
            raise
        try:
            recorded = self.record(plan, result, duration_ms)
        except Exception as exc:  # e.g. the database went away: fail it now rather than at lease end
            self.fail(exc)
            raise
        if not recorded:
            return Outcome.ALREADY_DONE
        reveal_if_complete(self.url, plan, hosted_addresses)
        with session_scope(self.url) as session:
            finish_if_complete(session, plan.tournament_id)
        return Outcome.DONE

    def play_claimed(self, plan: MatchPlan) -> tuple[MatchResult, int]:
        """Play the claimed match with the heartbeat running; returns the result and its time."""
        beat = Heartbeat(self.url, self.match_id, self.worker)
        beat.start()
        started = time.perf_counter()
        self.outputs.clear()
        self.played = []

        def on_hand(log_: HandLog, scores: list[int]) -> None:
            self.played.append(log_)
            beat.on_hand(log_, scores)

        try:
            result = run_match(plan, on_hand=on_hand, outputs=self.outputs)
        finally:
            beat.stop()
        if beat.lost:
            raise MatchTakenError(f"match {self.match_id} was taken over by another worker")
        return result, round((time.perf_counter() - started) * 1000)

    # The transitions.

    def claim(self, session: Session) -> Outcome | None:
        """pending (or running with a stale heartbeat) -> running, for this worker, in the
        caller's transaction: None when claimed, else why not (``already-done``, ``busy``,
        ``not-running``, ``withdrawn``)."""
        now = utcnow()
        stale = now - dt.timedelta(seconds=MATCH_LEASE_S)
        running = select(Tournament.id).where(Tournament.status == TournamentStatus.RUNNING).scalar_subquery()
        # A running match taken over was dealt cards by its silent worker: dealt afresh.
        row = session.execute(
            select(Match.status, Match.seed, Match.key, Match.attempts).where(Match.id == self.match_id)
        ).first()
        afresh: dict[str, object] = {}
        if row is not None and row.status == MatchStatus.RUNNING:
            afresh["seed"] = replay_seed(row.seed, row.key, row.attempts)
        claimed = session.execute(
            update(Match)
            .where(
                Match.id == self.match_id,
                *([Match.status == row.status, Match.attempts == row.attempts] if row is not None else []),
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
                worker=self.worker,
                attempts=Match.attempts + 1,
                started_at=now,
                heartbeat_at=now,
                hands_played=0,
                error=None,
                waiting_since=None,  # a later wait for an offline bot gets its whole grace again
                **afresh,
            )
            .execution_options(synchronize_session=False)
        )
        if claimed.rowcount == 1:  # type: ignore[attr-defined]
            return None
        status = session.execute(select(Match.status).where(Match.id == self.match_id)).scalar_one_or_none()
        if status is None:  # a job queued for a table the ladder has since withdrawn
            return Outcome.WITHDRAWN
        if status == MatchStatus.DONE:
            return Outcome.ALREADY_DONE
        return Outcome.BUSY if status == MatchStatus.RUNNING else Outcome.NOT_RUNNING

    def seat_connected_versions(self, session: Session) -> None:
        """With the claim: point the match's seats of connected bots at each bot's latest
        version. What plays a connected seat is whatever code is connected when the match is
        claimed, not the version the bot entered the tournament with."""
        latest = (
            select(BotVersion.id)
            .where(BotVersion.bot_id == MatchSeat.bot_id)
            .order_by(BotVersion.number.desc())
            .limit(1)
            .scalar_subquery()
        )
        connected = select(BotVersion.id).where(BotVersion.connected.is_(True))
        session.execute(
            update(MatchSeat)
            .where(MatchSeat.match_id == self.match_id, MatchSeat.bot_version_id.in_(connected))
            .values(bot_version_id=latest)
            .execution_options(synchronize_session=False)
        )

    def record(self, plan: MatchPlan, result: MatchResult, duration_ms: int) -> bool:
        """running -> done with the result, in one transaction, guarded so it counts once:
        False (and nothing written) if the match was already done."""
        result = clean_result(result, [seat.address for seat in plan.seats])
        blob = encode_logs(result.hands, seed=result.seed, players=result.players, rules=result.rules)
        close = closest_hand([log.record.outcome for log in result.hands]) or (None, None)
        bots = [seat.bot_id for seat in plan.seats]
        with session_scope(self.url) as session:
            # First statement of the transaction: on SQLite it takes the write lock at once, on
            # PostgreSQL a racing writer blocks on the row and then sees status = 'done'.
            done = session.execute(
                update(Match)
                .where(Match.id == self.match_id, Match.status != MatchStatus.DONE)
                .values(
                    status=MatchStatus.DONE,
                    worker=self.worker,
                    finished_at=utcnow(),
                    heartbeat_at=None,
                    hands_played=len(result.hands),
                    decisions=result.decisions,
                    faults=len(result.faults),
                    forfeited_seat=result.forfeited,
                    duration_ms=duration_ms,
                    error=None,
                    close_hand=close[0],
                    close_points=close[1],
                )
                .execution_options(synchronize_session=False)
            )
            if done.rowcount != 1:  # type: ignore[attr-defined]
                session.rollback()
                return False
            # What hosted bots printed, for their owners: written with the result, so a match
            # recorded once has its logs once.
            for seat, output in sorted(self.outputs.items()):
                session.add(
                    MatchLog(
                        match_id=self.match_id,
                        seat=seat,
                        bot_id=bots[seat],
                        text=clean_log(output.text),
                        bytes=output.total_bytes,
                        truncated=output.truncated,
                    )
                )
            for s in seat_stats(result):
                session.execute(
                    update(MatchSeat)
                    .where(MatchSeat.match_id == self.match_id, MatchSeat.seat == s.seat)
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
                    "match_id": self.match_id,
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
                    "match_id": self.match_id,
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
            _note_unreachable(session, self.match_id, plan, result)
            session.execute(insert(Replay).values(match_id=self.match_id, format=FORMAT, data=blob))
            capacity.release(session, self.match_id)
        return True

    def fail(self, exc: BaseException) -> None:
        """running -> failed: why the match could not be played (an arena problem, not a
        bot's fault: those are faults inside the match). Only the claimant may; a resume
        retries failed matches. Never raises: the error being handled matters more."""
        text = clean_text("".join(traceback.format_exception_only(type(exc), exc)), REASON_LIMIT)
        try:
            with session_scope(self.url) as session:
                session.execute(
                    update(Match)
                    .where(Match.id == self.match_id, Match.status == MatchStatus.RUNNING,
                           Match.worker == self.worker)
                    .values(status=MatchStatus.FAILED, error=text, heartbeat_at=None)
                    .execution_options(synchronize_session=False)
                )  # fmt: skip
                capacity.release(session, self.match_id, self.worker)
        except Exception as store_exc:  # the match stays running: recovery replays it at lease end
            log.warning("match %s: could not be marked failed (%s) after: %s", self.match_id, store_exc, text)

    def hand_back(
        self,
        waiting_since: dt.datetime | None = None,
        *,
        reseed: bool = False,
        relinked: tuple[int, BotLinkLostError] | None = None,
        plan: MatchPlan | None = None,
    ) -> bool | None:
        """running -> pending, nothing recorded, to be played from its start (its gateway went
        away mid-match, or its bot was gone at the start), its offline grace counted from
        ``waiting_since`` (default now); and its slots freed. ``reseed``: cards were dealt, so
        the replay is dealt from :func:`~arena.play.cuts.replay_seed`. ``relinked``: the bot
        (id) whose link dropped mid-match and came back, and how; the drop is judged
        (arena.play.cuts.judge_drop, with ``plan``'s seats and the hands played): replayed, it
        is dealt afresh and a new drop gets one uncharged relink notice; not, nothing changes
        and None is returned (the caller records the match as it stood)."""
        with session_scope(self.url) as session:
            values: dict[str, object] = {
                "status": MatchStatus.PENDING, "heartbeat_at": None, "worker": None,
                "waiting_since": waiting_since or utcnow(),
            }  # fmt: skip
            row = None
            new_drop = False
            tag = link_tag(relinked[1].links) if relinked is not None else ""
            if reseed or relinked is not None:
                row = session.execute(
                    select(Match.seed, Match.key, Match.attempts, Match.hands_played)
                    .where(Match.id == self.match_id)
                ).first()
                if row is not None:
                    values["seed"] = replay_seed(row.seed, row.key, row.attempts)
            if relinked is not None and row is not None:
                score = standing(self.played, relinked[1].seat)
                seats = len(plan.seats) if plan is not None else 2
                verdict = judge_drop(session, self.match_id, relinked[0], score, seats, tag)
                if not verdict.replay:
                    return None
                new_drop = verdict.new_drop
            done = session.execute(
                update(Match)
                .where(Match.id == self.match_id, Match.status == MatchStatus.RUNNING,
                       Match.worker == self.worker)
                .values(**values)
                .execution_options(synchronize_session=False)
            )  # fmt: skip
            if done.rowcount and relinked is not None and row is not None and new_drop:  # type: ignore[attr-defined]
                bot_id, lost = relinked
                session.add(FaultRecord(
                    match_id=self.match_id, seat=lost.seat, bot_id=bot_id, hand_index=row.hands_played or 0,
                    decision=RELINK_DECISION, kind=RELINK_NOTICE_KIND,
                    reason=clean_text(f"[{tag}] {lost}; the match is replayed from its start, dealt afresh",
                                      REASON_LIMIT),
                ))  # fmt: skip
            capacity.release(session, self.match_id, self.worker)
        return bool(done.rowcount)  # type: ignore[attr-defined]

    def free_slots(self) -> None:
        """Free this worker's capacity slots of the match (its status is another's now)."""
        try:
            with session_scope(self.url) as session:
                capacity.release(session, self.match_id, self.worker)
        except Exception as exc:  # the slots' leases expire on their own
            log.warning("match %s: slots not freed, left to expire (%s)", self.match_id, exc)

    @staticmethod
    def recover(
        session: Session, tournament_id: int, *, retry_failed: bool = False, now: dt.datetime | None = None
    ) -> list[int]:
        """running (worker gone: a dead process on this host, or a heartbeat older than
        ``MATCH_LEASE_S``) -> pending, and with ``retry_failed`` failed -> pending, for the
        tournament's matches; returns their ids. Each reset is conditional on the row being as
        read, so a worker that is in fact alive and just wrote is not disturbed. Either may
        have dealt cards part-way: the match is dealt afresh (arena/play/cuts.py)."""
        now = now or utcnow()
        statuses = (MatchStatus.RUNNING, MatchStatus.FAILED) if retry_failed else (MatchStatus.RUNNING,)
        rows = session.execute(
            select(Match.id, Match.status, Match.worker, Match.heartbeat_at)
            .add_columns(Match.seed, Match.key, Match.attempts)
            .where(Match.tournament_id == tournament_id, Match.status.in_(statuses))
        ).all()
        reset: list[int] = []
        for match_id, status, worker, beat, seed, key, attempts in rows:
            if status == MatchStatus.RUNNING and is_alive(worker, beat, now):
                continue
            guard = [Match.id == match_id, Match.status == status]
            if status == MatchStatus.RUNNING:
                guard.append(Match.heartbeat_at == beat if beat is not None else Match.heartbeat_at.is_(None))
            changed = session.execute(
                update(Match)
                .where(*guard)
                .values(status=MatchStatus.PENDING, heartbeat_at=None, seed=replay_seed(seed, key, attempts))
                .execution_options(synchronize_session=False)
            )
            if changed.rowcount == 1:  # type: ignore[attr-defined]
                reset.append(match_id)
                if status == MatchStatus.RUNNING:  # its worker is gone: its bots' slots are free at once
                    capacity.release(session, match_id, worker)
        return reset


def _note_unreachable(session: Session, match_id: int, plan: MatchPlan, result: MatchResult) -> None:
    """A dialled bot that forfeited the match because it could not be reached is offline: a
    ladder gives it no new table until it answers again (arena/bots/reachability.py). Noted
    with the result, so the ladder's next tick sees it. A dialled bot that played the match
    through with no such fault answers: an outage noted before the match began is over."""
    down: dict[int, str] = {}  # seat -> the reason of the fault that made it forfeit
    if result.forfeited is not None:
        last = next((f for f in reversed(result.faults) if f.seat == result.forfeited), None)
        if last is not None and last.kind is FaultKind.UNREACHABLE:
            down[result.forfeited] = last.reason
    unreached = {f.seat for f in result.faults if f.kind is FaultKind.UNREACHABLE}
    answering = []
    for index, seat in enumerate(plan.seats):
        if not seat.address or seat.connected or seat.served_here or seat.build_id is not None:
            continue  # not dialled: a connected bot's presence is its link's, a hosted one is the arena's
        if index in down:
            reachability.note_forfeit(session, seat.bot_id, match_id, down[index], seat.address)
        elif index not in unreached:
            answering.append(seat.bot_id)
    if answering:
        reachability.answered_in(session, answering, match_id)


def worker_id() -> str:
    """Who is playing: ``host:pid``, so a resume on the same host can tell a live worker from
    a killed one at once instead of waiting for the lease to run out."""
    return f"{socket.gethostname()}:{os.getpid()}"


def clean_result(result: MatchResult, addresses: Sequence[str | None] = ()) -> MatchResult:
    """``result`` with every fault reason (a bot's own error text, in part) fit to store
    (arena.text.clean_text): one NUL in one reason would make PostgreSQL refuse the whole
    match, every other seat's result with it. Reasons are public and name where an
    unreachable bot listens: ``addresses`` and IP addresses are redacted (arena/bots/claims.py)."""
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


def is_alive(worker: str | None, heartbeat_at: dt.datetime | None, now: dt.datetime) -> bool:
    """Whether the worker holding a running match may still be playing it."""
    if heartbeat_at is None or (now - heartbeat_at).total_seconds() > MATCH_LEASE_S:
        return False
    host, _, pid = (worker or "").rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        return alive(int(pid))
    return True


_engines_pid = os.getpid()


def _forget_inherited_engines() -> None:
    """After a fork (an RQ work horse, a pool process) the parent's pooled connections must
    not be used, nor closed (closing would end the parent's sessions): drop them."""
    global _engines_pid
    if os.getpid() == _engines_pid:
        return
    _engines_pid = os.getpid()
    dispose_engines(close=False)
