"""People at the table (issue #39): a signed-in person takes a seat against a bot, heads-up
or with a second bot at a 3-seat table, and plays it from their page.

A person sits as a bot row of their own (``bots.person``, named ``@<owner>``: no bot's name
can start with "@"), made on their first table, with one version whose capacity is one
match: the arena's own bound on matches in flight (arena/play/capacity.py) is then also the
rule of one table at a time. No bot list, board, ladder, challenge or tournament offers that
row (migration 0019).

A table is a tournament of kind ``people`` (unrated on the bots' boards: ``UNRATED_KINDS``)
holding ONE match of ``hands`` hands, dealt from a fresh seed of its own (``deal_mode
"independent"``: nothing is dealt again, so no seat rotation is needed; the person's seat
is drawn at random). It is refereed, recorded and replayed as any match; the worker plays
the person's seat with arena/play/person.py over the channel named in ``params["channel"]``,
with the person's clock ``params["clock_ms"]`` (both fixed here, from the settings of the
web process that made it). Its ``seat_channels`` row says whose seat it is.

Refusals write nothing (each check is made before anything is created, under the owner's
row lock, so a burst is counted one request after another):

- the bot is unknown, retired or a person's seat: 404 ``bot_not_found``;
- its owner turned challenges off (a person's table is a challenge by a person): 403
  ``seats_off``, unless it is the person's own bot;
- ``seats`` not 2 or 3, ``hands`` not 1 to ``TONK_PEOPLE_MAX_HANDS``: 400;
- a table of the person's still playing, ``TONK_PEOPLE_MAX_PER_HOUR`` tables started in
  the last hour, or ``TONK_PEOPLE_MAX_TABLES`` tables live arena-wide: 429 ``table_limit``.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from sqlalchemy import delete, exists, func, select, text
from sqlalchemy.orm import Session

from arena.bots.registry import BotNotFoundError
from arena.config import Settings
from arena.errors import ArenaError, PermissionDeniedError
from arena.store.db import lock_row
from arena.store.models import Bot, BotVersion, Match, MatchSeat, Owner, SeatChannel
from arena.store.statuses import BotStatus, MatchStatus, TournamentKind
from arena.tournaments.layout import owners_count
from arena.tournaments.lifecycle import InvalidTournamentError, create_tournament

DEFAULT_HANDS: Final = 5


class TableLimitError(ArenaError):
    """A table of this person's is still playing, or they started too many this hour."""

    status = 429
    code = "table_limit"


class SeatsOffError(PermissionDeniedError):
    """The bot's owner does not let others play it (challenges turned off)."""

    code = "seats_off"


@dataclass(frozen=True, slots=True)
class Table:
    tournament_id: int
    match_id: int
    public_id: str
    seat: int


def person_name(owner: Owner) -> str:
    """The person's seat's name: ``@owner`` (bots' names never start with "@")."""
    name = f"@{owner.name}"
    return name if len(name) <= 64 else f"@{owner.name[:50]}~{owner.id}"


def person_bot(session: Session, owner: Owner) -> Bot:
    """The owner's own seat, made on first use. Flushes."""
    bot = session.scalars(select(Bot).where(Bot.owner_id == owner.id, Bot.person.is_(True))).first()
    if bot is not None:
        return bot
    name = person_name(owner)
    bot = Bot(name=name, owner=owner, address=None, hosted=None, status=BotStatus.ACTIVE, person=True,
              accepts_challenges=False)  # fmt: skip
    session.add(bot)
    session.flush()
    info = {"name": name, "version": "person", "author": owner.name, "max_concurrent_matches": 1}
    session.add(BotVersion(bot_id=bot.id, number=1, info=info))
    session.flush()
    return bot


def _bot(session: Session, owner: Owner, name: str) -> Bot:
    if not isinstance(name, str) or not name.strip() or len(name) > 64 or "\x00" in name:
        raise InvalidTournamentError(f"a bot name is 1 to 64 characters, got {name!r:.60}")
    query = select(Bot).where(Bot.name == name.strip(), Bot.status == BotStatus.ACTIVE, Bot.person.is_(False))
    bot = session.scalars(query).first()
    if bot is None:
        raise BotNotFoundError(f"there is no active bot named {name.strip()!r:.70}")
    if not bot.accepts_challenges and bot.owner_id != owner.id:
        raise SeatsOffError(f"{bot.name!r} does not take on other people: its owner turned challenges off")
    return bot


def seat_partners(session: Session, bot_name: str) -> list[str] | None:
    """The bots that may join ``bot_name`` at a 3-seat table (active, taking challenges), or
    None when ``bot_name`` itself takes no seats (unknown, retired, turned off, a person)."""
    bot = session.scalars(select(Bot).where(Bot.name == bot_name, Bot.person.is_(False))).first()
    if bot is None or bot.status != BotStatus.ACTIVE or not bot.accepts_challenges:
        return None
    others = select(Bot.name).where(
        Bot.status == BotStatus.ACTIVE, Bot.person.is_(False), Bot.accepts_challenges.is_(True),
        Bot.id != bot.id,
    )  # fmt: skip
    return list(session.scalars(others.order_by(Bot.name)))


