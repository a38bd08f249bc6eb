"""The end of a deal: when every match dealt from one seed is done, its bots hear EndDeal.

A *deal* is the matches of a tournament dealt from one seed: the seat rotations of a
duplicate deal (one match in independent mode). While any of them is still to be played, a
rotation's full records would show the cards of the others, so the referee sends each seat
only its own view (``MatchPlan.reveal``) and the store hides replays, seeds and match ids
(:func:`arena.queries.matches.deal_done`). Once the last one is recorded, the worker that recorded it
sends every bot of the deal ``EndDeal``: the seed, and per match the bot played the match id
it was given and every hand's complete record (:func:`reveal_if_complete`).

Exactly one worker sends it: the notice is claimed by one conditional UPDATE that stamps
``deal_revealed_at`` on every match of the deal only if none is stamped and all are done.
It runs after the recording transaction has committed, so of two workers recording a deal's
last two matches at once, the later one sees both done. It is a courtesy, like EndMatch: a
short deadline per bot, failures ignored. A worker that dies between recording a deal's last
match and claiming its notice leaves the deal done and unstamped: the driver's and the
dashboard's sweeps (arena/runtime/driver.py) find such deals and send it then
(:func:`reveal_overdue`), through the same claim, so it still goes once.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from sqlalchemy import case, exists, func, select, update
from sqlalchemy.orm import Session, aliased

from arena.play.hosted import memory_scope
from arena.play.plan import MatchPlan, SeatPlan, load_plan, make_seat_player
from arena.play.reference import record_reference
from arena.store.db import session_scope
from arena.store.models import Bot, Match, MatchSeat, Replay, Tournament, utcnow
from arena.store.replays import decode
from arena.store.statuses import MatchStatus
from arena.tournaments.layout import public_match_id
from sdk.bot import DealMatch, DealSummary
from sdk.referee import plain_record

logger = logging.getLogger("tonk.deals")

#: Deadline of one EndDeal call: a bot that is slow to listen only misses the notice.
END_DEAL_TIMEOUT_S: Final = 1.0
#: Past this much record JSON in one notice, the records are left out (the seed re-deals
#: every hand): gRPC servers refuse messages over 4 MB by default.
MAX_RECORD_BYTES: Final = 1_000_000


def claim_reveal(session: Session, tournament_id: int, seed: int) -> bool:
    """Stamp the deal revealed if every match of it is done and nobody stamped it yet; True
    for the one caller that did (the caller commits)."""
    sibling = aliased(Match)
    unfinished = exists().where(
        sibling.tournament_id == tournament_id, sibling.seed == seed, sibling.status != MatchStatus.DONE
    )
    # Read first: most matches are not their deal's last, and an UPDATE, even of no row, would
    # take SQLite's write lock.
    if session.execute(select(unfinished)).scalar():
        return False
    claimed = session.execute(
        update(Match)
        .where(
            Match.tournament_id == tournament_id,
            Match.seed == seed,
            Match.deal_revealed_at.is_(None),
            ~unfinished,
        )
        .values(deal_revealed_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return bool(claimed.rowcount)  # type: ignore[attr-defined]


def deal_notices(
    session: Session, tournament_id: int, seed: int, hosted_addresses: Mapping[str, str] | None = None
) -> list[tuple[SeatPlan, DealSummary]]:
    """Per bot of the deal, how to reach it and what it is told: the matches it played, in
    the order they were played, with their complete records."""
    tournament = session.get(Tournament, tournament_id)
    assert tournament is not None
    matches = list(
        session.scalars(
            select(Match)
            .where(Match.tournament_id == tournament_id, Match.seed == seed)
            .order_by(Match.finished_at, Match.id)
        )
    )
    seats: dict[int, list[tuple[int, int, str, int]]] = {m.id: [] for m in matches}
    for match_id, seat, bot_id, name, score in session.execute(
        select(MatchSeat.match_id, MatchSeat.seat, MatchSeat.bot_id, Bot.name, MatchSeat.score)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .where(MatchSeat.match_id.in_(list(seats)))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    ):
        seats[match_id].append((seat, bot_id, name, int(score or 0)))
    records: dict[int, tuple[dict[str, Any], ...]] = {}
    for match in matches:
        replay = session.get(Replay, match.id)
        logs = decode(replay.format, replay.data) if replay is not None else []
        records[match.id] = tuple(plain_record(log) for log in logs)
    size = sum(len(json.dumps(r, separators=(",", ":"))) for rs in records.values() for r in rs)
    omit = size > MAX_RECORD_BYTES
    plans: dict[int, SeatPlan] = {}
    for match in matches:
        for plan_seat in load_plan(session, match.id, hosted_addresses).seats:
            plans.setdefault(plan_seat.bot_id, plan_seat)
    out = []
    for bot_id, plan_seat in plans.items():
        played = []
        for match in matches:
            mine = tuple(s for s, b, _, _ in seats[match.id] if b == bot_id)
            if not mine:
                continue
            played.append(
                DealMatch(
                    match.public_id or public_match_id(tournament.seed, match.key),
                    tuple(name for _, _, name, _ in seats[match.id]),
                    mine,
                    tuple(score for _, _, _, score in seats[match.id]),
                    () if omit else records[match.id],
                    omit,
                )
            )
        out.append((plan_seat, DealSummary(tuple(played), seed)))
    return out


def reveal_if_complete(
    database_url: str, plan: MatchPlan, hosted_addresses: Mapping[str, str] | None = None
) -> int:
    """After ``plan``'s match was recorded: if that completed its deal, claim the notice and
    send EndDeal to each bot of the deal. Returns how many bots were sent it (0 when the deal
    is not complete or another worker claimed it). Never raises: it is a courtesy."""
    return _reveal(database_url, plan.tournament_id, plan.seed, hosted_addresses)


def overdue_deals(session: Session, tournament_id: int) -> list[int]:
    """Seeds of the tournament's deals whose matches are all done but whose notice nobody
    claimed (its worker died in between); a deal being revealed right now may be among them
    for a moment, which the claim sorts out."""
    pending = func.sum(case((Match.status != MatchStatus.DONE, 1), else_=0))
    unstamped = func.sum(case((Match.deal_revealed_at.is_(None), 1), else_=0))
    return list(
        session.scalars(
            select(Match.seed)
            .where(Match.tournament_id == tournament_id)
            .group_by(Match.seed)
            .having(pending == 0, unstamped > 0)
            .order_by(Match.seed)
        )
    )


def reveal_overdue(
    database_url: str, tournament_id: int, hosted_addresses: Mapping[str, str] | None = None
) -> int:
    """Send EndDeal for each of the tournament's done deals nobody claimed; returns to how
    many bots in all. Never raises."""
    try:
        with session_scope(database_url) as session:
            seeds = overdue_deals(session, tournament_id)
    except Exception:
        logger.exception("could not look for unsent EndDeal notices of tournament %s", tournament_id)
        return 0
    return reveal_deals(database_url, tournament_id, seeds, hosted_addresses)


def reveal_deals(
    database_url: str,
    tournament_id: int,
    seeds: Iterable[int],
    hosted_addresses: Mapping[str, str] | None = None,
) -> int:
    """Claim and send EndDeal for each of ``seeds`` (:func:`overdue_deals`); returns to how
    many bots in all. Never raises."""
    return sum(_reveal(database_url, tournament_id, seed, hosted_addresses) for seed in seeds)


def _reveal(
    database_url: str, tournament_id: int, seed: int, hosted_addresses: Mapping[str, str] | None
) -> int:
    try:
        with session_scope(database_url) as session:
            if not claim_reveal(session, tournament_id, seed):
                return 0
            notices = deal_notices(session, tournament_id, seed, hosted_addresses)
    except Exception:
        logger.exception("could not prepare the EndDeal notices of a deal of tournament %s", tournament_id)
        return 0
    # The one claimant of the deal's end also plays its fair-play reference (never raises).
    record_reference(database_url, tournament_id, seed)
    if not notices:
        return 0
    with ThreadPoolExecutor(max_workers=len(notices), thread_name_prefix="end-deal") as pool:
        sent = list(pool.map(lambda notice: send_end_deal(*notice), notices))
    return sum(sent)


def send_end_deal(seat: SeatPlan, deal: DealSummary) -> bool:
    """One bot's EndDeal, with a short deadline; False when it could not be delivered.

    An uploaded bot that starts fresh every match (arena/play/hosted.py) is not told: a new
    process, started only to be told and then ended, could keep nothing of it."""
    if seat.build_id is not None and memory_scope() == "match":
        return False
    try:
        player = make_seat_player(seat)
    except Exception as exc:  # an address no longer usable, say: the bot's loss only
        logger.info("EndDeal not sent to %s: %s", seat.name, exc)
        return False
    try:
        if hasattr(player, "lifecycle_timeout_s"):  # a served bot's GrpcPlayer, a connected one's LinkPlayer
            player.lifecycle_timeout_s = END_DEAL_TIMEOUT_S
        notify = getattr(player, "deal_end", None)
        if notify is None:  # a seat the arena would not dial (RefusedPlayer)
            return False
        notify(deal)
        return True
    except Exception as exc:  # the bot's loss only: it is told nothing else
        logger.info("EndDeal not delivered to %s: %s", seat.name, exc)
        return False
    finally:
        with contextlib.suppress(Exception):
            player.close()
