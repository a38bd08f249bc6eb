"""The bot registry: who may enter which bot, at which address, and only after it works.

Registering (or updating) a bot at an address runs, before anything is written:

1. the name and address checks of arena/bots/addresses.py (no internal hosts unless allowed);
2. the standard gRPC health service: the server must answer SERVING;
3. the protocol's GetInfo: the bot's name, version, author and protocol version;
4. a short conformance match: a few hands against the house ``random`` bot under the real
   referee, the arena's deadlines, a fresh seed, and zero faults allowed;
5. the SDK's protocol check (``sdk.conformance``, what ``tonk check`` runs): every rule
   variant, 2 to 6 seats and crafted rare positions, again with zero faults allowed.

Any refusal raises an :class:`~arena.errors.ArenaError` subclass (its ``status`` is the HTTP
status) and adds nothing to the session. Functions flush but never commit: the caller owns the
transaction (``arena.store.db.session_scope`` commits on success, rolls back on error).

Operators may also update or retire anyone's bot, and host bots the arena runs itself
(``host_bot``: a ``module:Class`` on the arena's own path, like the house bots).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.bots.addresses import (
    AddressNotAllowedError,
    DialTarget,
    InvalidAddressError,
    InvalidBotNameError,
    Resolver,
    pin_address,
    validate_bot_name,
)
from arena.bots.admission import (
    CHECK_HANDS,
    BotCheckFailedError,
    BotUnhealthyError,
    BotUnreachableError,
    CheckTimeLimitError,
    ConformanceFailedError,
    check_bot_class,
    check_served_bot,
    class_info,
)
from arena.bots.claims import ensure_address_free, required_claim
from arena.bots.owners import require_operator
from arena.bots.reachability import answered
from arena.config import Settings
from arena.errors import (
    ArenaError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableError,
)
from arena.store.models import Bot, BotVersion, Owner
from arena.store.statuses import BotStatus

#: ``checker(address, settings) -> info``: raises BotCheckFailedError (or a subclass) to refuse.
BotChecker = Callable[[str, Settings], dict[str, Any]]


class NameTakenError(ConflictError):
    code = "name_taken"


class BotNotFoundError(NotFoundError):
    code = "bot_not_found"


class NotOwnerError(PermissionDeniedError):
    code = "not_owner"


class InvalidHostedBotError(UnprocessableError):
    """A hosted bot's ``module:Class`` that cannot be loaded, or an address for a hosted bot."""

    code = "invalid_hosted_bot"


def register_bot(
    session: Session,
    owner: Owner,
    name: str,
    address: str,
    *,
    settings: Settings,
    check: bool = True,
    checker: BotChecker | None = None,
    resolver: Resolver | None = None,
) -> Bot:
    """Register ``owner``'s new bot ``name`` served at ``address`` (``HOST:PORT``).

    Raises InvalidBotNameError (400), InvalidAddressError (400), AddressNotAllowedError (422),
    NameTakenError or AddressTakenError (409), ClaimRequiredError (422: the bot did not return
    the owner's claim code, arena/bots/claims.py), or a BotCheckFailedError (422) when the bot
    fails its checks;
    nothing is added to the session then. ``check=False`` skips the network checks (trusted
    callers and tests only). The checks dial the IP address the address check passed
    (``resolver``: how names are resolved, default the system's).
    """
    validate_bot_name(name)
    address, target = pin_address(address, settings.allowed_bot_hosts, resolver=resolver)
    _ensure_name_free(session, name, owner)
    claim = required_claim(session, owner, address, target, settings)
    info = _run_checks(address, target, settings, check, checker, claim)
    # After the claim: whoever does not run the bot there is refused alike (422) whether or
    # not another owner registered it, so the refusal tells nobody which ports hold a bot.
    ensure_address_free(session, owner, address, target=target, resolver=resolver)
    bot = Bot(name=name, owner=owner, address=address, hosted=None, status=BotStatus.ACTIVE)
    bot.versions.append(BotVersion(number=1, address=address, hosted=None, info=info))
    add_bot(session, bot, name)
    return bot


