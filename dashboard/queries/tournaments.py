"""Tournaments: the list with progress, and one tournament's standings, pairwise score
matrix and per-table results."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable
from statistics import NormalDist
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.models import Bot, BotVersion, Match, MatchSeat, Tournament, TournamentEntry
from dashboard.errors import NotFoundError
from dashboard.queries import iso
from dashboard.queries.cache import cached

STATUSES = ("created", "running", "paused", "finished")
MATCH_STATUSES = ("pending", "running", "done", "failed")


def _empty_progress() -> dict[str, Any]:
    matches = {"total": 0, **dict.fromkeys(MATCH_STATUSES, 0)}
    return {"matches": matches, "hands_played": 0, "hands_planned": 0}


def _progress_rows(session: Session, tournament_id: int | None) -> dict[int, dict[str, Any]]:
    query = select(
        Match.tournament_id, Match.status, func.count(Match.id),
        func.coalesce(func.sum(Match.hands_played), 0), func.coalesce(func.sum(Match.hands), 0),
    ).group_by(Match.tournament_id, Match.status)
    if tournament_id is not None:
        query = query.where(Match.tournament_id == tournament_id)
    out: dict[int, dict[str, Any]] = defaultdict(_empty_progress)
    for tid, status, count, played, planned in session.execute(query):
        p = out[tid]
        p["matches"][status] = p["matches"].get(status, 0) + int(count)
        p["matches"]["total"] += int(count)
        p["hands_played"] += int(played)
        p["hands_planned"] += int(planned)
    return out


def _finish_progress(p: dict[str, Any], status: str) -> dict[str, Any]:
    total = p["matches"]["total"]
    finished = p["matches"]["done"] + p["matches"]["failed"]
    return {
        "status": status,
        **p,
        "percent": round(100.0 * finished / total, 1) if total else 0.0,
    }


def tournament_list(session: Session) -> list[dict[str, Any]]:
    progress = _progress_rows(session, None)
    entries = dict(
        session.execute(
            select(TournamentEntry.tournament_id, func.count(TournamentEntry.id)).group_by(
                TournamentEntry.tournament_id
            )
        ).tuples().all()
    )
    out = []
    for t in session.scalars(select(Tournament).order_by(Tournament.id.desc())):
        out.append({
            **_header(t),
            "entries": int(entries.get(t.id, 0)),
            "progress": _finish_progress(progress.get(t.id, _empty_progress()), t.status),
        })
    return out


def _header(t: Tournament) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "status": t.status,
        "table_sizes": list(t.table_sizes or []),
        "matches_per_table": t.matches_per_table,
        "hands_per_match": t.hands_per_match,
        "created_at": iso(t.created_at),
        "finished_at": iso(t.finished_at),
    }


def get_tournament(session: Session, tournament_id: int) -> Tournament:
    t = session.get(Tournament, tournament_id)
    if t is None:
        raise NotFoundError(f"there is no tournament {tournament_id}")
    return t


def progress(session: Session, tournament_id: int) -> dict[str, Any]:
    t = get_tournament(session, tournament_id)
    p = _progress_rows(session, tournament_id).get(tournament_id, _empty_progress())
    return {"id": t.id, **_finish_progress(p, t.status)}


def _token(session: Session, tournament_id: int) -> Hashable:
    row = session.execute(
        select(func.count(Match.id), func.max(Match.id)).where(
            Match.tournament_id == tournament_id, Match.status == "done"
        )
    ).one()
    return (int(row[0]), row[1])


def tournament_detail(session: Session, url: str, tournament_id: int) -> dict[str, Any]:
    t = get_tournament(session, tournament_id)
    entries = session.execute(
        select(Bot.name, BotVersion.number)
        .join(TournamentEntry, TournamentEntry.bot_id == Bot.id)
        .join(BotVersion, BotVersion.id == TournamentEntry.bot_version_id)
        .where(TournamentEntry.tournament_id == tournament_id)
        .order_by(Bot.name)
    ).all()
    results = cached(
        ("tournament", url, tournament_id), _token(session, tournament_id),
        lambda: _results(session, tournament_id),
    )
    return {
        **_header(t),
        "rules": t.rules or {},
        "config": t.config or {},
        # The tournament seed derives every match seed: secret until it is over.
        "seed": t.seed if t.status == "finished" else None,
        "entries": [{"bot": name, "version": number} for name, number in entries],
        "progress": progress(session, tournament_id),
        **results,
    }


def _results(session: Session, tournament_id: int) -> dict[str, Any]:
    rows = session.execute(
        select(Match.id, Match.table_index, Match.hands_played, MatchSeat.seat, Bot.name, MatchSeat.score,
               MatchSeat.hands_won)
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .where(Match.tournament_id == tournament_id, Match.status == "done")
        .order_by(Match.id, MatchSeat.seat)
    ).all()
    matches: dict[int, list[tuple[str, int]]] = defaultdict(list)
    tables: dict[int, dict[str, Any]] = {}
    standings: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for match_id, table, hands, _seat, name, score, won in rows:
        matches[match_id].append((name, score or 0))
        tab = tables.setdefault(table, {"table": table, "matches": set(), "chips": defaultdict(int)})
        tab["matches"].add(match_id)
        tab["chips"][name] += score or 0
        s = standings[name]
        s["matches"] += 1
        s["hands"] += hands
        s["hands_won"] += won
        s["chips"] += score or 0
    return {
        "standings": _standings(standings),
        "matrix": _matrix(matches),
        "tables": _tables(session, tournament_id, tables),
    }


def _standings(standings: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, s in standings.items():
        hands = int(s["hands"])
        out.append({
            "bot": name,
            "matches": int(s["matches"]),
            "hands": hands,
            "chips": int(s["chips"]),
            "chips_per_100": round(100 * s["chips"] / hands, 2) if hands else None,
            "win_rate": round(s["hands_won"] / hands, 4) if hands else None,
        })
    out.sort(key=lambda r: (-r["chips"], r["bot"]))
    return out


def _matrix(matches: dict[int, list[tuple[str, int]]]) -> dict[str, Any]:
    """Pairwise score of each bot against each other one, as in the rating model: per match
    and pair 1 / ½ / 0 by final score. ``p`` tests "no better than an even score" with a
    normal approximation over the matches (two-sided)."""
    results: dict[tuple[str, str], list[float]] = defaultdict(list)
    chips: dict[tuple[str, str], int] = defaultdict(int)
    names: set[str] = set()
    for seats in matches.values():
        for a, sa in seats:
            names.add(a)
            for b, sb in seats:
                if a != b:
                    results[(a, b)].append(1.0 if sa > sb else 0.5 if sa == sb else 0.0)
                    chips[(a, b)] += sa - sb
    order = sorted(names)
    cells: dict[str, dict[str, Any]] = {}
    for (a, b), xs in results.items():
        n = len(xs)
        mean = sum(xs) / n
        var = sum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
        se = math.sqrt(var / n) if n > 1 else 0.0
        if se > 0:
            p = 2 * (1 - NormalDist().cdf(abs(mean - 0.5) / se))
        else:
            p = 1.0 if mean == 0.5 or n < 5 else 0.0  # unanimous over 5+ matches: clear
        level = "strong" if p < 0.01 else "significant" if p < 0.05 else "none"
        cells.setdefault(a, {})[b] = {
            "score": round(mean, 4),
            "matches": n,
            "chips": chips[(a, b)],
            "p": round(p, 4),
            "level": level,
            "better": mean > 0.5,
        }
    return {"bots": order, "cells": cells}


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
