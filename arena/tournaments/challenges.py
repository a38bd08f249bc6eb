"""Challenges: an owner's bot against any other bot, now and unrated (issue #39), as
Battlecode's scrimmages and Battlesnake's challenges let an author try their code on any
opponent between official games.

A challenge is a tournament of kind ``challenge`` (``tournaments.owner_id``: who started it)
of ``deals`` heads-up deals, each played in both seat orders, dealt as the fairness policy
deals any table (``deal_mode="auto"``: independently where a bot serves itself,
arena/bots/memory.py). No rating counts it (``UNRATED_KINDS``): one side chose the opponent,
the time and the length. Both bots' pages list it.

- The challenger is one of the caller's own active bots; another owner's is answered exactly
  as a missing one (404 ``bot_not_found``). Operators may challenge with any bot.
- The opponent is any other active bot whose owner has not turned challenges off (403
  ``challenges_off``; ``PUT /api/v1/bots/<name>/challenges``).
- Bounds, each named when refused (429 ``challenge_limit``, or 400 for a size): ``deals`` at
  most ``TONK_CHALLENGE_MAX_DEALS``, hands per match at most :data:`MAX_CHALLENGE_HANDS`; an
  owner runs at most ``TONK_CHALLENGE_MAX_RUNNING`` at once and starts at most
  ``TONK_CHALLENGE_MAX_PER_DAY`` in 24 hours; a bot faces at most
  ``TONK_CHALLENGE_MAX_PER_TARGET`` running challenges at once, whoever sent them.

A refusal writes nothing: every check is made before the tournament is created, with the
challenger's owner row and the opponent's bot row write-locked, so a burst of requests is
counted one after another and cannot pass a bound together. Operators are bound only by the
opponent's own choice.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.bots.registry import BotNotFoundError
from arena.config import Settings
from arena.errors import ArenaError, PermissionDeniedError
from arena.store.db import lock_row
from arena.store.models import Bot, Match, MatchSeat, Owner, Tournament, TournamentEntry
from arena.store.statuses import BotStatus, TournamentKind, TournamentStatus
from arena.tournaments.layout import check_count, owners_count
from arena.tournaments.lifecycle import InvalidTournamentError, create_tournament

#: The fields of ``POST /api/v1/challenges``.
FIELDS: Final = frozenset(("bot", "opponent", "deals", "hands_per_match"))
DEFAULT_DEALS: Final = 2
DEFAULT_HANDS: Final = 20
#: A challenge is a quick look, not a study: longer matches are an SPRT's or a tournament's.
MAX_CHALLENGE_HANDS: Final = 50
_LIVE: Final = (TournamentStatus.CREATED, TournamentStatus.RUNNING)


class ChallengeLimitError(ArenaError):
    """Too many challenges running or started today, or too many facing one bot."""

    status = 429
    code = "challenge_limit"


class ChallengesOffError(PermissionDeniedError):
    """The opponent's owner does not take challenges for it."""

    code = "challenges_off"


@dataclass(frozen=True, slots=True)
class Challenge:
    """One challenge as the pages and the API show it: who played whom, how it stands."""

    id: int
    challenger: str
    opponent: str
    owner: str | None
    status: str
    deals: int
    hands_per_match: int
    created_at: dt.datetime
    #: Chips each side has won so far over its done matches (challenger, opponent).
    chips: tuple[int, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "challenger": self.challenger, "opponent": self.opponent,
            "started_by": self.owner, "status": self.status, "deals": self.deals,
            "hands_per_match": self.hands_per_match, "created_at": self.created_at.isoformat(),
            "chips": {"challenger": self.chips[0], "opponent": self.chips[1]}, "rated": False,
        }  # fmt: skip


