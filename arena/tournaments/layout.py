"""A tournament's layout: its tables, deals and seat rotations as match rows, and each
match's seed and public id (docs/arena.md, "Tournaments").

Every combination of the entrants at each table size chosen is a *table*; each table plays
``deals_per_table`` deals; a deal is played once per seat arrangement of
arena/tournaments/seating.py. The match key ``t{t}/d{d}/r{r}`` is unique within the
tournament, so creating or extending adds each match exactly once.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import itertools
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from arena.bots.memory import controlled_versions
from arena.errors import TournamentNotFoundError
from arena.store.db import lock_row
from arena.store.models import Match, MatchSeat, Tournament, TournamentEntry, utcnow
from arena.store.statuses import MatchStatus, TournamentKind, TournamentStatus
from arena.tournaments.seating import arrangements
from arena.tournaments.settings import MAX_DEALS, InvalidTournamentError
from sdk.dealing import derive_seed


@dataclass(frozen=True, slots=True)
class Table:
    index: int
    bot_ids: tuple[int, ...]


def keyed_seed(secret: bytes, given: int) -> int:
    """The tournament seed the arena deals from: the seed given (or drawn) keyed with the
    arena's ``deal`` secret (arena/store/secrets.py), so a seed once revealed, given again,
    deals other cards under other match ids, and no other arena deals these (docs/dealing.md,
    "Seeds in the arena")."""
    mac = hmac.new(secret, f"tonk-tournament-seed/1:{given}".encode(), hashlib.sha256)
    return int.from_bytes(mac.digest()[:8], "big")


def match_key(table: int, deal: int, rotation: int) -> str:
    return f"t{table}/d{deal}/r{rotation}"


def deal_seed(tournament_seed: int, table: int, deal: int) -> int:
    return derive_seed(tournament_seed, f"table{table}/deal{deal}")


def match_seed(tournament_seed: int, deal_mode: str, table: int, deal: int, key: str) -> int:
    """The seed a match is dealt from: its deal's (duplicate) or its own (independent); for
    ``auto``, pass the table's mode (:func:`table_mode`)."""
    if deal_mode == "independent":
        return derive_seed(tournament_seed, f"match/{key}")
    return deal_seed(tournament_seed, table, deal)


def table_mode(deal_mode: str, versions: Iterable[int], controlled: Collection[int]) -> str:
    """How a table of these bot versions is dealt: ``auto`` is duplicate only when the arena
    controls the memory of every seat (``controlled``: arena.bots.memory.controlled_versions),
    since a bot that can remember a deal gains in its later rotations; independent otherwise."""
    if deal_mode != "auto":
        return deal_mode
    return "duplicate" if all(version in controlled for version in versions) else "independent"


def tables_of(bot_ids: Sequence[int], sizes: Iterable[int], challenger: int | None = None) -> list[Table]:
    """Every combination of the entrants at every table size, numbered smallest size first;
    in a gauntlet only those holding the ``challenger``."""
    combos = [
        c
        for n in sorted(set(sizes))
        for c in itertools.combinations(bot_ids, n)
        if challenger is None or challenger in c
    ]
    return [Table(i, combo) for i, combo in enumerate(combos)]


def public_match_id(tournament_seed: int, key: str) -> str:
    """The match id the referee gives the bots: an HMAC of the match key under the secret
    tournament seed, so it names neither the deal nor the seat rotation (a bot cannot tell
    that two matches share their cards), stays stable for a tournament seed (the bots'
    seeded RNGs, and with them the results, replay exactly), and says nothing about the seed.
    Labels stored by older versions keep their old, readable form."""
    mac = hmac.new(tournament_seed.to_bytes(8, "big"), f"tonk-match/{key}".encode(), hashlib.sha256)
    return mac.hexdigest()[:20]


