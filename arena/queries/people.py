"""The people's board and the records of play between people and bots (issue #39).

- :func:`people_page`: a page of the people's board (arena/ratings/people.py: each person
  fitted against the bots' ratings held fixed, on the bots' scale), searched by name, kept in
  arena/queries/cache.py until another match is done or a bot gets a new version.
- :func:`against_people`: a bot's record against people (matches, wins, draws and losses by
  final score against the person, chips per 100 hands), for its page and API.
- :func:`games_as_player`: the signed-in owner's own matches at the table (/me).

A person's matches are those of kind ``people`` (arena.store.statuses.TournamentKind.PEOPLE),
its seat a bot row flagged ``person``; no rating of bots counts them (UNRATED_KINDS).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session, aliased

from arena.queries import Paging, iso
from arena.queries.cache import revalidated
from arena.queries.leaderboard import board, done_token, rating_fields, versions_token
from arena.queries.stats import people_kind
from arena.ratings.leaderboard import Leaderboard, board_page
from arena.ratings.model import RatedMatch
from arena.ratings.people import PeopleTable, fit_people
from arena.store.db import session_scope
from arena.store.models import Bot, BotVersion, Match, MatchSeat, Owner
from arena.store.statuses import MatchStatus

#: A person's rating id: "person:<bot id>" (bots are rated by version id, "123").
PERSON = "person:"


@dataclass(frozen=True)
class _Record:
    matches: int = 0
    hands: int = 0
    chips: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0


@dataclass(frozen=True)
class PeopleBoard:
    """Every person who played a done people match: the fit and each one's record."""

    table: PeopleTable
    names: dict[str, tuple[str, str]]  # rating id -> (seat name, owner name)
    records: dict[str, _Record]


def _counted() -> ColumnElement[bool]:
    """The people matches a rating or record counts: stats.people_kind's less the person's
    practice tables (:func:`_own_tables`)."""
    return people_kind() & Match.id.not_in(_own_tables())


def _own_tables() -> Any:
    """Matches where the person sat with a bot of their own: a bot that can lose on purpose, or
    (self-served) show its owner its hand. They stay playable for debugging one's own bot, but
    no rating or record counts them (tests/dashboard/test_table_hostile.py)."""
    person_seat, bot_seat = aliased(MatchSeat), aliased(MatchSeat)
    person, bot = aliased(Bot), aliased(Bot)
    return (
        select(person_seat.match_id)
        .join(person, (person.id == person_seat.bot_id) & person.person.is_(True))
        .join(bot_seat, (bot_seat.match_id == person_seat.match_id) & (bot_seat.seat != person_seat.seat))
        .join(bot, bot.id == bot_seat.bot_id)
        .where(bot.owner_id == person.owner_id)
    )


Names = dict[str, tuple[str, str]]


def people_matches(session: Session) -> tuple[list[RatedMatch], Names, dict[str, _Record]]:
    """Every done people match as a rating input (people as ``person:<bot id>``, bots by
    version id), in match id order, with each person's names and record."""
    rows = session.execute(
        select(
            MatchSeat.match_id, MatchSeat.bot_id, MatchSeat.bot_version_id, MatchSeat.score, Match.hands,
            Match.tournament_id, Match.seed, Bot.person, Bot.name, Owner.name,
        )
        .join(Match, Match.id == MatchSeat.match_id)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .join(Owner, Owner.id == Bot.owner_id)
        .where(Match.status == MatchStatus.DONE, MatchSeat.score.is_not(None), _counted())
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    ).all()
    results: list[RatedMatch] = []
    names: Names = {}
    tally: dict[str, list[int]] = {}
    at = 0
    while at < len(rows):
        end = at
        while end < len(rows) and rows[end][0] == rows[at][0]:
            end += 1
        seats = rows[at:end]
        at = end
        if len(seats) < 2:
            continue
        ids = tuple(f"{PERSON}{r[1]}" if r[7] else str(r[2]) for r in seats)
        scores = tuple(int(r[3] or 0) for r in seats)  # None is filtered out above
        match_id, hands, tournament_id, seed = seats[0][0], seats[0][4], seats[0][5], seats[0][6]
        results.append(RatedMatch(int(match_id), ids, scores, (int(tournament_id), int(seed))))
        for i, r in enumerate(seats):
            if not r[7]:
                continue
            names[ids[i]] = (r[8], r[9])
            best_other = max(s for j, s in enumerate(scores) if j != i)
            outcome = 0 if scores[i] > best_other else 1 if scores[i] == best_other else 2
            t = tally.setdefault(ids[i], [0, 0, 0, 0, 0, 0])
            t[0] += 1
            t[1] += int(hands)
            t[2] += scores[i]
            t[3 + outcome] += 1
    return results, names, {k: _Record(*v) for k, v in tally.items()}


def fresh_people_board(session: Session, bots: Leaderboard) -> PeopleBoard:
    """The people's fit against the bots' board ``bots`` (every rated version's rating held
    fixed: a bound is no rating to hold), with every person's names and record."""
    matches, names, records = people_matches(session)
    fixed = {str(vid): v.elo for vid, v in bots.versions.items() if v.basis != "one-sided"}
    table = fit_people(matches, fixed, names.keys())
    return PeopleBoard(table, names, records)


def _fresh(url: str) -> PeopleBoard:
    with session_scope(url) as session:
        return fresh_people_board(session, board(session, url))


def people_board(session: Session, url: str) -> PeopleBoard:
    """:func:`fresh_people_board`, kept until another match is done or a bot gets a new
    version (the bots' ratings it holds fixed move with both)."""
    token: Hashable = (done_token(session, url), versions_token(session, url))
    return revalidated(("people", url), token, lambda: _fresh(url))


