"""Ratings from the store: the live leaderboard and the history written as tournaments end.

A done match becomes one :class:`arena.ratings.model.RatedMatch`: the bot ids by seat (as
strings, the rating system's ids) and each seat's final score in chips. Duplicate
rotations are separate matches; the rating model weighs each seat of each one equally.

- :func:`current_leaderboard` rates every done match, kept per process and brought up to
  date when matches finish: the new ones are added to the process's RatingModel and the
  ratings take one Newton step (``RatingModel.update``, a fraction of a second at 1,000
  bots); a full fit runs when the new matches since the last one reach ``REFIT_SHARE`` of
  all, or when a bot's kind of rating changes (a pool member, fitted, a bound). The pool's
  membership is revisited at full fits only.
- :func:`write_snapshot` runs when a tournament finishes (in the same transaction that marks
  it finished): a fit over the matches of every finished tournament, stored per bot in
  ``rating_snapshots``. The rows of all tournaments in finishing order are the history.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Hashable
from dataclasses import dataclass, field

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from arena.ratings.model import RatedMatch, RatingModel, RatingTable, fit
from arena.store.models import Bot, Match, MatchSeat, RatingSnapshot, Tournament, utcnow
from arena.store.statuses import MatchStatus, TournamentStatus
from arena.store.tokens import done_token


@dataclass(frozen=True)
class LeaderboardRow:
    rank: int
    bot_id: int
    name: str
    elo: float  # a one-sided record: its bound
    low: float | None  # None: no lower bound (a record without a point)
    high: float | None  # None: no upper bound (a clean sweep)
    matches: int
    provisional: bool
    los_next: float | None  # likelihood of superiority over the next row
    basis: str = "pool"  # pool | fitted | one-sided (arena.ratings.model.Basis)
    reason: str | None = None  # why provisional (arena.ratings.model.Reason)


@dataclass(frozen=True)
class Leaderboard:
    rows: list[LeaderboardRow] = field(default_factory=list)
    done_matches: int = 0
    computed_at: dt.datetime | None = None


@dataclass(frozen=True)
class SnapshotRow:
    tournament_id: int
    tournament_name: str
    finished_at: dt.datetime | None
    bot_id: int
    name: str
    elo: float
    low: float | None
    high: float | None
    matches: int
    provisional: bool
    basis: str = "pool"
    reason: str | None = None


#: A full refit once the matches added since the last one reach this share of all of them.
REFIT_SHARE = 0.05
#: Matches that finish within this long of each other may be committed out of order.
_SLACK = dt.timedelta(minutes=10)


@dataclass
class _Live:
    """One store's ratings in this process, kept up to date between full fits."""

    model: RatingModel
    token: Hashable
    board: Leaderboard
    since: dt.datetime | None  # the latest finished_at among the matches added
    added: int = 0  # matches added since the last full fit
    lock: threading.Lock = field(default_factory=threading.Lock)


# The rating model of each store, brought up to date as matches finish. This is the model's
# state, not a read cache: arena/queries/leaderboard.py caches what is read (arena/queries/cache.py).
_models_lock = threading.Lock()
_models: dict[str, _Live] = {}


def match_results(
    session: Session, *, finished_only: bool = False, finished_since: dt.datetime | None = None
) -> list[RatedMatch]:
    """Every done match as a rating input, in match id order (so fits are reproducible).
    ``finished_only`` keeps the matches of finished tournaments (the official ratings);
    ``finished_since`` those that finished at or after that time."""
    query = (
        select(MatchSeat.match_id, MatchSeat.bot_id, MatchSeat.score, Match.tournament_id, Match.seed)
        .join(Match, Match.id == MatchSeat.match_id)
        .where(Match.status == MatchStatus.DONE, MatchSeat.score.is_not(None))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    )
    if finished_since is not None:
        query = query.where(Match.finished_at >= finished_since)
    if finished_only:
        query = query.join(Tournament, Tournament.id == Match.tournament_id).where(
            Tournament.status == TournamentStatus.FINISHED
        )
    results: list[RatedMatch] = []
    current: int | None = None
    bots: list[str] = []
    scores: list[int] = []
    # The deal, the intervals' independent unit: a tournament's matches dealt from one seed
    # (every rotation of a duplicate deal; one match in independent mode).
    deal: tuple[int, int] = (0, 0)
    for match_id, bot_id, score, tournament_id, seed in session.execute(query):
        if match_id != current:
            if current is not None:
                results.append(RatedMatch(current, tuple(bots), tuple(scores), deal))
            current, bots, scores, deal = match_id, [], [], (tournament_id, seed)
        bots.append(str(bot_id))
        scores.append(int(score or 0))
    if current is not None:
        results.append(RatedMatch(current, tuple(bots), tuple(scores), deal))
    return results


