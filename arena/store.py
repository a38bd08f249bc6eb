"""Read-side queries on the arena's store, for the dashboard and the CLI.

Every function takes an open :class:`~sqlalchemy.orm.Session` (the caller owns the
transaction) and returns frozen dataclasses, never ORM objects, so nothing lazy-loads after
the session is closed and ``dataclasses.asdict`` gives JSON-ready data.

Secrets stay secret: a match's seed, its replay and the match id its bots were given are
returned only once every match of its *deal* is done (the matches of the tournament dealt from
the same seed: the seat rotations of a duplicate deal), since a rotation's records show the
cards of the rotations still to be played; a tournament's seed only once it is finished.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import ColumnElement, exists, func, select
from sqlalchemy.orm import Session, aliased

from arena import replays
from arena.errors import ArenaError, NotFoundError
from arena.models import Bot, BotVersion, FaultRecord, Match, MatchSeat, Replay, Tournament, TournamentEntry
from arena.statuses import MATCH_STATUSES, MatchStatus, TournamentStatus

T = TypeVar("T")

MAX_PAGE = 500


class TournamentNotFoundError(NotFoundError):
    code = "tournament_not_found"


class MatchNotFoundError(NotFoundError):
    code = "match_not_found"


class InvalidQueryError(ArenaError):
    """A filter or paging value out of range (an unknown status, a negative offset)."""

    code = "invalid_query"


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
class Page(Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int


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
    deal_mode: str = "duplicate"  # or "independent" (arena/tournaments.py)


@dataclass(frozen=True)
class SeatRow:
    seat: int
    bot_id: int
    bot_name: str
    bot_version_id: int
    score: int | None  # only once done
    hands_won: int
    decisions: int
    faults: int
    latency_us_mean: float | None
    latency_us_max: int


@dataclass(frozen=True)
class MatchRow:
    id: int
    tournament_id: int
    key: str
    table_index: int
    deal_index: int
    rotation: int
    status: str
    hands: int
    hands_played: int
    faults: int
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    duration_ms: int | None
    seats: list[SeatRow]


@dataclass(frozen=True)
class FaultRow:
    seat: int
    bot_id: int
    hand_index: int
    decision: int
    kind: str
    reason: str


@dataclass(frozen=True)
class MatchView(MatchRow):
    public_id: str | None  # only once the deal is done
    seed: int | None  # only once the deal is done
    decisions: int
    forfeited_seat: int | None
    attempts: int
    error: str | None
    fault_records: list[FaultRow]
    has_replay: bool


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


# -- tournaments ------------------------------------------------------------------------------


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
    _check_paging(limit, offset)
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


# -- matches ----------------------------------------------------------------------------------


def deal_done_clause() -> ColumnElement[bool]:
    """SQL: every match dealt from this ``Match`` row's seed in its tournament is done."""
    sibling = aliased(Match)
    return ~exists().where(
        sibling.tournament_id == Match.tournament_id,
        sibling.seed == Match.seed,
        sibling.status != MatchStatus.DONE,
    )


def deal_done(session: Session, match: Match) -> bool:
    """Whether ``match`` and every other match of its deal are done (ix_matches_deal)."""
    if match.status != MatchStatus.DONE:
        return False
    unfinished = session.execute(
        select(Match.id)
        .where(
            Match.tournament_id == match.tournament_id,
            Match.seed == match.seed,
            Match.status != MatchStatus.DONE,
        )
        .limit(1)
    ).first()
    return unfinished is None