def extend_tournament(session: Session, tournament_id: int, deals: int) -> int:
    """Add ``deals`` more deals at every table (new matches only); returns how many matches
    were added. A finished tournament goes back to ``paused`` until they are played."""
    check_count("deals", deals, MAX_DEALS)
    tournament = locked_tournament(session, tournament_id)
    entries = session.execute(
        select(TournamentEntry.bot_id, TournamentEntry.bot_version_id)
        .where(TournamentEntry.tournament_id == tournament_id)
        .order_by(TournamentEntry.id)
    ).all()
    ids = [bot for bot, _ in entries]
    versions = {bot: version for bot, version in entries}
    added = add_deals(session, tournament, ids, versions, deals)
    if tournament.status == TournamentStatus.FINISHED:
        tournament.status = TournamentStatus.PAUSED
        tournament.finished_at = None
    return added


def add_deals(
    session: Session, tournament: Tournament, ids: list[int], versions: dict[int, int], deals: int
) -> int:
    first = tournament.deals_per_table
    gauntlet = tournament.kind != TournamentKind.ROUND_ROBIN
    challenger = (tournament.params or {}).get("challenger") if gauntlet else None
    tables = tables_of(ids, tournament.table_sizes, challenger)
    auto = tournament.deal_mode == "auto"
    controlled = controlled_versions(session, set(versions.values())) if auto else set()
    rows: list[dict[str, Any]] = []
    seats: list[tuple[str, list[int]]] = []
    # Deal-major order: a tournament stopped half-way has played every table about equally.
    for deal in range(first, first + deals):
        for table in tables:
            mode = table_mode(tournament.deal_mode, (versions[b] for b in table.bot_ids), controlled)
            for rotation, order in enumerate(arrangements(len(table.bot_ids))):
                key = match_key(table.index, deal, rotation)
                rows.append(
                    {
                        "tournament_id": tournament.id,
                        "key": key,
                        "table_index": table.index,
                        "deal_index": deal,
                        "rotation": rotation,
                        "seed": match_seed(tournament.seed, mode, table.index, deal, key),
                        "hands": tournament.hands_per_match,
                        "status": MatchStatus.PENDING,
                        "public_id": public_match_id(tournament.seed, key),
                    }
                )
                seats.append((key, [table.bot_ids[i] for i in order]))
    tournament.deals_per_table = first + deals
    if not rows:
        return 0
    session.execute(insert(Match), rows)
    match_ids = dict(
        session.execute(
            select(Match.key, Match.id).where(Match.tournament_id == tournament.id, Match.deal_index >= first)
        ).all()
    )
    session.execute(
        insert(MatchSeat),
        [
            {"match_id": match_ids[key], "seat": s, "bot_id": bot, "bot_version_id": versions[bot]}
            for key, bots in seats
            for s, bot in enumerate(bots)
        ],
    )
    session.flush()
    return len(rows)


def locked_tournament(session: Session, tournament_id: int) -> Tournament:
    # Two callers extending at once (two operators, or two workers finishing an SPRT batch)
    # must not both number their deals from the same start.
    lock_row(session, Tournament, tournament_id)
    tournament = session.scalars(
        select(Tournament).where(Tournament.id == tournament_id).with_for_update()
    ).first()
    if tournament is None:
        raise TournamentNotFoundError(f"there is no tournament {tournament_id!r}")
    return tournament


def owners_count(session: Session, owner_id: int, kind: str, *, live: bool = False,
                 since_hours: float | None = None) -> int:  # fmt: skip
    """How many tournaments of ``kind`` ``owner_id`` started: those still live (created or
    running), or those started in the last ``since_hours``. What an owner's per-kind bounds
    (tests, challenges, people's tables) are checked against, under the owner's lock_row: an
    owner's challenges or tables count against no bound of their tests."""
    query = select(func.count(Tournament.id)).where(Tournament.owner_id == owner_id, Tournament.kind == kind)
    if live:
        query = query.where(Tournament.status.in_((TournamentStatus.CREATED, TournamentStatus.RUNNING)))
    if since_hours is not None:
        query = query.where(Tournament.created_at >= utcnow() - dt.timedelta(hours=since_hours))
    return int(session.execute(query).scalar_one())


def check_count(what: str, value: object, limit: int) -> None:
    if type(value) is not int or not 1 <= value <= limit:
        raise InvalidTournamentError(f"{what} must be an integer from 1 to {limit}, got {value!r}")
