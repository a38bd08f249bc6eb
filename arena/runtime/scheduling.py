"""Which pending matches a tournament's driver submits now: those whose bots have room.

A bot plays at most :func:`arena.play.capacity.capacity_of` matches at once. The driver
(arena.runtime.driver.run_tournament) asks :func:`matches_to_start` at every poll and submits
only what fits, so workers are never handed a match that would have to wait, and a bot's
free slots go to its matches in play order: deal-major (every table plays its deal ``d``
before any table starts deal ``d + 1``), so standings grow evenly across tables while a
tournament runs rather than table by table. The job's own lease (arena.play.lifecycle, at claim) is
what enforces the bound across every driver and worker; this only avoids work that would
be refused.

A duplicate deal seating a bot whose memory the arena does not control (a dialled or
connected bot: arena/bots/memory.py) is played **one rotation at a time**: none of its
matches starts while another is in flight. Played at once, the rotations could each learn
from the other as they go, and the fair-play check (arena/ratings/fairplay.py), which compares
a bot's first rotation of a deal with its later ones, would see no difference between them.
Other deals fill the bots' free slots meanwhile.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from typing import Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.bots.memory import controlled_versions
from arena.play import capacity
from arena.store.db import session_scope
from arena.store.models import Match, MatchSeat
from arena.store.statuses import MatchStatus

#: Pending matches considered per poll, in play order (a bound on the driver's work).
WINDOW: Final = 2000


def pending_window(session: Session, tournament_id: int, limit: int = WINDOW) -> list[int]:
    """The first ``limit`` pending matches of the tournament, in play order."""
    return list(
        session.scalars(
            select(Match.id)
            .where(Match.tournament_id == tournament_id, Match.status == MatchStatus.PENDING)
            .order_by(Match.deal_index, Match.table_index, Match.rotation)
            .limit(limit)
        )
    )


def matches_to_start(
    session: Session,
    pending: Sequence[int],
    queued: Collection[int],
    *,
    capacity_of: Callable[[Session, int], int] | None = None,
) -> list[int]:
    """The matches of ``pending`` (in play order) to submit now: each whose bots all have a
    free slot, counting the matches in flight (live leases) and those already ``queued``
    for a worker (submitted, not yet claimed), which are never picked again."""
    if not pending:
        return []
    seats: dict[int, list[int]] = defaultdict(list)
    versions: dict[int, list[int]] = defaultdict(list)
    for match_id, bot_id, version_id in session.execute(
        select(MatchSeat.match_id, MatchSeat.bot_id, MatchSeat.bot_version_id).where(
            MatchSeat.match_id.in_(list(pending))
        )
    ).all():
        seats[match_id].append(bot_id)
        versions[match_id].append(version_id)
    deal_of, busy = _serial_deals(session, pending, queued, versions)
    bots = {bot for ids in seats.values() for bot in ids}
    if capacity_of is None:  # one query for them all: a ladder's window seats hundreds of bots
        room = capacity.capacities(session, bots)
    else:
        room = {bot: capacity_of(session, bot) for bot in bots}
    for bot, count in capacity.in_flight(session, bots).items():
        room[bot] -= count
    on_queue = set(queued)
    for match_id in pending:
        if match_id in on_queue:
            for bot in seats[match_id]:
                room[bot] -= 1
    chosen: list[int] = []
    for match_id in pending:
        if match_id in on_queue or not seats[match_id]:
            continue
        deal = deal_of.get(match_id)
        if deal is not None and deal in busy:
            continue  # another rotation of its deal is in flight
        if all(room[bot] > 0 for bot in seats[match_id]):
            for bot in seats[match_id]:
                room[bot] -= 1
            chosen.append(match_id)
            if deal is not None:
                busy.add(deal)
    return chosen


def _serial_deals(
    session: Session, pending: Sequence[int], queued: Collection[int], versions: dict[int, list[int]]
) -> tuple[dict[int, tuple[int, int]], set[tuple[int, int]]]:
    """The deal (tournament, seed) of each pending match that must wait for the other
    rotations of its deal (a seat whose memory the arena does not control), and those of
    these deals with a match in flight now (running, or queued for a worker)."""
    controlled = controlled_versions(session, {v for vs in versions.values() for v in vs})
    guarded = [m for m in pending if any(v not in controlled for v in versions.get(m, ()))]
    if not guarded:
        return {}, set()
    deal_of = {
        match_id: (tournament_id, seed)
        for match_id, tournament_id, seed in session.execute(
            select(Match.id, Match.tournament_id, Match.seed).where(Match.id.in_(guarded))
        ).all()
    }
    tournaments = {tournament for tournament, _ in deal_of.values()}
    running = session.execute(
        select(Match.tournament_id, Match.seed).where(
            Match.tournament_id.in_(tournaments), Match.status == MatchStatus.RUNNING
        )
    ).all()
    busy = {(tournament, seed) for tournament, seed in running}
    busy.update(deal_of[m] for m in queued if m in deal_of)
    return deal_of, busy


def unfinished_matches(database_url: str, tournament_id: int) -> list[int]:
    """Ids of the tournament's pending matches, in play order (deal-major)."""
    with session_scope(database_url) as session:
        return list(
            session.scalars(
                select(Match.id)
                .where(Match.tournament_id == tournament_id, Match.status == MatchStatus.PENDING)
                .order_by(Match.deal_index, Match.table_index, Match.rotation)
            )
        )
