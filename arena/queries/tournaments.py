"""Tournaments: the list with progress, one tournament (its entries, and its seed once it is
finished), and its standings, pairwise score matrix and per-table results."""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.errors import TournamentNotFoundError
from arena.queries import Page, Paging, check_paging, iso, vars_of
from arena.queries.cache import cached
from arena.queries.stats import bot_stats, record
from arena.queries.story import by_rate, headline, sprt_history
from arena.ratings.terms import PAIRWISE
from arena.store.models import Bot, BotVersion, Match, MatchSeat, Owner, Tournament, TournamentEntry
from arena.store.statuses import (
    MATCH_STATUSES,
    TOURNAMENT_STATUSES,
    MatchStatus,
    TournamentKind,
    TournamentStatus,
)
from arena.store.tokens import done_token
from arena.tournaments.sprt import sprt_state


@dataclass(frozen=True)
class Progress:
    pending: int = 0
    running: int = 0
    done: int = 0
    failed: int = 0

    @property
    def total(self) -> int:
        return self.pending + self.running + self.done + self.failed

    @property
    def unfinished(self) -> int:
        """Matches still to be played (failed ones wait for a resume)."""
        return self.pending + self.running

    def to_json(self) -> dict[str, int]:
        return {
            "pending": self.pending,
            "running": self.running,
            "done": self.done,
            "failed": self.failed,
            "total": self.total,
        }


@dataclass(frozen=True)
class EntryRow:
    bot_id: int
    bot_name: str
    bot_version_id: int
    version: int


@dataclass(frozen=True)
class TournamentRow:
    id: int
    name: str
    status: str
    table_sizes: list[int]
    deals_per_table: int
    hands_per_match: int
    created_at: dt.datetime
    finished_at: dt.datetime | None
    progress: Progress


@dataclass(frozen=True)
class TournamentView(TournamentRow):
    entries: list[EntryRow]
    rules: dict[str, Any]
    config: dict[str, Any]
    seed: int | None  # only once finished
    deal_mode: str = "auto"  # or "duplicate", "independent" (arena/tournaments/lifecycle.py)


def tournament_progress(session: Session, tournament_id: int) -> Progress:
    """Counts of the tournament's matches by status (one indexed GROUP BY)."""
    return _progress_of(session, [tournament_id]).get(tournament_id, Progress())


def _progress_of(session: Session, ids: Sequence[int]) -> dict[int, Progress]:
    counts: dict[int, dict[str, int]] = {i: {} for i in ids}
    if ids:
        rows = session.execute(
            select(Match.tournament_id, Match.status, func.count(Match.id))
            .where(Match.tournament_id.in_(ids))
            .group_by(Match.tournament_id, Match.status)
        )
        for tid, status, count in rows:
            counts[tid][status] = int(count)
    return {tid: Progress(**{s: c.get(s, 0) for s in MATCH_STATUSES}) for tid, c in counts.items()}


def list_tournaments(
    session: Session, *, status: str | None = None, limit: int = 50, offset: int = 0
) -> Page[TournamentRow]:
    """Tournaments, newest first, each with its progress."""
    check_paging(limit, offset)
    query = select(Tournament)
    count = select(func.count(Tournament.id))
    if status is not None:
        query, count = query.where(Tournament.status == status), count.where(Tournament.status == status)
    total = session.execute(count).scalar_one()
    rows = list(session.scalars(query.order_by(Tournament.id.desc()).limit(limit).offset(offset)))
    progress = _progress_of(session, [t.id for t in rows])
    return Page([_tournament_row(t, progress[t.id]) for t in rows], total, limit, offset)


def get_tournament(session: Session, tournament_id: int) -> TournamentView:
    tournament = session.get(Tournament, tournament_id)
    if tournament is None:
        raise TournamentNotFoundError(f"there is no tournament {tournament_id!r}")
    entries = [
        EntryRow(bot_id, name, version_id, number)
        for bot_id, name, version_id, number in session.execute(
            select(TournamentEntry.bot_id, Bot.name, TournamentEntry.bot_version_id, BotVersion.number)
            .join(Bot, Bot.id == TournamentEntry.bot_id)
            .join(BotVersion, BotVersion.id == TournamentEntry.bot_version_id)
            .where(TournamentEntry.tournament_id == tournament_id)
            .order_by(TournamentEntry.id)
        )
    ]
    row = _tournament_row(tournament, tournament_progress(session, tournament_id))
    return TournamentView(
        **vars_of(row),
        entries=entries,
        rules=dict(tournament.rules or {}),
        config=dict(tournament.config or {}),
        seed=tournament.seed if tournament.status == TournamentStatus.FINISHED else None,
        deal_mode=tournament.deal_mode,
    )


def _tournament_row(t: Tournament, progress: Progress) -> TournamentRow:
    return TournamentRow(
        t.id,
        t.name,
        t.status,
        [int(n) for n in t.table_sizes],
        t.deals_per_table,
        t.hands_per_match,
        t.created_at,
        t.finished_at,
        progress,
    )