def _int_field(form: Mapping[str, str], key: str, default: int, low: int, high: int) -> int:
    raw = str(form.get(key, "") or "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or not low <= int(raw) <= high:  # "²" is a digit to isdigit
        raise InvalidTournamentError(f"'{key}' must be a whole number from {low} to {high}, got {raw[:20]!r}")
    return int(raw)


def live_table(session: Session, owner_id: int) -> Table | None:
    """The person's table still playing, if any."""
    row = session.execute(
        select(SeatChannel.match_id, Match.public_id, Match.tournament_id, SeatChannel.seat)
        .join(Match, Match.id == SeatChannel.match_id)
        .where(SeatChannel.owner_id == owner_id, Match.status.in_((MatchStatus.PENDING, MatchStatus.RUNNING)))
        .order_by(SeatChannel.match_id.desc())
        .limit(1)
    ).first()
    if row is None:
        return None
    return Table(row[2], row[0], str(row[1]), row[3])


def start_table(
    session: Session, owner: Owner, bot_name: str, form: Mapping[str, str], settings: Settings
) -> Table:
    """Create (not start) ``owner``'s table against ``bot_name`` as ``form`` asks, or refuse
    with nothing written. Flushes, does not commit."""
    seats = _int_field(form, "seats", 2, 2, 3)
    most = settings.people_max_hands
    hands = _int_field(form, "hands", min(DEFAULT_HANDS, most), 1, most)
    bot = _bot(session, owner, bot_name)
    bots = [bot]
    if seats == 3:
        partner = str(form.get("with", "") or "").strip()
        if partner:
            second = _bot(session, owner, partner)
        else:  # no partner named: the first other bot that takes seats
            names = seat_partners(session, bot.name) or []
            if not names:
                raise InvalidTournamentError("a 3-seat table needs a second bot; no other bot takes seats")
            second = _bot(session, owner, names[0])
        if second.id == bot.id:
            raise InvalidTournamentError(f"{bot.name!r} cannot sit twice at one table")
        bots.append(second)
    lock_row(session, Owner, owner.id)
    _check_bounds(session, owner, settings)
    person = person_bot(session, owner)
    tournament = create_tournament(
        session,
        name=f"{person.name} vs {' and '.join(b.name for b in bots)}",
        bot_ids=[person.id, *(b.id for b in bots)],
        table_sizes=[seats],
        deals_per_table=1,
        hands_per_match=hands,
        settings=settings,
        deal_mode="independent",
        kind=TournamentKind.PEOPLE,
    )
    tournament.owner_id = owner.id
    tournament.params = {
        "person": person.id,
        "channel": "redis" if settings.redis_url else "store",
        "clock_ms": settings.person_clock_s * 1000,
    }
    # One match: a seat order drawn at random (the deal is fresh, so no rotation is owed).
    made = select(Match).where(Match.tournament_id == tournament.id).order_by(Match.id)
    matches = list(session.scalars(made))
    kept = matches[secrets.randbelow(len(matches))]
    dropped = [m.id for m in matches if m.id != kept.id]
    if dropped:
        session.execute(delete(MatchSeat).where(MatchSeat.match_id.in_(dropped)))
        session.execute(delete(Match).where(Match.id.in_(dropped)))
    seat = session.scalar(
        select(MatchSeat.seat).where(MatchSeat.match_id == kept.id, MatchSeat.bot_id == person.id)
    )
    assert seat is not None
    session.add(SeatChannel(match_id=kept.id, owner_id=owner.id, seat=seat, version=0, view=None))
    session.flush()
    return Table(tournament.id, kept.id, str(kept.public_id), seat)


def _check_bounds(session: Session, owner: Owner, settings: Settings) -> None:
    _check_arena_tables(session, settings)
    playing = live_table(session, owner.id)
    if playing is not None:
        raise TableLimitError(
            f"you already have a table playing (/tables/{playing.public_id}): finish it first"
        )
    started = owners_count(session, owner.id, TournamentKind.PEOPLE, since_hours=1)
    if started >= settings.people_max_per_hour:
        raise TableLimitError(
            f"you have started {started} tables in the last hour; this arena allows "
            f"{settings.people_max_per_hour} (TONK_PEOPLE_MAX_PER_HOUR): try again later"
        )


#: PostgreSQL advisory lock taken while the arena's live tables are counted (any constant).
_TABLES_LOCK: Final = 0x746F6E6B7374  # "tonkst"


def _check_arena_tables(session: Session, settings: Settings) -> None:
    """Refuse a table past TONK_PEOPLE_MAX_TABLES live arena-wide: each holds a worker's match
    slot for as long as its person thinks, so enough idle people would stop every bots' match.
    Two people sitting at once are counted one after the other: an advisory lock on
    PostgreSQL; on SQLite the caller's lock_row already holds the database's one write lock."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _TABLES_LOCK})
    live = session.execute(
        select(func.count(SeatChannel.match_id))
        .join(Match, Match.id == SeatChannel.match_id)
        .where(Match.status.in_((MatchStatus.PENDING, MatchStatus.RUNNING)))
    ).scalar_one()
    if live >= settings.people_max_tables:
        raise TableLimitError(
            f"the tables are full: {live} people are playing, and this arena seats "
            f"{settings.people_max_tables} at once (TONK_PEOPLE_MAX_TABLES); try again in a few minutes"
        )


def table_of(session: Session, owner_id: int, public_id: str) -> SeatChannel | None:
    """The seat of ``owner_id`` at the table ``public_id`` (None: no such table, or not theirs:
    the same answer, so a table's existence is not disclosed to others)."""
    if not isinstance(public_id, str) or len(public_id) > 64:
        return None
    mine = exists().where(Match.id == SeatChannel.match_id, Match.public_id == public_id)
    return session.scalars(select(SeatChannel).where(SeatChannel.owner_id == owner_id, mine)).first()


def finished(session: Session, match_id: int) -> bool:
    return session.scalar(select(Match.status).where(Match.id == match_id)) == MatchStatus.DONE

