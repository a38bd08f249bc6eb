"""Playing records: per bot over done matches (chips, hands won, faults, decision times),
as the store keeps them per seat, and in the units the pages show. The fingerprint of the
done matches that cached results are kept against is arena/store/tokens.py's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from arena.store.models import Bot, Match, MatchSeat, Tournament
from arena.store.statuses import MatchStatus, TournamentKind


def people_kind() -> ColumnElement[bool]:
    """Matches of a person at the table (kind ``people``): a bot's record against people
    (arena/queries/people.py), kept apart from its record against bots."""
    people = select(Tournament.id).where(Tournament.kind == TournamentKind.PEOPLE.value)
    return Match.tournament_id.in_(people)


def against_bots() -> ColumnElement[bool]:
    """Matches between bots: every match but :func:`people_kind`'s."""
    return ~people_kind()


@dataclass(frozen=True)
class BotStats:
    bot_id: int
    name: str
    matches: int
    hands: int
    hands_won: int
    chips: int
    faults: int
    decisions: int
    latency_us_total: int
    latency_us_max: int

    @property
    def win_rate(self) -> float | None:
        return self.hands_won / self.hands if self.hands else None

    @property
    def chips_per_100(self) -> float | None:
        return 100 * self.chips / self.hands if self.hands else None

    @property
    def latency_us_mean(self) -> float | None:
        return self.latency_us_total / self.decisions if self.decisions else None


def _record_columns() -> tuple[ColumnElement[Any], ...]:
    """A record's sums over done seats, in BotStats's field order after the bot's name."""
    return (
        func.count(MatchSeat.id),
        func.coalesce(func.sum(Match.hands), 0),
        func.coalesce(func.sum(MatchSeat.hands_won), 0),
        func.coalesce(func.sum(MatchSeat.score), 0),
        func.coalesce(func.sum(MatchSeat.faults), 0),
        func.coalesce(func.sum(MatchSeat.decisions), 0),
        func.coalesce(func.sum(MatchSeat.latency_us_total), 0),
        func.coalesce(func.max(MatchSeat.latency_us_max), 0),
    )


def bot_stats(
    session: Session, *, bot_id: int | None = None, tournament_id: int | None = None
) -> list[BotStats]:
    """Playing record per bot over done matches (one indexed GROUP BY, no replay opened):
    every bot that played, or only ``bot_id``; optionally within one tournament. ``hands``
    counts the hands of the match (a forfeited rest of a match is charged in chips too).
    Without a tournament, matches against bots only (:func:`against_bots`)."""
    query = (
        select(
            MatchSeat.bot_id,
            Bot.name,
            *_record_columns(),
        )
        .join(Match, Match.id == MatchSeat.match_id)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .where(Match.status == MatchStatus.DONE)
        .group_by(MatchSeat.bot_id, Bot.name)
        .order_by(Bot.name)
    )
    if bot_id is not None:
        query = query.where(MatchSeat.bot_id == bot_id)
    if tournament_id is not None:
        query = query.where(Match.tournament_id == tournament_id)
    else:
        query = query.where(against_bots())
    return [BotStats(int(r[0]), r[1], *(int(v or 0) for v in r[2:])) for r in session.execute(query)]


def version_stats(session: Session, bot_id: int) -> dict[int, BotStats]:
    """One bot's playing record per version (version id -> its record) over done matches
    against bots (:func:`against_bots`)."""
    query = (
        select(
            MatchSeat.bot_version_id,
            *_record_columns(),
        )
        .join(Match, Match.id == MatchSeat.match_id)
        .where(Match.status == MatchStatus.DONE, MatchSeat.bot_id == bot_id, against_bots())
        .group_by(MatchSeat.bot_version_id)
    )
    name = session.scalar(select(Bot.name).where(Bot.id == bot_id)) or ""
    return {
        int(r[0]): BotStats(bot_id, name, *(int(v or 0) for v in r[1:])) for r in session.execute(query)
    }


def record(stats: BotStats | None) -> dict[str, Any]:
    """A bot's playing record in the units the pages show."""
    if stats is None:
        return {
            "matches": 0, "hands": 0, "hands_won": 0, "win_rate": None, "chips": 0, "chips_per_100": None,
            "faults": 0, "decisions": 0, "latency_ms_mean": None, "latency_ms_max": None,
        }
    mean = stats.latency_us_mean
    return {
        "matches": stats.matches,
        "hands": stats.hands,
        "hands_won": stats.hands_won,
        "win_rate": None if stats.win_rate is None else round(stats.win_rate, 4),
        "chips": stats.chips,
        "chips_per_100": None if stats.chips_per_100 is None else round(stats.chips_per_100, 2),
        "faults": stats.faults,
        "decisions": stats.decisions,
        "latency_ms_mean": None if mean is None else round(mean / 1000, 3),
        "latency_ms_max": round(stats.latency_us_max / 1000, 3) if stats.decisions else None,
    }