def current_leaderboard(session: Session) -> Leaderboard:
    """Ratings over every done match, best first; brought up to date only when a match has
    finished since the last call in this process (incrementally: see the module's notes)."""
    key = str(session.get_bind().engine.url)
    token = done_token(session)
    with _models_lock:
        live = _models.get(key)
    if live is not None and live.token == token:
        return live.board
    if live is None or token[0] < live.model.total:  # first call, or matches went away
        return _full(session, key, token)
    with live.lock:
        if live.token == token:  # another thread did it meanwhile
            return live.board
        since = _latest_finish(session)
        start = None if live.since is None else live.since - _SLACK
        new = [r for r in match_results(session, finished_since=start) if r.match_id not in live.model]
        if live.model.total + len(new) < token[0]:  # an odd case (a finish time far out of order)
            return _full(session, key, token)
        live.model.add(new)
        live.added += len(new)
        if live.added >= REFIT_SHARE * live.model.total:
            table, live.added = live.model.fit(pairwise=False), 0
        else:
            table = live.model.update(pairwise=False)
        live.board = _leaderboard(session, table, live.model.total)
        live.token, live.since = token, since
        return live.board


def _full(session: Session, key: str, token: tuple[int, int | None]) -> Leaderboard:
    since = _latest_finish(session)
    model = RatingModel()
    model.add(match_results(session))
    board = _leaderboard(session, model.fit(pairwise=False), token[0])
    with _models_lock:
        _models[key] = _Live(model, token, board, since)
    return board


def _latest_finish(session: Session) -> dt.datetime | None:
    latest: dt.datetime | None = session.execute(
        select(func.max(Match.finished_at)).where(Match.status == MatchStatus.DONE)
    ).scalar_one()
    return latest


def _leaderboard(session: Session, table: RatingTable, done: int) -> Leaderboard:
    names = _names(session, [int(r.bot) for r in table.ratings])
    rows = [
        LeaderboardRow(
            rank=i + 1,
            bot_id=int(r.bot),
            name=names.get(int(r.bot), f"#{r.bot}"),
            elo=r.elo,
            low=r.low,
            high=r.high,
            matches=r.matches,
            provisional=r.provisional,
            los_next=table.los[i] if i < len(table.los) else None,
            basis=r.basis,
            reason=r.reason,
        )
        for i, r in enumerate(table.ratings)
    ]
    return Leaderboard(rows, done, utcnow())


def write_snapshot(session: Session, tournament_id: int) -> int:
    """(Re)write the rating snapshot taken when ``tournament_id`` finished: a fit over every
    finished tournament's matches. Idempotent; returns the number of bots rated."""
    table = fit(match_results(session, finished_only=True))
    session.execute(delete(RatingSnapshot).where(RatingSnapshot.tournament_id == tournament_id))
    rows = [
        {
            "tournament_id": tournament_id,
            "bot_id": int(r.bot),
            "elo": r.elo,
            "low": r.low,
            "high": r.high,
            "matches": r.matches,
            "provisional": r.provisional,
            "basis": r.basis,
            "reason": r.reason,
        }
        for r in table.ratings
    ]
    if rows:
        session.execute(insert(RatingSnapshot), rows)
    return len(rows)


def rating_history(session: Session, *, bot_id: int | None = None) -> list[SnapshotRow]:
    """The snapshots in the order the tournaments finished (one row per bot and tournament)."""
    query = (
        select(RatingSnapshot, Tournament.name, Tournament.finished_at, Bot.name)
        .join(Tournament, Tournament.id == RatingSnapshot.tournament_id)
        .join(Bot, Bot.id == RatingSnapshot.bot_id)
        .order_by(Tournament.finished_at, Tournament.id, RatingSnapshot.elo.desc())
    )
    if bot_id is not None:
        query = query.where(RatingSnapshot.bot_id == bot_id)
    return [
        SnapshotRow(s.tournament_id, t_name, finished, s.bot_id, name, s.elo, s.low, s.high, s.matches,
                    s.provisional, s.basis, s.reason)
        for s, t_name, finished, name in session.execute(query)
    ]


def _names(session: Session, ids: list[int]) -> dict[int, str]:
    if not ids:
        return {}
    return dict(session.execute(select(Bot.id, Bot.name).where(Bot.id.in_(ids))).all())
