"""A tournament as it plays: timing (elapsed, rate, time left), the matches being played
with their hands so far and running score (once no other rotation of its deal is still to
finish), and "now showing": the latest finished deals, whose replays are public, for the live
tournament page, the home page and their poll."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.queries import iso
from arena.queries.matches import unfinished_in_deal
from arena.queries.story import bottleneck
from arena.store.models import Bot, Match, MatchSeat, Tournament, utcnow
from arena.store.statuses import MatchStatus, TournamentStatus

#: Running matches listed on the page at most (a big tournament may play hundreds at once).
RUNNING_SHOWN = 30
#: Finished deals "now showing" at most, newest first.
DEALS_SHOWN = 3
#: Finished matches read at a time, newest first, to find those deals (most recent matches
#: belong to a deal still being played in a big tournament), and how many such reads at most.
_BATCH = 200
_BATCHES = 10


def timing(
    session: Session, tournament_id: int, progress: dict[str, Any], capacity: Mapping[int, int] | None = None
) -> dict[str, Any]:
    """Elapsed time since the first match started, the pace in hands and matches per minute
    over that time, and the time left (None until a hand is played): the longer of "the
    hands left at that pace" and, given each bot's ``capacity`` (matches it plays at once),
    the time its bottleneck bot needs for its unfinished matches (story.bottleneck), named
    when it is the longer: near the end a few bots play at capacity while the rest idle."""
    t = session.get(Tournament, tournament_id)
    first = select(func.min(Match.started_at)).where(Match.tournament_id == tournament_id)
    started = session.scalar(first)
    finished = progress["status"] == TournamentStatus.FINISHED
    end = t.finished_at if t is not None and finished else None
    if started is None:
        return {"started_at": None, "elapsed_s": 0, "hands_per_min": None, "matches_per_min": None,
                "eta_s": None, "bottleneck": None, "finished": finished}
    elapsed = max(0.0, ((end or utcnow()) - started).total_seconds())
    played, planned = progress["hands_played"], progress["hands_planned"]
    done = progress["matches"]["done"] + progress["matches"]["failed"]
    hands_rate = played / elapsed if elapsed > 0 and played else None
    eta = None
    if not finished and hands_rate:
        eta = round(max(0, planned - played) / hands_rate)
    neck = None
    if not finished and capacity is not None:
        neck = bottleneck(session, tournament_id, capacity)
        if neck is not None and eta is not None and neck["seconds"] <= eta:
            neck = None  # the pace is the longer: no one bot holds the rest up
        if neck is not None:
            eta = neck["seconds"]
    return {
        "started_at": iso(started),
        "elapsed_s": round(elapsed),
        "hands_per_min": round(60 * hands_rate, 1) if hands_rate else None,
        "matches_per_min": round(60 * done / elapsed, 2) if elapsed > 0 and done else None,
        "eta_s": 0 if finished else eta,
        "bottleneck": neck,
        "finished": finished,
    }


def running_matches(session: Session, tournament_id: int) -> list[dict[str, Any]]:
    """The matches being played: hands so far of the planned, and the running score (each
    worker stamps both with its heartbeat, every few seconds)."""
    return _running(session, Match.tournament_id == tournament_id)


def running_match(session: Session, match_id: int) -> dict[str, Any] | None:
    """One match while it is being played (as :func:`running_matches`), else None."""
    found = _running(session, Match.id == match_id)
    return found[0] if found else None


def _running(session: Session, where: Any) -> list[dict[str, Any]]:
    # Duplicate deals: the other rotations of a deal play the same cards. While one of them
    # is unfinished, a running score would tell its bots how hands of those cards went, so
    # it is shown only for the last rotation of a deal still being played.
    open_sibling = unfinished_in_deal(other=True)
    matches = session.execute(
        select(Match.id, Match.table_index, Match.hands_played, Match.hands, open_sibling.label("shared"))
        .where(where, Match.status == MatchStatus.RUNNING)
        .order_by(Match.id)
        .limit(RUNNING_SHOWN)
    ).all()
    if not matches:
        return []
    seats = _seats(session, [m.id for m in matches])
    out = []
    for m in matches:
        played = int(m.hands_played or 0)
        out.append({
            "id": m.id,
            "table": m.table_index,
            "hands_played": played,
            "hands": m.hands,
            # No score before a hand is stamped (a re-claimed match keeps its last try's).
            "score_hidden": bool(m.shared),
            "seats": [
                {"bot": s["bot"], "score": s["score"] if played and not m.shared else None}
                for s in seats[m.id]
            ],
        })
    return out


def now_showing(
    session: Session, tournament_id: int | None = None, deals: int = DEALS_SHOWN
) -> list[dict[str, Any]]:
    """The latest finished deals (of one tournament, or of the arena), newest first, each with
    its matches, seats and scores. Only deals whose every match is done: those records are
    already public (the replay, the seed, exports), so showing them leaks nothing to a bot,
    while a deal with a rotation still to play (or running) never appears."""
    picked = _latest_finished_deals(session, tournament_id, deals)
    out = []
    for (t_id, table, deal), finished in picked.items():
        rows = session.execute(
            select(Match.id, Match.table_index, Match.deal_index, Match.hands, Tournament.name)
            .join(Tournament, Tournament.id == Match.tournament_id)
            .where(Match.tournament_id == t_id, Match.table_index == table, Match.deal_index == deal,
                   Match.status == MatchStatus.DONE)
            .order_by(Match.id)
        ).all()
        if not rows:
            continue
        seats = _seats(session, [r.id for r in rows])
        out.append({
            "tournament": t_id,
            "tournament_name": rows[0].name,
            "table": rows[0].table_index,
            "deal": rows[0].deal_index,
            "finished_at": iso(finished),
            "matches": [{"id": r.id, "hands": r.hands, "seats": seats[r.id]} for r in rows],
        })
    return out


def _latest_finished_deals(
    session: Session, tournament_id: int | None, deals: int
) -> dict[tuple[int, int, int], Any]:
    """The latest ``deals`` finished deals, (tournament, table, deal) -> when their last match
    ended. A deal is its table and deal index, not its seed: a table dealt independently (a
    ladder's or an ``auto`` tournament's, where a bot keeps memory) gives each seat order its
    own seed, and by seed one deal was listed twice, or with one of its two matches. Reads
    recent matches by ``finished_at`` (ix_matches_finished: a correlated "is the deal done"
    test on every done match took a second on 100,000), then tests each deal once."""
    query = select(
        Match.tournament_id, Match.table_index, Match.deal_index, Match.status, Match.finished_at
    ).where(Match.finished_at.is_not(None))
    if tournament_id is not None:
        query = query.where(Match.tournament_id == tournament_id)
    query = query.order_by(Match.finished_at.desc())
    picked: dict[tuple[int, int, int], Any] = {}
    seen: set[tuple[int, int, int]] = set()
    for batch in range(_BATCHES):
        rows = session.execute(query.limit(_BATCH).offset(batch * _BATCH)).all()
        for r in rows:
            deal = (r.tournament_id, r.table_index, r.deal_index)
            if deal in seen:
                continue
            seen.add(deal)
            if r.status == MatchStatus.DONE and not _unfinished(session, *deal):
                picked[deal] = r.finished_at
                if len(picked) >= deals:
                    return picked
        if len(rows) < _BATCH:
            break
    return picked


def _unfinished(session: Session, tournament_id: int, table: int, deal: int) -> bool:
    """Whether a match of this deal is not done (ix_matches_table). Every match dealt from
    one seed is of one table and deal, so a deal done here has no rotation left to play."""
    return session.execute(
        select(Match.id)
        .where(Match.tournament_id == tournament_id, Match.table_index == table, Match.deal_index == deal,
               Match.status != MatchStatus.DONE)
        .limit(1)
    ).first() is not None


def _seats(session: Session, match_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """Each match's seats in order, ``{"bot", "score"}`` (a score the caller may yet hide)."""
    seats: dict[int, list[dict[str, Any]]] = {m: [] for m in match_ids}
    for match_id, name, score in session.execute(
        select(MatchSeat.match_id, Bot.name, MatchSeat.score)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .where(MatchSeat.match_id.in_(match_ids))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    ):
        seats[match_id].append({"bot": name, "score": score})
    return seats