def get_match(session: Session, match_id: int) -> MatchView:
    match = session.get(Match, match_id)
    if match is None:
        raise MatchNotFoundError(f"there is no match {match_id!r}")
    done = match.status == MatchStatus.DONE
    revealed = deal_done(session, match)
    faults = []
    if done:
        faults = [
            FaultRow(f.seat, f.bot_id, f.hand_index, f.decision, f.kind, f.reason)
            for f in session.scalars(
                select(FaultRecord).where(FaultRecord.match_id == match_id).order_by(FaultRecord.id)
            )
        ]
    has_replay = revealed and session.execute(
        select(func.count()).select_from(Replay).where(Replay.match_id == match_id)
    ).scalar_one() > 0
    row = _match_row(match, _seats_of(session, [match])[match.id])
    return MatchView(
        **vars_of(row),
        public_id=match.public_id if revealed else None,
        seed=match.seed if revealed else None,
        decisions=match.decisions,
        forfeited_seat=match.forfeited_seat,
        attempts=match.attempts,
        error=match.error if match.status == MatchStatus.FAILED else None,
        fault_records=faults,
        has_replay=has_replay,
    )


def get_replay(session: Session, match_id: int) -> list[dict[str, Any]] | None:
    """The hand logs of a done match (tonk-hand/1 records with ``latency_us`` and
    ``faults``), or None while it or another match of its deal is not done."""
    match = session.get(Match, match_id)
    if match is None:
        raise MatchNotFoundError(f"there is no match {match_id!r}")
    if not deal_done(session, match):
        return None
    replay = session.get(Replay, match_id)
    return None if replay is None else replays.decode(replay.format, replay.data)


def _seats_of(session: Session, matches: Sequence[Match]) -> dict[int, list[SeatRow]]:
    out: dict[int, list[SeatRow]] = {m.id: [] for m in matches}
    if not matches:
        return out
    done = {m.id for m in matches if m.status == MatchStatus.DONE}
    rows = session.execute(
        select(MatchSeat, Bot.name)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .where(MatchSeat.match_id.in_(list(out)))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    )
    for seat, name in rows:
        out[seat.match_id].append(
            SeatRow(
                seat.seat,
                seat.bot_id,
                name,
                seat.bot_version_id,
                seat.score if seat.match_id in done else None,
                seat.hands_won,
                seat.decisions,
                seat.faults,
                seat.latency_us_total / seat.decisions if seat.decisions else None,
                seat.latency_us_max,
            )
        )
    return out


def _match_row(m: Match, seats: list[SeatRow]) -> MatchRow:
    return MatchRow(
        m.id,
        m.tournament_id,
        m.key,
        m.table_index,
        m.deal_index,
        m.rotation,
        m.status,
        m.hands,
        m.hands_played,
        m.faults,
        m.started_at,
        m.finished_at,
        m.duration_ms,
        seats,
    )


# -- bots -------------------------------------------------------------------------------------


def bot_stats(
    session: Session, *, bot_id: int | None = None, tournament_id: int | None = None
) -> list[BotStats]:
    """Playing record per bot over done matches (one indexed GROUP BY, no replay opened):
    every bot that played, or only ``bot_id``; optionally within one tournament. ``hands``
    counts the hands of the match (a forfeited rest of a match is charged in chips too)."""
    query = (
        select(
            MatchSeat.bot_id,
            Bot.name,
            func.count(MatchSeat.id),
            func.coalesce(func.sum(Match.hands), 0),
            func.coalesce(func.sum(MatchSeat.hands_won), 0),
            func.coalesce(func.sum(MatchSeat.score), 0),
            func.coalesce(func.sum(MatchSeat.faults), 0),
            func.coalesce(func.sum(MatchSeat.decisions), 0),
            func.coalesce(func.sum(MatchSeat.latency_us_total), 0),
            func.coalesce(func.max(MatchSeat.latency_us_max), 0),
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
    return [BotStats(int(r[0]), r[1], *(int(v or 0) for v in r[2:])) for r in session.execute(query)]


# -- helpers ----------------------------------------------------------------------------------


def vars_of(row: object) -> dict[str, Any]:
    """A dataclass's fields as keyword arguments (shallow, unlike ``asdict``)."""
    return {name: getattr(row, name) for name in row.__dataclass_fields__}  # type: ignore[attr-defined]


def _check_paging(limit: int, offset: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidQueryError(f"limit {limit!r} must be from 1 to {MAX_PAGE}")
    if offset < 0:
        raise InvalidQueryError(f"offset {offset!r} must not be negative")
