"""Ratings from the store: the live leaderboard and the history written as tournaments end.

A done match becomes one :class:`arena.ratings.model.RatedMatch`: the bot *version* ids by
seat (as strings, the rating system's ids) and each seat's final score in chips. Each
version of a bot is rated as a player of its own (``tonk submit --update`` with other code
starts afresh, and an old version's results never lift or sink a new one); a bot's rating
is its current (latest) version's, and a bot whose current version has no rating yet is
unranked. Duplicate rotations are separate matches; the rating model weighs each seat of
each one equally. The scale is anchored on the house bots (every version of a bot of the
``house`` operator: :func:`reference_versions`), fixed players whose mean no other bot's
games or versions can move; a store where none is established falls back on the pool's mean.

- :func:`current_leaderboard` rates every done match, kept per process and brought up to
  date when matches finish: the new ones are added to the process's RatingModel and rated
  by an update (``RatingModel.update``: the full fit's ratings, at a cost of the bots and the
  new matches, not of the matches already in); a full fit runs when the new matches since
  the last one reach ``REFIT_SHARE`` of all, ``REFIT_AFTER`` has passed with matches added,
  or a bot's kind of rating changes (a pool member, fitted, a bound). The pool's membership
  is revisited at full fits only. A store of ``BACKGROUND_MATCHES`` or more fits in full on
  a thread of its own, from a snapshot: the board goes on being updated, and takes the full
  fit when it is done (a bot whose kind of rating changed waits for it). The first board is
  fitted in full at once, its matches read as columns on PostgreSQL (arena/ratings/columns.py).
- :func:`write_snapshot` runs when a tournament finishes (in the same transaction that marks
  it finished): a fit over the matches of every finished tournament, stored per bot in
  ``rating_snapshots`` (its current version's rating, with the version). The rows of all
  tournaments in finishing order are the history. Rows written before ratings were per
  version (revision 0014) have no version: they pooled every version of the bot.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from arena.ratings.columns import load_done
from arena.ratings.model import RatedMatch, RatingModel, RatingTable, fit
from arena.store.models import Bot, BotVersion, Match, MatchSeat, Owner, RatingSnapshot, Tournament, utcnow
from arena.store.statuses import UNRATED_KINDS, MatchStatus, TournamentStatus
from arena.store.tokens import rated_done_token, versions_token


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
    version_id: int = 0  # the version rated: the bot's current one
    version: int = 0  # its number


@dataclass(frozen=True)
class VersionRating:
    """One version's own rating (every version is rated as a player of its own)."""

    version_id: int
    bot_id: int
    number: int
    elo: float
    low: float | None
    high: float | None
    matches: int
    provisional: bool
    basis: str = "pool"
    reason: str | None = None


@dataclass(frozen=True)
class Leaderboard:
    """One row per bot whose current version is rated, best first; ``versions`` has every
    rated version by id, ``current`` every bot's current version (id, number) by bot id."""

    rows: list[LeaderboardRow] = field(default_factory=list)
    done_matches: int = 0
    computed_at: dt.datetime | None = None
    versions: dict[int, VersionRating] = field(default_factory=dict)
    current: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: Every rated version of each bot, newest first (bot id -> ratings).
    by_bot: dict[int, list[VersionRating]] = field(default_factory=dict)


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
    version: int | None = None  # the version rated then (None: a snapshot from before 0014)


#: A full refit once the matches added since the last one reach this share of all of them.
REFIT_SHARE = 0.05
#: ... or once this long has passed since the last one with matches added: an update keeps
#: the old pairs' curvature at the last full fit's ratings, so its intervals drift as they move.
REFIT_AFTER = dt.timedelta(seconds=60)
#: A store with at least this many matches refits in the background (the board meanwhile
#: updated cheaply); a smaller one inline, as its fit takes well under a second.
BACKGROUND_MATCHES = 200_000
#: The owner of the reference bots, the house bots (arena.bots.hosting.HOUSE_OWNER, a floor up).
REFERENCE_OWNER = "house"
#: Rows from which every version's (and bot's) row is read rather than a list of ids.
_EVERY_ROW = 500
#: Matches that finish within this long of each other may be committed out of order.
_SLACK = dt.timedelta(minutes=10)


