"""The bot registry: who may enter which bot, at which address, and only after it works.

Registering (or updating) a bot at an address runs, before anything is written:

1. the name and address checks of arena/addresses.py (no internal hosts unless allowed);
2. the standard gRPC health service: the server must answer SERVING;
3. the protocol's GetInfo: the bot's name, version, author and protocol version;
4. a short conformance match: a few hands against the house ``random`` bot under the real
   referee, the arena's deadlines, a fresh seed, and zero faults allowed;
5. the SDK's protocol check (``sdk.conformance``, what ``tonk check`` runs): every rule
   variant, 2 to 6 seats and crafted rare positions, again with zero faults allowed.

Any refusal raises an :class:`~arena.errors.ArenaError` subclass (its ``status`` is the HTTP
status) and adds nothing to the session. Functions flush but never commit: the caller owns the
transaction (``arena.db.session_scope`` commits on success, rolls back on error).

Operators may also update or retire anyone's bot, and host bots the arena runs itself
(``host_bot``: a ``module:Class`` on the arena's own path, like the house bots).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.addresses import (
    AddressNotAllowedError,
    DialTarget,
    InvalidAddressError,
    InvalidBotNameError,
    Resolver,
    pin_address,
    validate_bot_name,
)
from arena.auth import require_operator
from arena.claims import check_claim, ensure_address_free, required_claim
from arena.config import Settings
from arena.errors import (
    ArenaError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableError,
)
from arena.models import Bot, BotVersion, Owner
from arena.statuses import BotStatus
from arena.text import NAME_LIMIT, REASON_LIMIT, clean_text

#: Hands of the conformance match a bot plays before it is accepted.
CHECK_HANDS = 4  # sdk.admission.MATCH_HANDS

#: ``checker(address, settings) -> info``: raises BotCheckFailedError (or a subclass) to refuse.
BotChecker = Callable[[str, Settings], dict[str, Any]]


class NameTakenError(ConflictError):
    code = "name_taken"


class BotNotFoundError(NotFoundError):
    code = "bot_not_found"


class NotOwnerError(PermissionDeniedError):
    code = "not_owner"


class BotCheckFailedError(UnprocessableError):
    """The bot did not pass the arena's checks; ``details`` may say more (e.g. its faults)."""

    code = "bot_check_failed"


class BotUnreachableError(BotCheckFailedError):
    code = "bot_unreachable"


class BotUnhealthyError(BotCheckFailedError):
    code = "bot_unhealthy"


class ConformanceFailedError(BotCheckFailedError):
    code = "conformance_failed"


class CheckTimeLimitError(BotCheckFailedError):
    """The checks took longer than ``Settings.check_time_limit_s`` in all."""

    code = "check_time_limit"


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
    the owner's claim code, arena/claims.py), or a BotCheckFailedError (422) when the bot
    fails its checks;
    nothing is added to the session then. ``check=False`` skips the network checks (trusted
    callers and tests only). The checks dial the IP address the address check passed
    (``resolver``: how names are resolved, default the system's).
    """
    validate_bot_name(name)
    address, target = pin_address(address, settings.allowed_bot_hosts, resolver=resolver)
    _ensure_name_free(session, name, owner)
    ensure_address_free(session, owner, address)
    claim = required_claim(owner, address, target, settings)
    info = _run_checks(address, target, settings, check, checker, claim)
    bot = Bot(name=name, owner=owner, address=address, hosted=None, status=BotStatus.ACTIVE)
    bot.versions.append(BotVersion(number=1, address=address, hosted=None, info=info))
    _add(session, bot, name)
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
    ensure_address_free(session, bot.owner, address, bot.id)
    # The bot's owner proves it runs the bot there; an operator acting for them need not.
    claim = None if owner.is_operator else required_claim(bot.owner, address, target, settings)
    info = _run_checks(address, target, settings, check, checker, claim)
    bot.address = address
    bot.status = BotStatus.ACTIVE
    bot.versions.append(BotVersion(number=_next_number(bot), address=address, hosted=None, info=info))
    session.flush()
    return bot


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
    and recorded as a new version, as :func:`update_bot` does, with its errors."""
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
    info = check_bot_class(bot_class, settings or Settings()) if check else _class_info(bot_class)
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
    _add(session, bot, name)
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


def bot_to_json(bot: Bot) -> dict[str, Any]:
    """The API's view of a bot (``{"bot": bot_to_json(bot)}`` is what the routes answer)."""
    version = latest_version(bot)
    return {
        "name": bot.name,
        "owner": bot.owner.name,
        "address": bot.address,
        "hosted": bot.hosted,
        "connected": bool(bot.connected),  # it connects to the arena (arena/link), no address
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
        },
    }


