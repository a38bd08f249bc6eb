"""Who may connect as which bot, and registering a connected bot on its first connection.

A token connects only its owner's bots. A name nobody has yet is registered for the token's
owner, but only after the bot passes, over the connection itself, the same admission check
a submitted bot passes (arena/registry.py): its GetInfo, a conformance match against the
house ``random`` bot, and the SDK's protocol check (``tonk check``), with zero faults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from arena.addresses import validate_bot_name
from arena.config import Settings
from arena.errors import ArenaError
from arena.models import Bot, BotVersion, Owner
from arena.registry import (
    CHECK_HANDS,
    PROTOCOL_CHECK_HANDS,
    BotCheckFailedError,
    ConformanceFailedError,
    _add,
    _refusal,
    find_bot,
)
from arena.statuses import BotStatus
from arena.text import NAME_LIMIT, clean_text


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
        raise LinkRefusedError(
            "FAILED_PRECONDITION", f"bot {name!r} is retired; bring it back before it connects again"
        )
    return KnownBot(bot.id, bot.name)


def check_connected_bot(player: Any, name: str, settings: Settings) -> dict[str, Any]:
    """The admission check (sdk.admission, as for a dialled bot), played over the connection;
    the bot's info if it passes. Raises LinkRefusedError (FAILED_PRECONDITION) saying what
    failed."""
    from sdk import admission

    where = f"connected bot {name!r}"
    described = player.describe()
    info = {key: clean_text(described.get(key, ""), NAME_LIMIT) for key in admission.INFO_FIELDS}
    match = admission.MatchCheck(settings.decision_deadline_ms, settings.time_bank_ms, hands=CHECK_HANDS)
    try:
        try:
            admission.check_info(info, name)
            admission.conformance_match(player, info["name"], match, where)
        except admission.AdmissionError as exc:
            raise _refusal(exc) from None
        _protocol_check(player, settings, where)
    except BotCheckFailedError as exc:
        raise LinkRefusedError("FAILED_PRECONDITION", f"admission check failed: {exc}") from None
    return info


def _protocol_check(player: Any, settings: Settings, where: str) -> None:
    from sdk.conformance import CheckConfig, check_player

    config = CheckConfig(deadline_ms=settings.decision_deadline_ms, hands=PROTOCOL_CHECK_HANDS, max_faults=1)
    report = check_player(player, config, where).to_json()
    faults, problems = list(report["faults"]), list(report["problems"])
    if faults:
        first = faults[0]
        raise ConformanceFailedError(
            f"{where} failed the protocol check in {first['scenario']!r}: {first['kind']}: {first['reason']}"
        )
    if problems:
        raise ConformanceFailedError(f"{where} failed the protocol check: {problems[0]}")


def register_connected_bot(session: Session, owner: Owner, name: str, info: dict[str, Any]) -> KnownBot:
    """Register ``owner``'s new connected bot (checked already). Flushes, does not commit."""
    existing = find_connected_bot(session, owner, name)
    if existing is not None:  # another connection registered it meanwhile
        return existing
    bot = Bot(name=name, owner=owner, address=None, hosted=None, status=BotStatus.ACTIVE, connected=True)
    bot.versions.append(BotVersion(number=1, address=None, hosted=None, info=info, connected=True))
    try:
        _add(session, bot, name)
    except ArenaError as exc:
        raise LinkRefusedError("ALREADY_EXISTS", str(exc)) from None
    return KnownBot(bot.id, bot.name)