def update_bot(
    session: Session,
    owner: Owner,
    name: str,
    address: str,
    *,
    settings: Settings,
    check: bool = True,
    checker: BotChecker | None = None,
    resolver: Resolver | None = None,
) -> Bot:
    """Point ``name`` at a new ``address`` (or re-check it at the same one) as a new version.

    A version is what plays: the same address and the same GetInfo as the latest version is
    that version still (its rating and record go on), so re-submitting an unchanged bot starts
    nothing new; a new build behind the same address says so by its GetInfo ``version``.
    Only the bot's owner (or an operator) may; a retired bot is brought back by updating it.
    Raises BotNotFoundError (404), NotOwnerError (403), InvalidHostedBotError (422) for a
    hosted bot, and the address and check errors of :func:`register_bot`.
    """
    bot = get_bot(session, name)
    _ensure_may_change(owner, bot)
    if bot.hosted:
        raise InvalidHostedBotError(f"bot {name!r} is hosted by the arena ({bot.hosted}); it has no address")
    if bot.connected:  # arena/link: it plays over the link it opens
        raise InvalidHostedBotError(
            f"bot {name!r} connects to the arena (tonk serve --connect); it has no address"
        )
    address, target = pin_address(address, settings.allowed_bot_hosts, resolver=resolver)
    # The bot's owner proves it runs the bot there; an operator acting for them need not.
    claim = None if owner.is_operator else required_claim(session, bot.owner, address, target, settings)
    info = _run_checks(address, target, settings, check, checker, claim)
    ensure_address_free(session, bot.owner, address, bot.id, target=target, resolver=resolver)
    bot.address = address
    bot.status = BotStatus.ACTIVE
    latest = latest_version(bot)
    if latest is not None and same_dialled_version(latest, address, info):
        # The same bot: only what this check found may be new (its warnings are the latest's).
        latest.info = info
    else:
        bot.versions.append(BotVersion(number=_next_number(bot), address=address, hosted=None, info=info))
    if check:  # it answered its health check just now: an outage is over (arena/bots/reachability.py)
        answered(session, bot.id)
    session.flush()
    return bot


#: What a check adds to a version's info that is not the bot's own answer: it says how this
#: check went (a slow notice on a busy machine, a nondeterministic choice), not what plays.
CHECK_FINDINGS = ("check_warnings",)


def same_answers(before: dict[str, Any] | None, info: dict[str, Any]) -> bool:
    """Whether a version's stored ``before`` and a new check's ``info`` hold the same answers
    from the bot. What the check found is not compared: a busy machine must not make an
    unchanged bot a new version."""

    def plays(found: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in found.items() if k not in CHECK_FINDINGS}

    return plays(dict(before or {})) == plays(info)


def same_dialled_version(version: BotVersion | None, address: str, info: dict[str, Any]) -> bool:
    """Whether ``version`` is a dialled bot at ``address`` that reported ``info``: nothing that
    plays changed, so a re-registration keeps that version (and its rating)."""
    return (
        version is not None
        and version.address == address
        and version.hosted is None
        and version.upload_sha is None
        and not version.connected
        and same_answers(version.info, info)
    )


def retire_bot(session: Session, owner: Owner, name: str) -> Bot:
    """Withdraw ``name`` from future tournaments (its history stays, and so does its name).

    Owner or operator only (NotOwnerError, 403); retiring a retired bot changes nothing."""
    bot = get_bot(session, name)
    _ensure_may_change(owner, bot)
    if bot.status != BotStatus.RETIRED:
        bot.status = BotStatus.RETIRED
        session.flush()
    return bot


