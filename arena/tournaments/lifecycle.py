"""Round-robin tournaments in duplicate: their shape, their matches and their life cycle.

Shape
    Entrants are bots (each entry records the bot's version at creation). For every table
    size chosen (2..6) every combination of that many entrants is a *table*; tables are
    numbered across sizes, smallest first, combinations in entry order. Each table plays
    ``deals_per_table`` *deals*; a deal is played in duplicate: the same seed once per seat
    arrangement of arena/tournaments/seating.py (``n (n - 1)`` matches at an ``n``-seat table, bot
    ``combo[arrangements(n)[r][s]]`` in seat ``s`` of arrangement ``r``), so every bot holds
    every seat's cards and sits after every other bot equally often, and holds each seat once
    with each follower: card and seating luck cancel out. (The ``rotation`` column and the
    ``r`` of the key number the arrangement.)

Seeds
    Everything derives from the tournament's secret seed, which is the seed given (or drawn)
    keyed with the arena's ``deal`` secret (``keyed_seed``): deal ``d`` of table ``t`` is dealt
    from ``derive_seed(seed, f"table{t}/deal{d}")``. The match key ``t{t}/d{d}/r{r}`` is
    unique within the tournament, so creating or extending adds each match exactly once.
    With ``deal_mode="independent"`` every match gets its own seed instead
    (``derive_seed(seed, f"match/{key}")``): no card luck cancels, nothing is dealt twice.
    ``auto`` (the default) deals a table duplicate only when the arena controls every one of
    its bots' memory (hosted fresh per match, or a house bot: arena/bots/memory.py), and
    independent otherwise: a bot on its author's machine could remember a deal's cards.
    The bots see neither: a match's id for them is an HMAC of the key (``public_match_id``).

Life cycle
    ``created`` -> ``running`` (:func:`start_tournament`) <-> ``paused`` -> ``finished`` when
    every match is done (:func:`finish_if_complete`, which also writes the rating snapshot).
    Extending a finished tournament pauses it again until its new matches are played.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session

from arena.config import Settings
from arena.errors import ConflictError, NotFoundError, TournamentNotFoundError
from arena.store.models import Bot, BotVersion, Match, Tournament, TournamentEntry, utcnow
from arena.store.secrets import arena_secret
from arena.store.statuses import UNRATED_KINDS, BotStatus, MatchStatus, TournamentKind, TournamentStatus
from arena.text import clean_text
from arena.tournaments.layout import (
    add_deals,
    check_count,
    extend_tournament,
    keyed_seed,
    locked_tournament,
    match_key,
    tables_of,
)
from arena.tournaments.settings import (
    DEAL_MODES,
    MAX_DEALS,
    MAX_HANDS,
    InvalidTournamentError,
    TournamentSettings,
    rules_to_column,
)
from arena.tournaments.sprt import advance
from sdk.dealing import SEED_LIMIT, new_seed
from sdk.rules import MAX_PLAYERS, MIN_PLAYERS, STANDARD, Rules

__all__ = [
    "InvalidTournamentError",
    "TournamentNotFoundError",
    "TournamentStateError",
    "UnknownBotError",
    "create_tournament",
    "extend_tournament",
    "finish_if_complete",
    "get_tournament_row",
    "match_key",
    "pause_tournament",
    "resolve_bots",
    "start_tournament",
    "tables_of",
]


class UnknownBotError(NotFoundError):
    code = "bot_not_found"


class TournamentStateError(ConflictError):
    """An action the tournament's status does not allow (e.g. pausing a finished one)."""

    code = "tournament_state"


def resolve_bots(session: Session, names: Sequence[str]) -> list[int]:
    """Bot ids for ``names``, in order; UnknownBotError names every one that is missing."""
    for name in names:
        # Checked before the query: PostgreSQL refuses NUL in text with a driver error.
        if not isinstance(name, str) or "\x00" in name or len(name) > 64:
            raise InvalidTournamentError(f"{name!r} is not a bot name")
    found = dict(session.execute(
        select(Bot.name, Bot.id).where(Bot.name.in_(list(names)), Bot.person.is_(False))).all())  # fmt: skip
    missing = [n for n in names if n not in found]
    if missing:
        from sdk.players import did_you_mean

        active = select(Bot.name).where(Bot.status == BotStatus.ACTIVE, Bot.person.is_(False))
        known = list(session.scalars(active))
        hint = did_you_mean(missing[0], known) if known else "; no bot is registered yet"
        raise UnknownBotError(f"no bot named {', '.join(repr(n) for n in missing)}{hint}")
    return [found[n] for n in names]