# -- the pages' shapes ------------------------------------------------------------------------


STATUSES = TOURNAMENT_STATUSES


def _hands(session: Session, ids: list[int]) -> dict[int, tuple[int, int]]:
    """Hands played so far and hands planned per tournament (workers update
    ``hands_played`` as a match goes, so a long match shows progress too)."""
    if not ids:
        return {}
    rows = session.execute(
        select(Match.tournament_id, func.coalesce(func.sum(Match.hands_played), 0),
               func.coalesce(func.sum(Match.hands), 0))
        .where(Match.tournament_id.in_(ids))
        .group_by(Match.tournament_id)
    )
    return {tid: (int(played), int(planned)) for tid, played, planned in rows}


def progress_json(p: Progress, status: str, hands: tuple[int, int]) -> dict[str, Any]:
    finished = p.done + p.failed
    return {
        "status": status,
        "matches": p.to_json(),
        "hands_played": hands[0],
        "hands_planned": hands[1],
        "percent": round(100.0 * finished / p.total, 1) if p.total else 0.0,
    }


def _header(t: TournamentRow, hands: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "status": t.status,
        "table_sizes": list(t.table_sizes),
        "deals_per_table": t.deals_per_table,
        "matches_per_table": t.deals_per_table,  # alias: the old name, for older clients
        "hands_per_match": t.hands_per_match,
        "created_at": iso(t.created_at),
        "finished_at": iso(t.finished_at),
        "progress": progress_json(t.progress, t.status, hands),
    }