def restore_bot(
    session: Session,
    owner: Owner,
    name: str,
    *,
    settings: Settings,
    check: bool = True,
    checker: BotChecker | None = None,
    resolver: Resolver | None = None,
) -> Bot:
    """Bring a retired bot back into future tournaments; an active bot is returned unchanged.

    Owner or operator only (NotOwnerError, 403). A bot that connects (arena/link) becomes
    active and may connect again: its next connection is asked its GetInfo as always, so the
    same build plays on as its latest version and another build is checked as a new one. A
    bot the arena hosts becomes active. A dialled bot is checked again at its address first
    and, if anything about it changed, recorded as a new version, as :func:`update_bot` does,
    with its errors."""
    bot = get_bot(session, name)
    _ensure_may_change(owner, bot)
    if restore_checks(bot) and bot.address is not None:
        return update_bot(
            session,
            owner,
            name,
            bot.address,
            settings=settings,
            check=check,
            checker=checker,
            resolver=resolver,
        )
    if bot.status != BotStatus.ACTIVE:
        bot.status = BotStatus.ACTIVE
        session.flush()
    return bot


def restore_checks(bot: Bot) -> bool:
    """Whether :func:`restore_bot` checks ``bot`` again (a retired dialled bot), so the
    caller can take a check slot first."""
    return bot.status != BotStatus.ACTIVE and not bot.hosted and not bot.connected


def host_bot(
    session: Session,
    operator: Owner,
    name: str,
    bot_class_path: str,
    *,
    settings: Settings | None = None,
    check: bool = True,
) -> Bot:
    """Register (or re-point) a bot the arena runs itself from ``module:Class``.

    Operators only (PermissionDeniedError, 403). The class is loaded and, with ``check``,
    plays the conformance match in-process. Idempotent: hosting the same class again under
    the same name returns the bot unchanged (re-activating it if retired); another class
    makes a new version. Raises InvalidHostedBotError (422) when the class cannot be loaded,
    NameTakenError (409) when ``name`` is another owner's or an address-based bot.
    """
    require_operator(operator)
    validate_bot_name(name)
    from sdk.players import PlayerSpecError, load_bot_class  # the engine only, no gRPC

    try:
        bot_class = load_bot_class(bot_class_path)
    except PlayerSpecError as exc:
        raise InvalidHostedBotError(str(exc)) from None
    if ":" not in bot_class_path:  # a house short name: store the full path it stands for
        bot_class_path = f"{bot_class.__module__}:{bot_class.__qualname__}"
    existing = find_bot(session, name)
    if existing is not None:
        if existing.hosted is None or existing.owner_id != operator.id:
            raise NameTakenError(f"bot name {name!r} is already taken")
        if existing.hosted == bot_class_path:
            existing.status = BotStatus.ACTIVE
            session.flush()
            return existing
    info = check_bot_class(bot_class, settings or Settings()) if check else class_info(bot_class)
    if existing is not None:
        existing.hosted = bot_class_path
        existing.status = BotStatus.ACTIVE
        existing.versions.append(
            BotVersion(number=_next_number(existing), address=None, hosted=bot_class_path, info=info)
        )
        session.flush()
        return existing
    bot = Bot(name=name, owner=operator, address=None, hosted=bot_class_path, status=BotStatus.ACTIVE)
    bot.versions.append(BotVersion(number=1, address=None, hosted=bot_class_path, info=info))
    add_bot(session, bot, name)
    return bot


def find_bot(session: Session, name: str) -> Bot | None:
    """The bot called ``name`` (active or retired), or None."""
    return session.scalars(select(Bot).where(Bot.name == name)).first()


def get_bot(session: Session, name: str) -> Bot:
    """The bot called ``name`` (active or retired), or BotNotFoundError (404)."""
    bot = find_bot(session, name) if isinstance(name, str) else None
    if bot is None:
        raise BotNotFoundError(f"no bot named {name!r:.80}")
    return bot


