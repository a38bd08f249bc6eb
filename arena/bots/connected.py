"""Who may connect as which bot, and registering a connected bot on its first connection.

A token connects only its owner's bots. A name nobody has yet is registered for the token's
owner, but only after the bot passes, over the connection itself, the same admission check
a submitted bot passes (arena/bots/registry.py): its GetInfo, a conformance match against the
house ``random`` bot, and the SDK's protocol check (``tonk check``), with zero faults, within
the same time limit (``Settings.check_time_limit_s``) and holding one of the same check slots
(arena/bots/check_slots.py, taken by the gateway).

A known bot's every connection is asked its GetInfo first. The same info as its latest
version: it plays on as that version. Other info: it is another build of the bot, so it passes
the admission check again and is recorded as the bot's next version (as ``update_bot``
records a re-submitted dialled bot), and matches claimed from then on are attributed to it.
A retired bot cannot connect.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.bots.addresses import validate_bot_name
from arena.bots.admission import (
    CHECK_HANDS,
    PROTOCOL_CHECK_HANDS,
    BotCheckFailedError,
    CheckBudget,
    CheckTimeLimitError,
    judge_protocol_report,
    refusal,
)
from arena.bots.registry import add_bot, find_bot
from arena.config import Settings
from arena.errors import ArenaError
from arena.store.models import Bot, BotVersion, Owner
from arena.store.statuses import BotStatus
from arena.text import NAME_LIMIT, clean_text
from sdk.referee import Player


class LinkRefusedError(ValueError):
    """A connection the gateway will not accept; ``status`` names the gRPC status code."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class KnownBot:
    bot_id: int
    name: str
    #: Its latest version: number and info (what the admission check read).
    version: int = 1
    info: dict[str, Any] = field(default_factory=dict)


def connected_owner(session: Session, owner_id: int | None) -> Owner:
    """The owner a connection's token named; LinkRefusedError (UNAUTHENTICATED) when that
    owner is gone since the token was checked."""
    owner = session.get(Owner, owner_id) if owner_id is not None else None
    if owner is None:
        raise LinkRefusedError("UNAUTHENTICATED", "the owner of this token no longer exists")
    return owner


def find_connected_bot(session: Session, owner: Owner, name: str) -> KnownBot | None:
    """The owner's connected bot ``name``; None when nobody has that name yet.
    LinkRefusedError when the name is not a bot this token may connect as."""
    try:
        validate_bot_name(name)
    except ArenaError as exc:
        raise LinkRefusedError("INVALID_ARGUMENT", str(exc)) from None
    bot = find_bot(session, name)
    if bot is None:
        return None
    if bot.owner_id != owner.id:
        raise LinkRefusedError("PERMISSION_DENIED", f"bot {name!r} belongs to another owner")
    if not bot.connected:
        raise LinkRefusedError(
            "FAILED_PRECONDITION",
            f"bot {name!r} is registered to be dialled at an address, not to connect; pick another name",
        )
    if bot.status != BotStatus.ACTIVE:
        raise LinkRefusedError("FAILED_PRECONDITION", retired_message(name))
    return _known(bot)


def retired_message(name: str) -> str:
    return (
        f"bot {name!r} is retired (tonk retire, or DELETE /api/v1/bots/{name}): the arena no "
        f"longer plays it and it cannot connect until its owner brings it back (tonk restore {name})"
    )


def _known(bot: Bot) -> KnownBot:
    latest = max(bot.versions, key=lambda v: v.number, default=None)
    if latest is None:
        return KnownBot(bot.id, bot.name, 0, {})
    return KnownBot(bot.id, bot.name, latest.number, dict(latest.info or {}))


def read_info(player: Player) -> dict[str, Any]:
    """The bot's GetInfo over its connection, as the admission check reads and stores it."""
    from sdk import admission

    described = player.describe()
    return {key: clean_text(described.get(key, ""), NAME_LIMIT) for key in admission.INFO_FIELDS}


def same_info(info: dict[str, Any], known: KnownBot) -> bool:
    """Whether ``info`` (read_info) is that of the bot's latest version."""
    from sdk import admission

    return all(info.get(key, "") == known.info.get(key, "") for key in admission.INFO_FIELDS)


