"""Keeping a ladder topped up: :func:`tick`, called every second or so by the one scheduler
holding the ladder's lease (arena/runtime/ladder.py).

A tick, in one transaction:

1. takes or renews the ladder's lease (arena/ladder/lease.py); without it, does nothing;
2. locks the ladder's row; a ladder not running gets nothing;
3. reads the pool afresh: the active bots (of the ladder's named pool, if it has one) with a
   registered version, each owner's ``versions_per_owner`` newest. So a new bot or a new
   version joins by itself, and a retired or superseded bot gets no new table: its tables
   nobody has started are withdrawn, those started are played to their end, and its rating
   stays on the board;
4. if fewer than ``target`` of the ladder's matches are pending or running, asks the
   matchmaker (arena/ratings/matchmaking.py, ``choose_tables``: one reading of the board for
   all of them) for the tables that make up the difference, from the live board (the arena's
   leaderboard: its anchored fit with intervals, kept up to date incrementally), each bot's
   ladder tables so far and its room (``backlog`` x capacity, less its unfinished matches
   anywhere), and adds each: one deal, played in every balanced seat order
   (arena/tournaments/seating.py), its seed and public ids derived from the ladder's secret
   seed as a tournament's are, each match carrying the pick's reason.

Tables are numbered from 0 in the order they are added (the match key ``t{table}/d0/r{r}``);
the number comes from the ladder's row (``params["next_table"]``), under its lock, and the
key is unique per ladder, so even two schedulers that both thought they held the lease could
not add one table twice. The matchmaker's random choices are seeded from the ladder's seed
and the number of the tick's first table: a ladder replayed from the same seed and results
picks the same tables.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, func, insert, select, update
from sqlalchemy.orm import Session

from arena.bots.memory import controlled_versions
from arena.ladder.lease import LEASE_S, lease_name, take
from arena.ladder.settings import LadderSettings
from arena.ladder.setup import ladder_settings
from arena.ratings.leaderboard import LeaderboardRow, current_leaderboard
from arena.ratings.matchmaking import Candidate, Pick, choose_tables
from arena.store.models import Bot, BotVersion, Match, MatchSeat, Tournament, TournamentEntry
from arena.store.statuses import BotStatus, MatchStatus, TournamentKind, TournamentStatus
from arena.text import clean_text
from arena.tournaments.layout import locked_tournament, match_key, match_seed, public_match_id, table_mode
from arena.tournaments.seating import arrangements
from sdk.dealing import derive_seed

#: The rating of a bot with no rated match yet (the board's anchor).
UNRATED_ELO = 1500.0
#: A 95% interval is 2 x 1.96 standard errors wide.
_Z95 = 1.959963984540054
#: The most tables one tick adds (a bound on one transaction's work).
MAX_TABLES_PER_TICK = 200
REASON_LIMIT = 128


@dataclass(frozen=True)
class PoolBot:
    bot_id: int
    owner_id: int
    version_id: int


@dataclass(frozen=True)
class Tick:
    """What one tick did: whether it held the lease, the tables it added (index, bots, reason)."""

    held: bool
    tables: list[tuple[int, tuple[int, ...], str]] = field(default_factory=list)
    unfinished: int = 0
    #: Tables withdrawn before anyone played them: a bot of theirs left the pool.
    withdrawn: list[int] = field(default_factory=list)

    @property
    def matches(self) -> int:
        return sum(len(arrangements(len(bots))) for _, bots, _ in self.tables)


def tick(
    session: Session,
    ladder_id: int,
    holder: str,
    capacities: Callable[..., dict[int, int]],
    *,
    lease_s: float = LEASE_S,
) -> Tick:
    """One scheduling step for ladder ``ladder_id`` by ``holder`` (see the module's notes).
    ``capacities`` is arena.play.capacity.capacities (passed in: play is a sideways floor),
    asked with ``live=True``.
    Writes in the caller's transaction; the caller commits."""
    if not take(session, lease_name(ladder_id), holder, lease_s=lease_s):
        return Tick(held=False)
    ladder = locked_tournament(session, ladder_id)
    if ladder.kind != TournamentKind.LADDER:
        raise ValueError(f"tournament {ladder_id} is a {ladder.kind}, not a ladder")
    if ladder.status != TournamentStatus.RUNNING:
        return Tick(held=True)
    settings = ladder_settings(ladder)
    pool = active_pool(session, settings)
    withdrawn = withdraw(session, ladder_id, {b.bot_id for b in pool})
    unfinished = _unfinished(session, ladder_id)
    if unfinished >= settings.target:
        return Tick(held=True, unfinished=unfinished, withdrawn=withdrawn)
    seats = settings.table_size
    per_table = len(arrangements(seats))
    if len(pool) < seats:
        return Tick(held=True, unfinished=unfinished, withdrawn=withdrawn)
    played, waiting = ladder_counts(session, ladder_id)
    board = {row.bot_id: row for row in current_leaderboard(session).rows}
    # Live capacities: a connected bot that is offline, or a dialled bot found not answering
    # (arena/bots/reachability.py), has 0: no new table until it is back.
    capacity = capacities(session, [b.bot_id for b in pool], live=True)
    room = {b.bot_id: settings.backlog * capacity[b.bot_id] - waiting.get(b.bot_id, 0) for b in pool}
    # The matchmaker counts in tables (each of a bot's ladder tables is per_table matches), and
    # a bot's free slots are the tables it may still join within its backlog.
    candidates = [
        candidate(
            b, board.get(b.bot_id), played.get(b.bot_id, 0) // per_table, -(-room[b.bot_id] // per_table)
        )
        for b in pool
    ]
    # Numbered on from the last table ever added (a withdrawn one's number is not reused).
    next_table = max(int((ladder.params or {}).get("next_table", 0)), _next_table(session, ladder_id))
    count = min(MAX_TABLES_PER_TICK, -(-(settings.target - unfinished) // per_table))
    rng = random.Random(derive_seed(ladder.seed, f"ladder/pick/{next_table}"))
    picks = choose_tables(candidates, seats, rng, count, settings.matchmaking)
    new = [
        (next_table + k, pick, clean_text(pick.reason, REASON_LIMIT) or "scheduled")
        for k, pick in enumerate(picks)
    ]
    add_tables(session, ladder, new, {b.bot_id: b.version_id for b in pool})
    added = [(table, pick.bot_ids, reason) for table, pick, reason in new]
    for pick in picks:
        for bot in pick.bot_ids:
            played[bot] = played.get(bot, 0) + per_table
    unfinished += per_table * len(picks)
    next_table += len(picks)
    if added:
        _enter(session, ladder_id, {b.bot_id: b.version_id for b in pool if b.bot_id in played})
        added_matches: dict[int, int] = defaultdict(int)
        for pick in picks:
            for bot in pick.bot_ids:
                added_matches[bot] += per_table
        _count(session, ladder_id, added_matches)
        ladder.params = {**(ladder.params or {}), "next_table": next_table}
    session.flush()
    return Tick(held=True, tables=added, unfinished=unfinished, withdrawn=withdrawn)


def candidate(bot: PoolBot, row: LeaderboardRow | None, tables: int, free: int) -> Candidate:
    """The matchmaker's view of a bot: its rating and standard error from the board (inf
    until it has a two-sided interval), its ladder tables, and how many more it may join."""
    free = max(0, free)
    if row is None:
        return Candidate(bot.bot_id, bot.owner_id, UNRATED_ELO, math.inf, tables, free)
    sd = math.inf
    if row.low is not None and row.high is not None:
        sd = max(0.0, (row.high - row.low) / (2 * _Z95))
    elo = row.elo if math.isfinite(row.elo) else UNRATED_ELO
    return Candidate(bot.bot_id, bot.owner_id, elo, sd, tables, free)


def active_pool(session: Session, settings: LadderSettings) -> list[PoolBot]:
    """The bots that may get a new table now: active, registered (with a version), in the
    named pool if there is one, and among their owner's ``versions_per_owner`` newest."""
    latest = (
        select(BotVersion.bot_id, func.max(BotVersion.number).label("number"))
        .group_by(BotVersion.bot_id)
        .subquery()
    )
    query = (
        select(Bot.id, Bot.owner_id, BotVersion.id)
        .join(latest, latest.c.bot_id == Bot.id)
        .join(BotVersion, (BotVersion.bot_id == Bot.id) & (BotVersion.number == latest.c.number))
        .where(Bot.status == BotStatus.ACTIVE, Bot.person.is_(False))
        .order_by(Bot.owner_id, Bot.created_at.desc(), Bot.id.desc())
    )
    if settings.pool is not None:
        query = query.where(Bot.id.in_(list(settings.pool)))
    kept: dict[int, int] = defaultdict(int)
    pool: list[PoolBot] = []
    for bot_id, owner_id, version_id in session.execute(query).all():
        if kept[owner_id] < settings.versions_per_owner:
            kept[owner_id] += 1
            pool.append(PoolBot(bot_id, owner_id, version_id))
    return sorted(pool, key=lambda b: b.bot_id)


def withdraw(session: Session, ladder_id: int, pool: set[int]) -> list[int]:
    """Withdraw the tables nobody has started (every match pending, never claimed) that seat a
    bot no longer in the pool (retired, or superseded by its owner's newer bot): a bot that
    left stops playing at once, and no table is cut in half (a table started is played to
    its end). The rows are locked first, so a worker claiming one of them meanwhile either
    wins (the table is left whole) or finds the match gone (outcome ``withdrawn``). Returns
    the tables withdrawn."""
    waiting = (
        select(Match.table_index)
        .where(Match.tournament_id == ladder_id, Match.status.in_((MatchStatus.PENDING, MatchStatus.RUNNING)))
        .distinct()
    )
    rows = session.execute(
        select(Match.table_index, Match.id, Match.status, Match.attempts, MatchSeat.bot_id)
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .where(Match.tournament_id == ladder_id, Match.table_index.in_(waiting))
    ).all()
    untouched: dict[int, bool] = {}
    leaving: set[int] = set()
    ids: dict[int, set[int]] = defaultdict(set)
    seated: dict[int, list[int]] = defaultdict(list)  # the bots of each table's matches
    for table, match_id, status, attempts, bot in rows:
        fresh = status == MatchStatus.PENDING and not attempts
        untouched[table] = untouched.get(table, True) and fresh
        ids[table].add(match_id)
        seated[table].append(bot)
        if bot not in pool:
            leaving.add(table)
    gone: dict[int, int] = defaultdict(int)
    out = []
    for table in sorted(t for t in leaving if untouched[t]):
        locked = set(
            session.scalars(
                select(Match.id)
                .where(Match.id.in_(ids[table]), Match.status == MatchStatus.PENDING, Match.attempts == 0)
                .with_for_update()
            )
        )
        if locked != ids[table]:  # a worker claimed one meanwhile: the table is played
            continue
        session.execute(delete(MatchSeat).where(MatchSeat.match_id.in_(locked)))
        session.execute(delete(Match).where(Match.id.in_(locked)))
        out.append(table)
        for bot in seated[table]:
            gone[bot] -= 1
    _count(session, ladder_id, gone)
    return out


def ladder_counts(session: Session, ladder_id: int) -> tuple[dict[int, int], dict[int, int]]:
    """Per bot: its matches on this ladder (any status: its entry's count, kept as tables are
    added and withdrawn), and its unfinished matches (pending or running) anywhere: a bot's
    queue is one, whichever tournaments fill it. Neither reads the ladder's finished matches."""
    played = dict(
        session.execute(
            select(TournamentEntry.bot_id, TournamentEntry.matches).where(
                TournamentEntry.tournament_id == ladder_id
            )
        ).all()
    )
    waiting = dict(
        session.execute(
            select(MatchSeat.bot_id, func.count())
            .join(Match, Match.id == MatchSeat.match_id)
            .where(Match.status.in_((MatchStatus.PENDING, MatchStatus.RUNNING)))
            .group_by(MatchSeat.bot_id)
        ).all()
    )
    return played, waiting


def _count(session: Session, ladder_id: int, change: dict[int, int]) -> None:
    """Add ``change[bot]`` to each bot's count of matches on the ladder (its entry exists)."""
    rows = [{"b_ladder": ladder_id, "b_bot": bot, "b_n": n} for bot, n in sorted(change.items()) if n]
    if rows:
        entries = cast(Table, TournamentEntry.__table__)  # Core: one UPDATE for all rows, not by key
        session.execute(
            update(entries)
            .where(entries.c.tournament_id == bindparam("b_ladder"), entries.c.bot_id == bindparam("b_bot"))
            .values(matches=entries.c.matches + bindparam("b_n")),
            rows,
        )


def add_tables(
    session: Session, ladder: Tournament, tables: Sequence[tuple[int, Pick, str]], versions: dict[int, int]
) -> None:
    """Each ``(table, pick, reason)``: one deal of the picked bots in every balanced seat order,
    as pending matches with the reason (two INSERTs for all of them)."""
    if not tables:
        return
    rows: list[dict[str, Any]] = []
    seats: list[tuple[str, list[int]]] = []
    # ``auto`` (the default): a table is dealt duplicate only if the arena controls the memory
    # of every bot at it (arena/bots/memory.py); a ladder created before it is ``duplicate``.
    auto = ladder.deal_mode == "auto"
    controlled = controlled_versions(session, set(versions.values())) if auto else set()
    for table, pick, reason in tables:
        bots: Sequence[int] = pick.bot_ids
        mode = table_mode(ladder.deal_mode, (versions[b] for b in bots), controlled)
        for rotation, order in enumerate(arrangements(len(bots))):
            key = match_key(table, 0, rotation)
            rows.append({
                "tournament_id": ladder.id, "key": key, "table_index": table, "deal_index": 0,
                "rotation": rotation, "seed": match_seed(ladder.seed, mode, table, 0, key),
                "hands": ladder.hands_per_match,
                "status": MatchStatus.PENDING, "public_id": public_match_id(ladder.seed, key),
                "reason": reason,
            })  # fmt: skip
            seats.append((key, [bots[i] for i in order]))
    session.execute(insert(Match), rows)
    first = min(table for table, _, _ in tables)
    ids = dict(
        session.execute(
            select(Match.key, Match.id).where(Match.tournament_id == ladder.id, Match.table_index >= first)
        ).all()
    )
    session.execute(
        insert(MatchSeat),
        [
            {"match_id": ids[key], "seat": s, "bot_id": bot, "bot_version_id": versions[bot]}
            for key, order in seats
            for s, bot in enumerate(order)
        ],
    )


def _enter(session: Session, ladder_id: int, versions: dict[int, int]) -> None:
    """The ladder's entries: each bot that got a table, at the version it plays now."""
    have = dict(
        session.execute(
            select(TournamentEntry.bot_id, TournamentEntry.bot_version_id).where(
                TournamentEntry.tournament_id == ladder_id
            )
        ).all()
    )
    new = [
        {"tournament_id": ladder_id, "bot_id": b, "bot_version_id": v}
        for b, v in versions.items()
        if b not in have
    ]
    if new:
        session.execute(insert(TournamentEntry), new)
    for bot, version in versions.items():
        if bot in have and have[bot] != version:
            session.execute(
                update(TournamentEntry)
                .where(TournamentEntry.tournament_id == ladder_id, TournamentEntry.bot_id == bot)
                .values(bot_version_id=version)
                .execution_options(synchronize_session=False)
            )


def _unfinished(session: Session, ladder_id: int) -> int:
    return int(
        session.execute(
            select(func.count(Match.id)).where(
                Match.tournament_id == ladder_id, Match.status.in_((MatchStatus.PENDING, MatchStatus.RUNNING))
            )
        ).scalar_one()
    )


def _next_table(session: Session, ladder_id: int) -> int:
    last = session.execute(
        select(func.max(Match.table_index)).where(Match.tournament_id == ladder_id)
    ).scalar_one()
    return 0 if last is None else int(last) + 1