def latest_version(bot: Bot) -> BotVersion | None:
    return max(bot.versions, key=lambda v: v.number, default=None)


def version_number(session: Session, name: str) -> int | None:
    """The number of the bot ``name``'s latest version (None: no such bot, or no version)."""
    bot = find_bot(session, name)
    version = None if bot is None else latest_version(bot)
    return None if version is None else version.number


def bot_to_json(bot: Bot, *, before: int | None = None) -> dict[str, Any]:
    """The API's view of a bot (``{"bot": bot_to_json(bot)}`` is what the routes answer).
    ``before``: an update's version number before it, to say whether it ``kept`` that version
    (nothing that plays changed) or made a new one."""
    version = latest_version(bot)
    kept = {} if before is None or version is None else {"kept": version.number == before}
    return {
        "name": bot.name,
        "owner": bot.owner.name,
        "address": bot.address,
        "hosted": bot.hosted,
        "connected": bool(bot.connected),  # it connects to the arena (arena/link), no address
        # The arena runs it from its upload (arena/bots/uploaded.py); its code is its owner's.
        "uploaded": version is not None and version.upload_sha is not None,
        "status": bot.status,
        "created_at": bot.created_at.isoformat() if bot.created_at else None,
        "version": None
        if version is None
        else {
            "number": version.number,
            "address": version.address,
            "hosted": version.hosted,
            "info": dict(version.info or {}),
            "created_at": version.created_at.isoformat() if version.created_at else None,
            **kept,
        },
    }


def _ensure_name_free(session: Session, name: str, owner: Owner | None = None) -> None:
    bot = find_bot(session, name)
    if bot is None:
        return
    if owner is not None and bot.owner_id == owner.id and bot.hosted is None:
        # Yours: the author most likely meant a new version (``tonk submit --update``).
        raise NameTakenError(
            f"bot name {name!r} is already taken by your own bot; to point it at a new address "
            "or version, update it (tonk submit --update, or PUT /api/v1/bots/NAME)",
            details={"yours": True},
        )
    retired = ""
    if bot.status == BotStatus.RETIRED:
        retired = " (by a retired bot; its owner can bring it back with an update)"
    raise NameTakenError(f"bot name {name!r} is already taken{retired}")


def _ensure_may_change(owner: Owner, bot: Bot) -> None:
    if bot.owner_id != owner.id and not owner.is_operator:
        raise NotOwnerError(f"bot {bot.name!r} belongs to another owner; only its owner can change it")


def _run_checks(
    address: str,
    target: DialTarget,
    settings: Settings,
    check: bool,
    checker: BotChecker | None,
    claim: str | None,
) -> dict[str, Any]:
    if not check:
        return {}
    if checker is not None:
        return dict(checker(address, settings))
    return check_served_bot(address, settings, target=target, claim=claim)


def _next_number(bot: Bot) -> int:
    version = latest_version(bot)
    return 1 if version is None else version.number + 1


def add_bot(session: Session, bot: Bot, name: str) -> None:
    session.add(bot)
    try:
        session.flush()
    except IntegrityError:  # lost a race for the name; the caller's transaction must roll back
        raise NameTakenError(f"bot name {name!r} is already taken") from None


__all__ = [
    "CHECK_HANDS",
    "AddressNotAllowedError",
    "ArenaError",
    "BotCheckFailedError",
    "BotNotFoundError",
    "BotUnhealthyError",
    "BotUnreachableError",
    "CheckTimeLimitError",
    "ConformanceFailedError",
    "InvalidAddressError",
    "InvalidBotNameError",
    "InvalidHostedBotError",
    "NameTakenError",
    "NotOwnerError",
    "bot_to_json",
    "check_bot_class",
    "check_served_bot",
    "find_bot",
    "get_bot",
    "host_bot",
    "latest_version",
    "register_bot",
    "restore_bot",
    "restore_checks",
    "retire_bot",
    "update_bot",
]