def check_connected_bot(
    player: Player,
    name: str,
    settings: Settings,
    info: dict[str, Any] | None = None,
    cut: Callable[[LinkRefusedError], None] | None = None,
) -> dict[str, Any]:
    """The admission check (sdk.admission, as for a dialled bot), played over the connection;
    the bot's info if it passes (``info``: its GetInfo, read_info, if read already). Raises
    LinkRefusedError (FAILED_PRECONDITION) saying what failed.

    All of it is bounded by ``Settings.check_time_limit_s``, as a dialled bot's checks are: when
    the time runs out, ``cut`` (called from a timer's thread with the refusal) must end the
    connection so the calls still waiting fail at once, and the refusal says the time ran out."""
    from sdk import admission

    where = f"connected bot {name!r}"
    budget = CheckBudget(settings.check_time_limit_s, where)
    late = LinkRefusedError("FAILED_PRECONDITION", f"admission check failed: {budget.exceeded()}")
    match = admission.MatchCheck(settings.decision_deadline_ms, settings.time_bank_ms, hands=CHECK_HANDS)
    try:
        with budget.cutting(lambda: cut(late) if cut is not None else None):
            info = read_info(player) if info is None else info
            try:
                admission.check_info(info, name)
                admission.conformance_match(player, info["name"], match, where)
            except admission.AdmissionError as exc:
                raise refusal(exc) from None
            _protocol_check(player, settings, where)
    except CheckTimeLimitError:
        raise late from None
    except BotCheckFailedError as exc:
        raise LinkRefusedError("FAILED_PRECONDITION", f"admission check failed: {exc}") from None
    return info


def _protocol_check(player: Player, settings: Settings, where: str) -> None:
    from sdk.conformance import CheckConfig, check_player

    config = CheckConfig(deadline_ms=settings.decision_deadline_ms, hands=PROTOCOL_CHECK_HANDS, max_faults=1)
    judge_protocol_report(check_player(player, config, where).to_json(), where)


def register_connected_bot(session: Session, owner: Owner, name: str, info: dict[str, Any]) -> KnownBot:
    """Register ``owner``'s new connected bot (checked already). Flushes, does not commit."""
    existing = find_connected_bot(session, owner, name)
    if existing is not None:  # another connection registered it meanwhile
        return existing
    bot = Bot(name=name, owner=owner, address=None, hosted=None, status=BotStatus.ACTIVE, connected=True)
    bot.versions.append(BotVersion(number=1, address=None, hosted=None, info=info, connected=True))
    try:
        add_bot(session, bot, name)
    except ArenaError as exc:
        raise LinkRefusedError("ALREADY_EXISTS", str(exc)) from None
    return KnownBot(bot.id, bot.name, 1, dict(info))


def record_connected_version(session: Session, owner: Owner, name: str, info: dict[str, Any]) -> KnownBot:
    """Record ``info`` (checked already) as the next version of ``owner``'s connected bot
    ``name``, unless its latest version has that info already (another connection recorded
    it meanwhile). Flushes, does not commit. LinkRefusedError as find_connected_bot, and
    UNAVAILABLE when another connection recorded a version at the same moment."""
    known = find_connected_bot(session, owner, name)
    if known is None:  # gone since the lookup (not possible today: bots are never deleted)
        raise LinkRefusedError("UNAVAILABLE", f"bot {name!r} changed while it connected; reconnect")
    if same_info(info, known):
        return known
    version = BotVersion(bot_id=known.bot_id, number=known.version + 1, address=None, hosted=None,
                         info=info, connected=True)  # fmt: skip
    session.add(version)
    try:
        session.flush()
    except IntegrityError:  # the same number, by another connection: try again after it
        raise LinkRefusedError(
            "UNAVAILABLE", f"another connection of bot {name!r} recorded a new version just now; reconnect"
        ) from None
    return KnownBot(known.bot_id, known.name, version.number, dict(info))


def bot_states(session: Session, bot_ids: list[int]) -> dict[int, tuple[str, int]]:
    """Status and latest version number of each bot (a gateway checks the bots it holds)."""
    if not bot_ids:
        return {}
    rows = session.execute(
        select(Bot.id, Bot.status, func.max(BotVersion.number))
        .join(BotVersion, BotVersion.bot_id == Bot.id)
        .where(Bot.id.in_(bot_ids))
        .group_by(Bot.id, Bot.status)
    ).all()
    return {bot_id: (str(status), int(number or 0)) for bot_id, status, number in rows}