def tournament_list(session: Session, status: str | None, page: Paging) -> dict[str, Any]:
    result = list_tournaments(session, status=status, limit=page.per_page, offset=page.offset)
    entries = dict(
        session.execute(
            select(TournamentEntry.tournament_id, func.count(TournamentEntry.id))
            .where(TournamentEntry.tournament_id.in_([t.id for t in result.items]))
            .group_by(TournamentEntry.tournament_id)
        ).all()
    )
    hands = _hands(session, [t.id for t in result.items])
    return {
        "tournaments": [
            {**_header(t, hands.get(t.id, (0, 0))), "entries": int(entries.get(t.id, 0))}
            for t in result.items
        ],
        "page": page.page,
        "per_page": page.per_page,
        "total": result.total,
        "pages": max(1, -(-result.total // page.per_page)),
    }


def progress(session: Session, tournament_id: int) -> dict[str, Any]:
    t = get_tournament(session, tournament_id)
    out = {"id": t.id, **progress_json(t.progress, t.status, _hands(session, [t.id]).get(t.id, (0, 0)))}
    test = _kind(session, tournament_id).get("sprt")
    if test is not None:  # a sequential test: its LLR as it plays, for the live page
        out["sprt"] = test
    return out


def tournament_detail(session: Session, url: str, tournament_id: int) -> dict[str, Any]:
    t = get_tournament(session, tournament_id)
    token = done_token(session, tournament_id)
    results = cached(("tournament", url, tournament_id), token, lambda: _results(session, tournament_id))
    kind = _kind(session, tournament_id)
    if "sprt" in kind:  # its LLR after each look, for the chart
        row = session.get(Tournament, tournament_id)
        assert row is not None
        kind["sprt"]["history"] = cached(("sprt-history", url, tournament_id), token,
                                         lambda: sprt_history(session, row))
    return {
        **_header(t, _hands(session, [t.id]).get(t.id, (0, 0))),
        "rules": t.rules,
        "config": t.config,
        "deal_mode": t.deal_mode,
        "seed": t.seed,  # None until the tournament is finished (the store sees to it)
        "entries": [{"bot": e.bot_name, "version": e.version} for e in t.entries],
        **kind,
        **results,
        # Once finished: who won, by how much and how surely. Kept against the status too: it
        # flips after the last match is done, without a new done match.
        "headline": cached(("headline", url, tournament_id), (token, t.status),
                           lambda: headline(session, tournament_id, results["standings"])),
    }


def _kind(session: Session, tournament_id: int) -> dict[str, Any]:
    """The tournament's kind; a gauntlet's challenger; a sequential test's LLR, bounds and
    verdict (arena/tournaments/sprt.py)."""
    row = session.get(Tournament, tournament_id)
    if row is None or row.kind == TournamentKind.ROUND_ROBIN:
        return {"kind": TournamentKind.ROUND_ROBIN.value}
    params = row.params or {}
    if row.kind == TournamentKind.LADDER:  # no challenger; arena/ladder/status.py tells the rest
        return {"kind": row.kind, "challenger": None}
    # A people's table (and any kind without one) has no challenger: no lookup by a None key.
    key = params.get("challenger")
    challenger = session.get(Bot, key) if key is not None else None
    out: dict[str, Any] = {"kind": row.kind, "challenger": challenger.name if challenger else None}
    if row.kind == TournamentKind.SPRT:
        out["sprt"] = sprt_state(session, row).to_json()
        # The owner who started it through the API (None: an operator, from the store).
        starter = session.get(Owner, row.owner_id) if row.owner_id is not None else None
        out["started_by"] = starter.name if starter else None
    return out


def _results(session: Session, tournament_id: int) -> dict[str, Any]:
    rows = session.execute(
        select(Match.id, Match.table_index, Match.hands_played, MatchSeat.seat, Bot.name, MatchSeat.score,
               MatchSeat.hands_won)
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .where(Match.tournament_id == tournament_id, Match.status == MatchStatus.DONE)
        .order_by(Match.id, MatchSeat.seat)
    ).all()
    matches: dict[int, list[tuple[str, int]]] = defaultdict(list)
    tables: dict[int, dict[str, Any]] = {}
    for match_id, table, _hands_played, _seat, name, score, _won in rows:
        matches[match_id].append((name, score or 0))
        tab = tables.setdefault(table, {"table": table, "matches": set(), "chips": defaultdict(int)})
        tab["matches"].add(match_id)
        tab["chips"][name] += score or 0
    stats = bot_stats(session, tournament_id=tournament_id)
    standings = by_rate([{"bot": st.name, **record(st)} for st in stats])
    return {
        "standings": standings,
        "matrix": _matrix(matches),
        "tables": _tables(session, tournament_id, tables),
    }


def _matrix(matches: dict[int, list[tuple[str, int]]]) -> dict[str, Any]:
    """Pairwise score of each bot against each other one, as the rating model counts it: per
    match and pair 1 / ½ / 0 by final score, weighted 1/(seats - 1) (arena/ratings/terms.py
    PAIRWISE). ``p`` tests "no better than an even score" with a normal approximation over
    the matches (two-sided, on the weighted mean's effective number of matches)."""
    results: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    chips: dict[tuple[str, str], int] = defaultdict(int)
    names: set[str] = set()
    for seats in matches.values():
        weight = 1.0 / max(len(seats) - 1, 1)
        for a, sa in seats:
            names.add(a)
            for b, sb in seats:
                if a != b:
                    results[(a, b)].append((1.0 if sa > sb else 0.5 if sa == sb else 0.0, weight))
                    chips[(a, b)] += sa - sb
    order = sorted(names)
    cells: dict[str, dict[str, Any]] = {}
    for (a, b), xs in results.items():
        n = len(xs)
        total = sum(w for _, w in xs)
        mean = sum(x * w for x, w in xs) / total
        n_eff = total**2 / sum(w * w for _, w in xs)
        var = sum(w * (x - mean) ** 2 for x, w in xs) / total * n_eff / (n_eff - 1) if n_eff > 1 else 0.0
        se = math.sqrt(var / n_eff) if n_eff > 1 else 0.0
        if se > 0:
            p = 2 * (1 - NormalDist().cdf(abs(mean - 0.5) / se))
        else:
            p = 1.0 if mean == 0.5 or n < 5 else 0.0  # unanimous over 5+ matches: clear
        level = "strong" if p < 0.01 else "significant" if p < 0.05 else "none"
        cells.setdefault(a, {})[b] = {
            "score": round(mean, 4),
            "matches": n,
            "weight": round(total, 4),
            "chips": chips[(a, b)],
            "p": round(p, 4),
            "level": level,
            "better": mean > 0.5,
        }
    return {"bots": order, "cells": cells, "shows": PAIRWISE}


def _tables(session: Session, tournament_id: int, done: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    counts = session.execute(
        select(Match.table_index, Match.status, func.count(Match.id))
        .where(Match.tournament_id == tournament_id)
        .group_by(Match.table_index, Match.status)
    ).all()
    per_table: dict[int, dict[str, int]] = defaultdict(lambda: dict.fromkeys(MATCH_STATUSES, 0))
    for table, status, count in counts:
        per_table[table][status] = int(count)
    # Who sits at each table, even before anything there is done.
    bots_at: dict[int, set[str]] = defaultdict(set)
    for table, name in session.execute(
        select(Match.table_index, Bot.name)
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .where(Match.tournament_id == tournament_id)
        .distinct()
    ):
        bots_at[table].add(name)
    out = []
    for table in sorted(per_table):
        chips = done.get(table, {}).get("chips", {})
        chips_of: dict[str, int] = dict(chips)
        bots = sorted(bots_at[table], key=lambda b: (-int(chips_of.get(b, 0)), b))
        best = max(chips.values()) if chips else None
        out.append({
            "table": table,
            "matches": {"total": sum(per_table[table].values()), **per_table[table]},
            "results": [
                {"bot": b, "chips": chips.get(b, 0), "leader": best is not None and chips.get(b) == best}
                for b in bots
            ],
        })
    return out