def create_tournament(
    session: Session,
    *,
    name: str,
    bot_ids: Sequence[int],
    table_sizes: Sequence[int],
    deals_per_table: int,
    hands_per_match: int,
    seed: int | None = None,
    rules: Rules = STANDARD,
    settings: Settings | None = None,
    config: dict[str, int] | None = None,
    deal_mode: str = "auto",
    kind: TournamentKind | str = TournamentKind.ROUND_ROBIN,
    sprt: dict[str, Any] | None = None,
) -> Tournament:
    """Create the tournament, its entries (each bot's current version) and every match.

    ``kind="gauntlet"``: ``bot_ids[0]`` is the challenger and every table holds it.
    ``kind="sprt"``: a sequential test of ``bot_ids[0]`` against ``bot_ids[1]`` heads-up,
    ``sprt`` its parameters (arena.tournaments.sprt.sprt_params); ``deals_per_table`` is ignored, the
    first batch of pairs is created and the test adds more until it decides.

    ``config`` overrides the referee settings (``decision_deadline_ms``, ``time_bank_ms``,
    ``max_faults``) taken from ``settings``; they are fixed here so that a worker's
    environment never changes how a tournament is refereed. Flushes, does not commit.
    """
    # A name is shown on pages: no control characters (arena/text.py), and bounded.
    bad_name = not isinstance(name, str) or len(name) > 128 or not name.strip()
    if bad_name or clean_text(name, 128) != name.strip():
        raise InvalidTournamentError(
            f"a tournament name is 1 to 128 characters without control characters, got {name!r:.80}"
        )
    ids = list(dict.fromkeys(bot_ids))
    if len(ids) != len(bot_ids):
        raise InvalidTournamentError(f"a bot is entered twice: {list(bot_ids)!r}")
    if not table_sizes or any(type(n) is not int or not MIN_PLAYERS <= n <= MAX_PLAYERS for n in table_sizes):
        raise InvalidTournamentError(
            f"table sizes are {MIN_PLAYERS} to {MAX_PLAYERS} players, got {list(table_sizes)!r}"
        )
    sizes = sorted(set(table_sizes))
    if len(ids) < sizes[-1]:
        raise InvalidTournamentError(
            f"a table of {sizes[-1]} needs at least {sizes[-1]} bots, got {len(ids)}: {ids!r}"
        )
    if deal_mode not in DEAL_MODES:
        raise InvalidTournamentError(f"deal mode {deal_mode!r:.80} is not one of {', '.join(DEAL_MODES)}")
    if kind not in TournamentKind.__members__.values():
        raise InvalidTournamentError(f"kind {kind!r:.80} is not round-robin, gauntlet or sprt")
    kind = TournamentKind(kind)
    if kind == TournamentKind.LADDER:
        raise InvalidTournamentError(
            "a ladder has no fixed tables: create it with tonk ladder create or POST /api/v1/ladders"
        )
    params: dict[str, Any] | None = None
    if kind == TournamentKind.GAUNTLET:
        if len(ids) < 2:
            raise InvalidTournamentError(f"a gauntlet needs a challenger and an opponent, got {ids!r}")
        params = {"challenger": ids[0]}
    elif kind == TournamentKind.SPRT:
        if len(ids) != 2 or sizes != [2]:
            raise InvalidTournamentError(
                f"a sequential test is two bots at 2-seat tables, got bots {ids!r} at tables {sizes!r}"
            )
        if sprt is None:
            raise InvalidTournamentError("a sequential test needs its parameters (elo0, elo1, alpha, beta)")
        params = {**sprt, "challenger": ids[0]}
        deals_per_table = int(sprt["batch"])
    check_count("deals_per_table", deals_per_table, MAX_DEALS)
    check_count("hands_per_match", hands_per_match, MAX_HANDS)
    if seed is not None and (type(seed) is not int or not 0 <= seed < SEED_LIMIT):
        raise InvalidTournamentError(f"a seed is an integer from 0 to 2**64 - 1, got {seed!r}")
    # The arena's secret enters every seed, so a finished tournament's seed given again
    # re-deals nothing its bots have seen (issue 29).
    dealt = keyed_seed(arena_secret(session, "deal"), new_seed() if seed is None else seed)
    _check_seed_free(session, dealt, seed)
    versions = _current_versions(session, ids, people=kind == TournamentKind.PEOPLE)
    referee = TournamentSettings.parse(config, settings or Settings())
    tournament = Tournament(
        name=name.strip(),
        seed=dealt,
        status=TournamentStatus.CREATED,
        table_sizes=sizes,
        deals_per_table=0,
        hands_per_match=hands_per_match,
        rules=rules_to_column(rules),
        config=referee.to_column(),
        deal_mode=deal_mode,
        kind=kind,
        params=params,
    )
    session.add(tournament)
    session.flush()
    session.execute(
        insert(TournamentEntry),
        [{"tournament_id": tournament.id, "bot_id": b, "bot_version_id": versions[b]} for b in ids],
    )
    add_deals(session, tournament, ids, versions, deals_per_table)
    return tournament


def start_tournament(session: Session, tournament_id: int) -> Tournament:
    """``created``/``paused``/``running`` -> ``running``."""
    tournament = locked_tournament(session, tournament_id)
    if tournament.status == TournamentStatus.FINISHED:
        raise TournamentStateError(f"tournament {tournament_id} is finished; extend it to play more")
    tournament.status = TournamentStatus.RUNNING
    session.flush()
    return tournament