def people_rows(found: PeopleBoard) -> list[dict[str, Any]]:
    """The board's rows, best first: rated people (estimates, then bounds), then the people
    with no comparison against a rated bot (unranked)."""
    table = found.table
    rows: list[dict[str, Any]] = []
    for i, r in enumerate(table.ratings):
        los = table.los[i] if i < len(table.los) else None
        rating = rating_fields(r.elo, r.low, r.high, r.provisional, r.basis, r.reason)
        rating["matches"] = r.matches
        rows.append(_row(found, r.bot, i + 1, rating, None if los is None else round(los, 3)))
    for person in sorted(table.unrated, key=lambda p: found.names.get(p, ("", ""))[1]):
        rows.append(_row(found, person, None, None, None))
    return rows


def _row(found: PeopleBoard, person: str, rank: int | None, rating: dict[str, Any] | None,
         los: float | None) -> dict[str, Any]:  # fmt: skip
    seat, owner = found.names.get(person, ("", ""))
    rec = found.records.get(person, _Record())
    points, weight = found.table.scores.get(person, (0.0, 0.0))
    return {
        "rank": rank,
        "person": owner,
        "seat": seat,
        "rating": rating,
        "los_next": los,
        "matches": rec.matches,
        "hands": rec.hands,
        "wins": rec.wins,
        "draws": rec.draws,
        "losses": rec.losses,
        "chips": rec.chips,
        "chips_per_100": round(100 * rec.chips / rec.hands, 2) if rec.hands else None,
        # The share of comparisons with rated bots won, as the fit weighs them.
        "score": round(points / weight, 4) if weight else None,
    }


def people_page(session: Session, url: str, page: Paging, q: str | None = None) -> dict[str, Any]:
    """One page of the people's board (ranks stay the whole board's), of the people whose
    name holds ``q`` (lower case; checked by the caller), and where it is: ``page``,
    ``per_page``, ``total`` (rows found), ``pages``, ``q`` and ``on_board`` (the whole board's rows)."""
    rows = people_rows(people_board(session, url))
    shown, where = board_page(rows, lambda r: (r["person"], r["seat"]), q, page.page, page.per_page)
    where["on_board"] = where.pop("bots")
    return {"rows": list(shown), **where}


def against_people(session: Session, bot_id: int) -> dict[str, Any]:
    """The bot's record against people: its done people matches, won, drawn and lost by its
    final score against the person's, and its chips per 100 hands in them. Every version's."""
    me, them = aliased(MatchSeat), aliased(MatchSeat)
    person = aliased(Bot)
    row = session.execute(
        select(
            func.count(me.id),
            func.coalesce(func.sum(case((me.score > them.score, 1), else_=0)), 0),
            func.coalesce(func.sum(case((me.score == them.score, 1), else_=0)), 0),
            func.coalesce(func.sum(case((me.score < them.score, 1), else_=0)), 0),
            func.coalesce(func.sum(Match.hands), 0),
            func.coalesce(func.sum(me.score), 0),
        )
        .select_from(me)
        .join(Match, Match.id == me.match_id)
        .join(them, (them.match_id == me.match_id) & (them.seat != me.seat))
        .join(person, (person.id == them.bot_id) & person.person.is_(True))
        .where(me.bot_id == bot_id, Match.status == MatchStatus.DONE, me.score.is_not(None))
        .where(them.score.is_not(None), _counted())
    ).one()
    matches, wins, draws, losses, hands, chips = (int(v or 0) for v in row)
    return {
        "matches": matches,
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "hands": hands,
        "chips": chips,
        "chips_per_100": round(100 * chips / hands, 2) if hands else None,
    }


#: The most matches /me lists.
MY_GAMES = 50


def games_as_player(session: Session, owner_id: int, limit: int = MY_GAMES) -> list[dict[str, Any]]:
    """The owner's own matches at the table, newest first: each with its status, the bots
    met and every seat's score once done, and the owner's result (won/drew/lost by final
    score against the best bot; None until done)."""
    mine = aliased(MatchSeat)
    rows = session.execute(
        select(Match.id, Match.status, Match.hands, Match.created_at, Match.finished_at, mine.seat)
        .join(mine, mine.match_id == Match.id)
        .join(Bot, Bot.id == mine.bot_id)
        .where(Bot.owner_id == owner_id, Bot.person.is_(True), people_kind())
        .order_by(Match.id.desc())
        .limit(limit)
    ).all()
    if not rows:
        return []
    seats: dict[int, list[tuple[int, str, int | None, bool, int]]] = {}
    for match_id, seat, name, score, is_person, number in session.execute(
        select(MatchSeat.match_id, MatchSeat.seat, Bot.name, MatchSeat.score, Bot.person, BotVersion.number)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .join(BotVersion, BotVersion.id == MatchSeat.bot_version_id)
        .where(MatchSeat.match_id.in_([r[0] for r in rows]))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    ):
        seats.setdefault(int(match_id), []).append((int(seat), name, score, bool(is_person), int(number)))
    out = []
    for match_id, status, hands, created, finished, my_seat in rows:
        table = seats.get(int(match_id), [])
        done = status == MatchStatus.DONE
        mine_score = next((s[2] for s in table if s[0] == my_seat), None)
        others = [s[2] for s in table if s[0] != my_seat and s[2] is not None]
        result = None
        if done and mine_score is not None and others:
            best = max(others)
            result = "won" if mine_score > best else "drew" if mine_score == best else "lost"
        out.append({
            "match": int(match_id),
            "status": status,
            "hands": int(hands),
            "seat": int(my_seat),
            "bots": [
                {"name": s[1], "version": s[4], "score": s[2] if done else None} for s in table if not s[3]
            ],
            "score": mine_score if done else None,
            "result": result,
            "created_at": iso(created),
            "finished_at": iso(finished),
        })
    return out