# --- The checks a bot passes before it is accepted ---------------------------------------

#: Hands per scenario of the protocol check (sdk.conformance) run after that match.
PROTOCOL_CHECK_HANDS = 2
#: Seconds to wait for the health and GetInfo answers.
CHECK_RPC_TIMEOUT_S = 5.0


def check_served_bot(
    address: str, settings: Settings, *, target: DialTarget | None = None, claim: str | None = None
) -> dict[str, Any]:
    """Check the bot served at ``address`` (health, GetInfo, conformance match, protocol
    check: sdk.admission, the same code ``tonk check`` runs) and return its info (name,
    version, author, protocol_version, language); a BotCheckFailedError subclass says what
    failed, in the words ``tonk check`` uses. Every check dials ``target``, the resolution the
    address check passed (:func:`arena.addresses.pin_address`; pinned here when not given),
    never the name. ``claim``: the claim code GetInfo must return (arena/claims.py), None for
    none. All of it is bounded by ``Settings.check_time_limit_s``."""
    from sdk import admission
    from sdk.grpc_player import GrpcPlayer

    if target is None:
        address, target = pin_address(address, settings.allowed_bot_hosts)
    where = admission.where(address)
    budget = _Budget(settings.check_time_limit_s, where)
    dial = {"dial": target.target, "authority": target.authority}
    try:
        admission.check_health(address, budget.timeout(CHECK_RPC_TIMEOUT_S), **dial)
        reply = admission.fetch_info(address, budget.timeout(CHECK_RPC_TIMEOUT_S), **dial)
    except admission.AdmissionError as exc:
        raise _refusal(exc) from None
    info: dict[str, Any] = {field: clean_text(reply[field], NAME_LIMIT) for field in admission.INFO_FIELDS}
    check_claim(reply.get("claim", ""), claim, address, where)
    # The matches it plays at once (0: unset); arena.capacity reads it from the version's info.
    info["max_concurrent_matches"] = max(0, int(reply.get("max_concurrent_matches", "0")))
    player = GrpcPlayer(target.target, authority=target.authority)
    match = admission.MatchCheck(settings.decision_deadline_ms, settings.time_bank_ms, hands=CHECK_HANDS)
    try:
        with budget.cutting(player.close):
            try:
                admission.conformance_match(player, info["name"], match, where)
            except admission.AdmissionError as exc:
                raise _refusal(exc) from None
    finally:
        player.close()
    warnings = _protocol_check(target.target, address, settings, where, budget)
    if warnings:
        info["check_warnings"] = [clean_text(w, REASON_LIMIT) for w in warnings[:10]]
    return info


def check_bot_class(bot_class: type[Any], settings: Settings) -> dict[str, Any]:
    """The conformance match for a hosted bot, played in-process; its info if it passes."""
    from sdk import admission
    from sdk.referee import LocalPlayer

    info = _class_info(bot_class)
    match = admission.MatchCheck(settings.decision_deadline_ms, settings.time_bank_ms, hands=CHECK_HANDS)
    where = f"hosted bot {info['name']!r}"
    try:
        admission.conformance_match(LocalPlayer(bot_class), info["name"], match, where)
    except admission.AdmissionError as exc:
        raise _refusal(exc) from None
    return info


def _refusal(exc: Any) -> BotCheckFailedError:
    """The arena's refusal for an sdk.admission.AdmissionError: same code, same words, with
    the bot's own text in them (fault reasons, status details) cleaned and bounded."""
    kind = {
        "bot_unreachable": BotUnreachableError,
        "bot_unhealthy": BotUnhealthyError,
        "conformance_failed": ConformanceFailedError,
    }.get(exc.code, BotCheckFailedError)
    message = clean_text(str(exc), REASON_LIMIT)
    if not exc.details:
        return kind(message)
    details = dict(exc.details)
    if isinstance(details.get("faults"), list):
        details["faults"] = [
            {**f, "reason": clean_text(f.get("reason", ""), REASON_LIMIT)} if isinstance(f, dict) else f
            for f in details["faults"]
        ]
    return kind(message, details=details)