@dataclass
class _Live:
    """One store's ratings in this process, kept up to date between full fits."""

    model: RatingModel
    token: Hashable
    table: RatingTable  # every version's rating, from the model's last fit or update
    board: Leaderboard
    since: dt.datetime | None  # the latest finished_at among the matches added
    versions: Hashable = None  # arena.store.tokens.versions_token when the rows were read
    added: int = 0  # matches added since the last full fit
    lock: threading.Lock = field(default_factory=threading.Lock)
    fitted_at: dt.datetime = field(default_factory=utcnow)  # the last full fit's start
    refit: _Refit | None = None  # a full fit running in the background


class _Refit:
    """A full fit of a snapshot of the live model, on a thread of its own: the board is
    updated cheaply meanwhile, and takes the fit back when it is done (``RatingModel.adopt``)."""

    def __init__(self, model: RatingModel) -> None:
        self.snapshot = model.snapshot()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="tonk-refit", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.snapshot.fit(pairwise=False)
        except BaseException as exc:  # kept for the board's own thread to raise
            self.error = exc

    def done(self) -> bool:
        return not self.thread.is_alive()


# The rating model of each store, brought up to date as matches finish. This is the model's
# state, not a read cache: arena/queries/leaderboard.py caches what is read (arena/queries/cache.py).
_models_lock = threading.Lock()
_models: dict[str, _Live] = {}


def reset() -> None:
    """Forget every store's live model: the next :func:`current_leaderboard` fits afresh
    (benchmarks compare the incremental board with a fresh fit this way)."""
    with _models_lock:
        _models.clear()


_Row = TypeVar("_Row")