def pause_tournament(session: Session, tournament_id: int) -> Tournament:
    """Stop starting matches (those being played finish and count). ``finished`` stays."""
    tournament = locked_tournament(session, tournament_id)
    if tournament.status == TournamentStatus.FINISHED:
        raise TournamentStateError(f"tournament {tournament_id} is finished; there is nothing to pause")
    tournament.status = TournamentStatus.PAUSED
    session.flush()
    return tournament


def finish_if_complete(session: Session, tournament_id: int) -> bool:
    """Mark a running tournament finished when all its matches are done, and write the
    rating snapshot in the same transaction. True only for the one caller that finished it
    (the UPDATE is conditional, so racing workers cannot both do it)."""
    remaining = session.execute(
        select(func.count(Match.id)).where(
            Match.tournament_id == tournament_id, Match.status != MatchStatus.DONE
        )
    ).scalar_one()
    if remaining:
        return False
    kind = session.execute(select(Tournament.kind).where(Tournament.id == tournament_id)).scalar_one()
    if kind == TournamentKind.LADDER:  # open-ended: its scheduler adds tables as long as it runs
        return False
    if kind == TournamentKind.SPRT:
        # Only read so far: end that read, so the lock below is the transaction's first
        # statement (on SQLite a transaction that read before taking the write lock would
        # decide on what it read before another caller's batch was committed).
        session.commit()
        tournament = locked_tournament(session, tournament_id)
        again = session.execute(  # under the lock: one caller decides or extends
            select(func.count(Match.id)).where(
                Match.tournament_id == tournament_id, Match.status != MatchStatus.DONE
            )
        ).scalar_one()
        if again or tournament.status != TournamentStatus.RUNNING or not advance(session, tournament):
            return False
    finished = session.execute(
        update(Tournament)
        .where(Tournament.id == tournament_id, Tournament.status == TournamentStatus.RUNNING)
        .values(status=TournamentStatus.FINISHED, finished_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if finished.rowcount != 1:  # type: ignore[attr-defined]
        return False
    if kind in UNRATED_KINDS:
        # A challenge or a person's table moves no bot's rating: a snapshot would repeat the
        # last one, at the cost of a fit over every finished match, each time one ends.
        return True
    from arena.ratings.leaderboard import write_snapshot  # ratings need numpy: only when finishing

    write_snapshot(session, tournament_id)
    return True


def get_tournament_row(session: Session, tournament_id: int) -> Tournament:
    tournament = session.get(Tournament, tournament_id)
    if tournament is None:
        raise TournamentNotFoundError(f"there is no tournament {tournament_id!r}")
    return tournament


def _current_versions(session: Session, ids: list[int], *, people: bool = False) -> dict[int, int]:
    bots = {b.id: b for b in session.scalars(select(Bot).where(Bot.id.in_(ids)))}
    missing = [i for i in ids if i not in bots]
    if missing:
        raise UnknownBotError(f"no bot with id {', '.join(repr(i) for i in missing)}")
    seated = [bots[i].name for i in ids if bots[i].person]
    if seated and not people:  # a person plays only at their own table (arena/tournaments/people.py)
        named = ", ".join(map(repr, seated))
        raise InvalidTournamentError(f"a person's seat enters no bot tournament: {named}")
    retired = [bots[i].name for i in ids if bots[i].status != BotStatus.ACTIVE]
    if retired:
        raise InvalidTournamentError(f"retired bots cannot enter: {', '.join(repr(n) for n in retired)}")
    latest = dict(
        session.execute(
            select(BotVersion.bot_id, func.max(BotVersion.number))
            .where(BotVersion.bot_id.in_(ids))
            .group_by(BotVersion.bot_id)
        ).all()
    )
    unversioned = [bots[i].name for i in ids if i not in latest]
    if unversioned:
        raise InvalidTournamentError(f"bots with no registered version: {', '.join(map(repr, unversioned))}")
    rows = session.execute(
        select(BotVersion.bot_id, BotVersion.id, BotVersion.number).where(BotVersion.bot_id.in_(ids))
    ).all()
    return {bot: vid for bot, vid, number in rows if latest[bot] == number}


def _check_seed_free(session: Session, seed: int, given: int | None) -> None:
    # A dealt seed deals once per arena: the same seed again would re-deal the cards (and the
    # match ids) its bots have seen and kept, or, while the first is still on, show one bot
    # server two matches under one id (issue 29).
    other = session.scalars(select(Tournament.id).where(Tournament.seed == seed)).first()
    if other is not None:
        raise InvalidTournamentError(
            f"seed {given!r} was already dealt in tournament {other} of this arena, and a seed deals "
            'once (docs/dealing.md, "Seeds in the arena"); pick another seed, or none'
        )