def _name(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value.strip() or len(value) > 64 or "\x00" in value:
        raise InvalidTournamentError(f"'{key}' must be a bot name, got {value!r:.60}")
    return value.strip()


def _count(body: dict[str, Any], key: str, default: int, limit: int) -> int:
    value = body.get(key, default)
    check_count(f"'{key}'", value, limit)
    return int(value)


def _live_challenges() -> Any:
    return select(func.count(Tournament.id)).where(
        Tournament.kind == TournamentKind.CHALLENGE, Tournament.status.in_(_LIVE)
    )


def start_challenge(session: Session, owner: Owner, body: dict[str, Any], settings: Settings) -> Tournament:
    """Create (not start) the challenge ``body`` asks for; refused with nothing written when a
    field, the opponent's choice or a bound says no. Flushes, does not commit."""
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        known = ", ".join(sorted(FIELDS))
        raise InvalidTournamentError(f"unknown field {unknown[0]!r:.40}; known fields: {known}")
    mine, theirs = _name(body, "bot"), _name(body, "opponent")
    deals = _count(body, "deals", DEFAULT_DEALS, settings.challenge_max_deals)
    hands = _count(body, "hands_per_match", DEFAULT_HANDS, MAX_CHALLENGE_HANDS)
    query = select(Bot).where(Bot.name == mine, Bot.status == BotStatus.ACTIVE, Bot.person.is_(False))
    if not owner.is_operator:
        query = query.where(Bot.owner_id == owner.id)
    bot = session.scalars(query).first()
    if bot is None:
        whose = "" if owner.is_operator else "you have "
        raise BotNotFoundError(f"{whose}no active bot named {mine!r:.70}")
    opponent = session.scalars(
        select(Bot).where(Bot.name == theirs, Bot.status == BotStatus.ACTIVE, Bot.person.is_(False))
    ).first()
    if opponent is None:
        raise BotNotFoundError(f"there is no active bot named {theirs!r:.70}")
    if opponent.id == bot.id:
        raise InvalidTournamentError(f"a bot cannot challenge itself ({bot.name!r})")
    lock_row(session, Bot, opponent.id)
    session.refresh(opponent)  # its owner may have turned challenges off meanwhile
    if not opponent.accepts_challenges:
        raise ChallengesOffError(f"{opponent.name!r} does not accept challenges: its owner turned them off")
    if not owner.is_operator:
        _check_bounds(session, owner, opponent, settings)
    tournament = create_tournament(
        session,
        name=f"challenge: {bot.name} vs {opponent.name}",
        bot_ids=[bot.id, opponent.id],
        table_sizes=[2],
        deals_per_table=deals,
        hands_per_match=hands,
        settings=settings,
        kind=TournamentKind.CHALLENGE,
    )
    tournament.owner_id = owner.id
    session.flush()
    return tournament


def _check_bounds(session: Session, owner: Owner, opponent: Bot, settings: Settings) -> None:
    lock_row(session, Owner, owner.id)
    running = owners_count(session, owner.id, TournamentKind.CHALLENGE, live=True)
    if running >= settings.challenge_max_running:
        raise ChallengeLimitError(
            f"you have {running} challenge(s) running; this arena allows {settings.challenge_max_running} "
            "at once (TONK_CHALLENGE_MAX_RUNNING): wait for one to finish"
        )
    if settings.challenge_max_per_day:
        today = owners_count(session, owner.id, TournamentKind.CHALLENGE, since_hours=24)
        if today >= settings.challenge_max_per_day:
            raise ChallengeLimitError(
                f"you have started {today} challenges in the last 24 hours; this arena allows "
                f"{settings.challenge_max_per_day} (TONK_CHALLENGE_MAX_PER_DAY)"
            )
    facing = session.execute(
        _live_challenges()
        .join(TournamentEntry, TournamentEntry.tournament_id == Tournament.id)
        .where(TournamentEntry.bot_id == opponent.id)
    ).scalar_one()
    if facing >= settings.challenge_max_per_target:
        raise ChallengeLimitError(
            f"{opponent.name!r} already faces {facing} running challenge(s), the most this arena allows "
            "one bot (TONK_CHALLENGE_MAX_PER_TARGET): try again when one has finished"
        )


def set_accepting(session: Session, owner: Owner, name: str, accept: bool) -> Bot:
    """Turn challenges of ``owner``'s bot ``name`` on or off (operators: any bot). Running
    challenges play on; new ones are refused while off."""
    bot = session.scalars(select(Bot).where(Bot.name == name, Bot.person.is_(False))).first()
    if bot is None or (bot.owner_id != owner.id and not owner.is_operator):
        raise BotNotFoundError(f"you have no bot named {name!r:.70}")
    bot.accepts_challenges = accept
    session.flush()
    return bot


def challenges_of(
    session: Session, bot_id: int | None = None, *, tournament_id: int | None = None, limit: int = 20
) -> list[Challenge]:
    """The latest challenges, newest first: those ``bot_id`` played either side of (or the
    one ``tournament_id`` is), or all."""
    query = select(Tournament).where(Tournament.kind == TournamentKind.CHALLENGE)
    if tournament_id is not None:
        query = query.where(Tournament.id == tournament_id)
    if bot_id is not None:
        entered = select(TournamentEntry.tournament_id).where(TournamentEntry.bot_id == bot_id)
        query = query.where(Tournament.id.in_(entered))
    rows = session.scalars(query.order_by(Tournament.id.desc()).limit(limit)).all()
    if not rows:
        return []
    ids = [t.id for t in rows]
    sides: dict[int, list[tuple[int, str]]] = {}
    for tid, bid, name in session.execute(
        select(TournamentEntry.tournament_id, Bot.id, Bot.name)
        .join(Bot, Bot.id == TournamentEntry.bot_id)
        .where(TournamentEntry.tournament_id.in_(ids))
        .order_by(TournamentEntry.id)
    ):
        sides.setdefault(tid, []).append((bid, name))

    chips: dict[tuple[int, int], int] = {}
    for tid, bid, total in session.execute(
        select(Match.tournament_id, MatchSeat.bot_id, func.sum(MatchSeat.score))
        .join(Match, Match.id == MatchSeat.match_id)
        .where(Match.tournament_id.in_(ids), MatchSeat.score.is_not(None))
        .group_by(Match.tournament_id, MatchSeat.bot_id)
    ):
        chips[(tid, bid)] = int(total or 0)
    owners = dict(session.execute(select(Owner.id, Owner.name).where(
        Owner.id.in_({t.owner_id for t in rows if t.owner_id is not None}))).all())  # fmt: skip
    out = []
    for t in rows:
        (a, a_name), (b, b_name) = [*sides.get(t.id, []), (0, "?"), (0, "?")][:2]
        by = owners.get(t.owner_id) if t.owner_id is not None else None
        won = (chips.get((t.id, a), 0), chips.get((t.id, b), 0))
        out.append(Challenge(t.id, a_name, b_name, by, t.status, t.deals_per_table, t.hands_per_match,
                             t.created_at, won))  # fmt: skip
    return out