def _protocol_check(dial: str, address: str, settings: Settings, where: str, budget: _Budget) -> list[str]:
    """The SDK's protocol check (``tonk check``: every rule variant and 2 to 6 seats, crafted
    rare positions, determinism) at the arena's deadline; any fault refuses the bot. Returns
    its warnings (nondeterminism included: legal play, so it is reported, not refused)."""
    try:
        from sdk.conformance import CheckConfig, ConformanceError
        from sdk.conformance import check_bot as run_check
    except ImportError:  # an SDK without the checker: the match against random must do
        return []
    # admission=False: health, GetInfo and the match against random were just checked.
    config = CheckConfig(
        deadline_ms=settings.decision_deadline_ms,
        hands=PROTOCOL_CHECK_HANDS,
        max_faults=1,
        time_limit_s=budget.left(),
        admission=False,
    )
    try:
        checked = run_check(dial, config)  # the checked IP, not the name (see check_served_bot)
    except ConformanceError as exc:
        raise BotCheckFailedError(f"{where} could not be checked: {exc}") from None
    if checked.time_limit_hit:
        raise budget.exceeded()
    report = checked.to_json()
    faults, problems = list(report["faults"]), list(report["problems"])
    if faults or problems:
        if faults:
            first = faults[0]
            what = f"in {first['scenario']!r}: {first['kind']}: {first['reason']}"
        else:
            what = problems[0]
        what = clean_text(what, REASON_LIMIT)
        faults = [{**f, "reason": clean_text(f.get("reason", ""), REASON_LIMIT)} for f in faults[:20]]
        problems = [clean_text(p, REASON_LIMIT) for p in problems[:20]]
        command = f"tonk check {address} --deadline-ms {config.deadline_ms} --hands {config.hands}"
        command += f" --seed {config.seed}"
        raise ConformanceFailedError(
            f"{where} failed the protocol check {what}",
            details={"faults": faults, "problems": problems, "check": command},
        )
    return [str(w) for w in report["warnings"]] + [f"nondeterministic: {n}" for n in report["nondeterminism"]]


class _Budget:
    """The time all of one bot's checks may take (``Settings.check_time_limit_s``): each RPC's
    timeout is capped by what is left, and a match still running when it is spent has its
    connection cut, so a slow but legal bot cannot hold a check slot for minutes."""

    def __init__(self, limit_s: float, where: str):
        self.limit_s = limit_s
        self.where = where
        self.ends = time.monotonic() + limit_s

    def left(self) -> float:
        return max(0.001, self.ends - time.monotonic())

    def timeout(self, longest: float) -> float:
        return min(longest, self.left())

    def exceeded(self) -> CheckTimeLimitError:
        return CheckTimeLimitError(
            f"the checks of {self.where} took longer than the {self.limit_s:g} s the arena gives them; "
            "a bot must answer well within its deadline (`tonk check HOST:PORT` shows its latency)"
        )

    @contextmanager
    def cutting(self, cut: Callable[[], None]) -> Iterator[None]:
        """Run the block, calling ``cut`` (which must make it fail fast) if the time runs out
        meanwhile; whatever the block then raises becomes a CheckTimeLimitError."""
        hit = threading.Event()

        def run_out() -> None:
            hit.set()
            cut()

        timer = threading.Timer(self.left(), run_out)
        timer.daemon = True
        timer.start()
        try:
            yield
        except BotCheckFailedError:
            if hit.is_set():
                raise self.exceeded() from None
            raise
        finally:
            timer.cancel()
        if hit.is_set():
            raise self.exceeded()


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


def _class_info(bot_class: type[Any]) -> dict[str, Any]:
    from sdk.protocol import PROTOCOL_VERSION

    return {
        "name": clean_text(bot_class.name, NAME_LIMIT),
        "version": clean_text(bot_class.version, NAME_LIMIT),
        "author": clean_text(bot_class.author, NAME_LIMIT),
        "protocol_version": PROTOCOL_VERSION,
        "language": "python",
        "max_concurrent_matches": max(0, int(getattr(bot_class, "max_concurrent_matches", 0))),
    }


def _next_number(bot: Bot) -> int:
    version = latest_version(bot)
    return 1 if version is None else version.number + 1


def _add(session: Session, bot: Bot, name: str) -> None:
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