def board_page(
    entries: Sequence[_Row], names: Callable[[_Row], tuple[str, str]], q: str | None, page: int,
    per_page: int | None,
) -> tuple[Sequence[_Row], dict[str, Any]]:
    """A page of a board (the leaderboard, a ladder's: here, below both, as a ladder may not
    import arena.queries, its own floor): page ``page`` (from 1) of ``per_page``
    rows (every row: None) of ``entries`` whose bot or owner name (``names``) holds ``q`` (lower
    case; checked by the caller), and where it is: ``page``, ``per_page``, ``total`` (the rows
    found), ``pages``, ``q`` and ``bots`` (the whole board). Ranks stay the whole board's."""
    found = entries if not q else [e for e in entries if any(q in n.lower() for n in names(e))]
    rows = len(found) if per_page is None else per_page
    shown = found if per_page is None else found[(page - 1) * per_page : page * per_page]
    return shown, {
        "page": page,
        "per_page": rows,
        "total": len(found),
        "pages": max(1, -(-len(found) // max(rows, 1))),
        "q": q,
        "bots": len(entries),
    }


def reference_versions(session: Session) -> list[str]:
    """The rating ids (version ids as strings) of the scale's reference players: every
    version of every bot of the house operator. Every version, retired ones too: a retired
    version's rating stays tied to its old games, so it keeps holding the scale."""
    query = (
        select(BotVersion.id)
        .join(Bot, Bot.id == BotVersion.bot_id)
        .join(Owner, Owner.id == Bot.owner_id)
        .where(Owner.name == REFERENCE_OWNER, Owner.is_operator.is_(True))
        .order_by(BotVersion.id)
    )
    return [str(int(v)) for v in session.scalars(query)]


def match_results(
    session: Session, *, finished_only: bool = False, finished_since: dt.datetime | None = None
) -> list[RatedMatch]:
    """Every done match as a rating input, in match id order (so fits are reproducible), its
    players the versions that played (their ids as strings). ``finished_only`` keeps the
    matches of finished tournaments (the official ratings); ``finished_since`` those that
    finished at or after that time."""
    query = (
        select(MatchSeat.match_id, MatchSeat.bot_version_id, MatchSeat.score, Match.tournament_id, Match.seed)
        .join(Match, Match.id == MatchSeat.match_id)
        .where(Match.status == MatchStatus.DONE, MatchSeat.score.is_not(None))
        # A challenge is a scrimmage one side chose: no rating counts it (UNRATED_KINDS).
        .where(Match.tournament_id.not_in(select(Tournament.id).where(Tournament.kind.in_(UNRATED_KINDS))))
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
    for match_id, version_id, score, tournament_id, seed in session.execute(query):
        if match_id != current:
            if current is not None:
                results.append(RatedMatch(current, tuple(bots), tuple(scores), deal))
            current, bots, scores, deal = match_id, [], [], (tournament_id, seed)
        bots.append(str(version_id))
        scores.append(int(score or 0))
    if current is not None:
        results.append(RatedMatch(current, tuple(bots), tuple(scores), deal))
    return results


def current_leaderboard(session: Session) -> Leaderboard:
    """Ratings over every done match, best first; brought up to date only when a match has
    finished since the last call in this process (incrementally: see the module's notes),
    and its rows read again when a bot's current version changed."""
    key = str(session.get_bind().engine.url)
    with _models_lock:
        live = _models.get(key)
    # A small store's token is the exact count of done matches (it also tells that matches
    # went away); a big one's counts only the recent ones (recent_token).
    exact = rated_done_token(session) if live is None or live.model.total < BACKGROUND_MATCHES else None
    token: Hashable = exact if exact is not None or live is None else recent_token(session, live.since)
    done = None if exact is None else exact[0]
    versions = versions_token(session)
    if live is not None and live.refit is not None and live.refit.done():
        with live.lock:
            _take_refit(session, live)
    if live is not None and live.token == token and live.versions == versions:
        return live.board  # the common case: nothing new, no lock to wait for
    current = current_versions(session)
    if live is not None and live.token == token:
        with live.lock:
            return _rows_for(session, live, current, versions)
    if live is None or (done is not None and done < live.model.total):  # first, or matches went away
        return _full(session, key, token, current, versions)
    with live.lock:
        if live.token == token:  # another thread did it meanwhile
            return _rows_for(session, live, current, versions)
        since = _latest_finish(session)
        start = None if live.since is None else live.since - _SLACK
        new = [r for r in match_results(session, finished_since=start) if r.match_id not in live.model]
        if done is not None and live.model.total + len(new) < done:  # a finish far out of order
            return _full(session, key, token, current, versions)
        live.model.add(new)
        live.model.set_reference(reference_versions(session))  # a house bot may have joined
        live.added += len(new)
        due = live.added >= REFIT_SHARE * live.model.total or utcnow() - live.fitted_at >= REFIT_AFTER
        if live.model.total < BACKGROUND_MATCHES:
            if due:
                live.table, live.added, live.fitted_at = live.model.fit(pairwise=False), 0, utcnow()
            else:
                live.table = live.model.update(pairwise=False)
        else:
            table = live.model.cheap_update(pairwise=False)
            if table is not None:
                live.table = table
            if (due or table is None) and live.refit is None:
                live.refit, live.added, live.fitted_at = _Refit(live.model), 0, utcnow()
            # A bot that needs a place in the fit's matrices waits for the full fit.
        live.board = _leaderboard(session, live.model, live.table, live.model.total, current)
        live.token, live.since, live.versions = token, since, versions
        return live.board


def _take_refit(session: Session, live: _Live) -> None:
    """Under ``live.lock``: a finished background fit becomes the live model's last fit, the
    matches added since it began are brought in by an update, and the board is made again."""
    refit, live.refit = live.refit, None
    if refit is None:
        return
    if refit.error is not None:
        raise refit.error
    live.model.adopt(refit.snapshot)
    table = live.model.cheap_update(pairwise=False)
    if table is None:  # matches since the snapshot need a full fit of their own
        live.refit, live.added, live.fitted_at = _Refit(live.model), 0, utcnow()
        return
    live.table = table
    live.board = _leaderboard(session, live.model, live.table, live.board.done_matches, live.board.current)


def _rows_for(
    session: Session, live: _Live, current: dict[int, tuple[int, int]], versions: Hashable
) -> Leaderboard:
    """The live board, its rows read again if a bot's current version changed since (a new
    version: the bot's row is its rating, none until it has played). Under ``live.lock``."""
    if live.board.current != current:
        live.board = _leaderboard(session, live.model, live.table, live.board.done_matches, current)
    live.versions = versions
    return live.board


def _full(
    session: Session,
    key: str,
    token: Hashable,
    current: dict[int, tuple[int, int]],
    versions: Hashable,
) -> Leaderboard:
    since = _latest_finish(session)
    model = RatingModel(reference=reference_versions(session))
    if not load_done(session, model):  # PostgreSQL sends columns; others the matches
        model.add(match_results(session))
    table = model.fit(pairwise=False)
    board = _leaderboard(session, model, table, model.total, current)
    with _models_lock:
        _models[key] = _Live(model, token, table, board, since, versions)
    return board


def recent_token(session: Session, since: dt.datetime | None) -> tuple[int, int | None, dt.datetime | None]:
    """Changes whenever another match is done, as ``done_token`` does, but counts only the
    matches that finished in a window from ``_SLACK`` before ``since`` (the newest finish the
    live model has), on a 5-minute grid, so that it costs what is recent: counting every
    done match took 0.7 s at 10 million. Sound because a done match is never undone or
    deleted, and commits within ``_SLACK`` of its finish time, the same bound the update
    reads new matches by: (that count, the largest done id, the window's start)."""
    start = None
    if since is not None:
        edge = since - _SLACK
        start = edge.replace(minute=edge.minute - edge.minute % 5, second=0, microsecond=0)
    done = Match.status == MatchStatus.DONE
    recent = done if start is None else done & (Match.finished_at >= start)
    count = session.scalar(select(func.count()).select_from(Match).where(recent))
    largest = session.scalar(select(func.max(Match.id)).where(done))
    return (int(count or 0), None if largest is None else int(largest), start)


def current_versions(session: Session) -> dict[int, tuple[int, int]]:
    """Every bot's current version, its latest: bot id -> (version id, number)."""
    number = func.max(BotVersion.number).label("number")
    sub = select(BotVersion.bot_id, number).group_by(BotVersion.bot_id).subquery()
    rows = session.execute(
        select(BotVersion.bot_id, BotVersion.id, BotVersion.number).join(
            sub, (sub.c.bot_id == BotVersion.bot_id) & (sub.c.number == BotVersion.number)
        )
    ).all()
    return {int(bot): (int(vid), int(number)) for bot, vid, number in rows}


def _latest_finish(session: Session) -> dt.datetime | None:
    latest: dt.datetime | None = session.execute(
        select(func.max(Match.finished_at)).where(Match.status == MatchStatus.DONE)
    ).scalar_one()
    return latest


def _leaderboard(
    session: Session, model: RatingModel, table: RatingTable, done: int, current: dict[int, tuple[int, int]]
) -> Leaderboard:
    versions = version_ratings(session, table)
    now = {vid: bot for bot, (vid, _number) in current.items()}
    ranked = [r for r in table.ratings if int(r.bot) in now]  # best first, as the fit sorts
    los = model.los([r.bot for r in ranked])
    names = _names(session, [now[int(r.bot)] for r in ranked])
    rows = []
    for i, r in enumerate(ranked):
        v = versions[int(r.bot)]
        rows.append(
            LeaderboardRow(
                rank=i + 1,
                bot_id=v.bot_id,
                name=names.get(v.bot_id, f"#{v.bot_id}"),
                elo=r.elo,
                low=r.low,
                high=r.high,
                matches=r.matches,
                provisional=r.provisional,
                los_next=los[i] if i < len(los) else None,
                basis=r.basis,
                reason=r.reason,
                version_id=v.version_id,
                version=v.number,
            )
        )
    by_bot: dict[int, list[VersionRating]] = {}
    for v in sorted(versions.values(), key=lambda v: -v.number):
        by_bot.setdefault(v.bot_id, []).append(v)
    return Leaderboard(rows, done, utcnow(), versions, dict(current), by_bot)


def version_ratings(session: Session, table: RatingTable) -> dict[int, VersionRating]:
    """The fit's ratings (of versions) by version id, with the bot and number of each."""
    ids = [int(r.bot) for r in table.ratings]
    known: dict[int, tuple[int, int]] = {}
    query = select(BotVersion.id, BotVersion.bot_id, BotVersion.number)
    # Every version at once when most are rated (a list of thousands of ids costs more to
    # send than the rows); bounded IN lists otherwise.
    chunks = [query] if len(ids) >= _EVERY_ROW else [
        query.where(BotVersion.id.in_(ids[at : at + 5000])) for at in range(0, len(ids), 5000)
    ]
    for chunk in chunks:
        known.update({int(vid): (int(bot), int(number)) for vid, bot, number in session.execute(chunk)})
    out: dict[int, VersionRating] = {}
    for r in table.ratings:
        vid = int(r.bot)
        if vid in known:
            bot, number = known[vid]
            out[vid] = VersionRating(
                vid, bot, number, r.elo, r.low, r.high, r.matches, r.provisional, r.basis, r.reason
            )
    return out


def write_snapshot(session: Session, tournament_id: int) -> int:
    """(Re)write the rating snapshot taken when ``tournament_id`` finished: a fit over every
    finished tournament's matches, one row per bot whose current version is rated (that
    version's rating). Idempotent; returns the number of bots rated."""
    table = fit(match_results(session, finished_only=True), reference=reference_versions(session))
    session.execute(delete(RatingSnapshot).where(RatingSnapshot.tournament_id == tournament_id))
    now = {vid: bot for bot, (vid, _number) in current_versions(session).items()}
    rows = [
        {
            "tournament_id": tournament_id,
            "bot_id": now[int(r.bot)],
            "bot_version_id": int(r.bot),
            "elo": r.elo,
            "low": r.low,
            "high": r.high,
            "matches": r.matches,
            "provisional": r.provisional,
            "basis": r.basis,
            "reason": r.reason,
        }
        for r in table.ratings
        if int(r.bot) in now
    ]
    if rows:
        session.execute(insert(RatingSnapshot), rows)
    return len(rows)


def rating_history(session: Session, *, bot_id: int | None = None) -> list[SnapshotRow]:
    """The snapshots in the order the tournaments finished (one row per bot and tournament)."""
    query = (
        select(RatingSnapshot, Tournament.name, Tournament.finished_at, Bot.name, BotVersion.number)
        .join(Tournament, Tournament.id == RatingSnapshot.tournament_id)
        .join(Bot, Bot.id == RatingSnapshot.bot_id)
        .outerjoin(BotVersion, BotVersion.id == RatingSnapshot.bot_version_id)
        .order_by(Tournament.finished_at, Tournament.id, RatingSnapshot.elo.desc())
    )
    if bot_id is not None:
        query = query.where(RatingSnapshot.bot_id == bot_id)
    return [
        SnapshotRow(s.tournament_id, t_name, finished, s.bot_id, name, s.elo, s.low, s.high, s.matches,
                    s.provisional, s.basis, s.reason, number)
        for s, t_name, finished, name, number in session.execute(query)
    ]


def _names(session: Session, ids: list[int]) -> dict[int, str]:
    if not ids:
        return {}
    if len(ids) >= _EVERY_ROW:  # as version_ratings: every bot's name, not a list of thousands
        wanted = set(ids)
        return {int(b): name for b, name in session.execute(select(Bot.id, Bot.name)) if b in wanted}
    return dict(session.execute(select(Bot.id, Bot.name).where(Bot.id.in_(ids))).all())
