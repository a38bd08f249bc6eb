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

from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from arena.addresses import (
    AddressNotAllowedError,
    InvalidAddressError,
    InvalidBotNameError,
    check_address,
    validate_bot_name,
)
from arena.auth import require_operator
from arena.config import Settings
from arena.errors import (
    ArenaError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableError,
)
from arena.models import Bot, BotVersion, Owner

#: Hands of the conformance match a bot plays before it is accepted.
CHECK_HANDS = 4

RegistryError = ArenaError  # the name the dashboard's brief uses for the common base

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
) -> Bot:
    """Register ``owner``'s new bot ``name`` served at ``address`` (``HOST:PORT``).

    Raises InvalidBotNameError (400), InvalidAddressError (400), AddressNotAllowedError (422),
    NameTakenError (409), or a BotCheckFailedError (422) when the bot fails its checks;
    nothing is added to the session then. ``check=False`` skips the network checks (trusted
    callers and tests only).
    """
    validate_bot_name(name)
    address = check_address(address, settings.allowed_bot_hosts)
    _ensure_name_free(session, name)
    info = _run_checks(address, settings, check, checker)
    bot = Bot(name=name, owner=owner, address=address, hosted=None, status="active")
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
    address = check_address(address, settings.allowed_bot_hosts)
    info = _run_checks(address, settings, check, checker)
    bot.address = address
    bot.status = "active"
    bot.versions.append(BotVersion(number=_next_number(bot), address=address, hosted=None, info=info))
    session.flush()
    return bot


def retire_bot(session: Session, owner: Owner, name: str) -> Bot:
    """Withdraw ``name`` from future tournaments (its history stays, and so does its name).

    Owner or operator only (NotOwnerError, 403); retiring a retired bot changes nothing."""
    bot = get_bot(session, name)
    _ensure_may_change(owner, bot)
    if bot.status != "retired":
        bot.status = "retired"
        session.flush()
    return bot


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
            existing.status = "active"
            session.flush()
            return existing
    info = check_bot_class(bot_class, settings or Settings()) if check else _class_info(bot_class)
    if existing is not None:
        existing.hosted = bot_class_path
        existing.status = "active"
        existing.versions.append(
            BotVersion(number=_next_number(existing), address=None, hosted=bot_class_path, info=info)
        )
        session.flush()
        return existing
    bot = Bot(name=name, owner=operator, address=None, hosted=bot_class_path, status="active")
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


def list_bots(session: Session, *, owner: Owner | None = None, include_retired: bool = False) -> list[Bot]:
    """Bots by name, optionally only ``owner``'s; retired ones only when asked for."""
    query = select(Bot).options(selectinload(Bot.versions), selectinload(Bot.owner)).order_by(Bot.name)
    if owner is not None:
        query = query.where(Bot.owner_id == owner.id)
    if not include_retired:
        query = query.where(Bot.status == "active")
    return list(session.scalars(query))


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


def check_bot(address: str, settings: Settings) -> dict[str, Any]:
    """Check the bot served at ``address`` (health, GetInfo, conformance match) and return
    its info (name, version, author, protocol_version, language); a BotCheckFailedError
    subclass says what failed."""
    import grpc

    where = f"the bot at {address!r}"
    _check_health(address, where)
    from sdk.protocol import bot_pb2, bot_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        try:
            reply = bot_pb2_grpc.BotServiceStub(channel).GetInfo(
                bot_pb2.GetInfoRequest(), timeout=CHECK_RPC_TIMEOUT_S
            )
        except grpc.RpcError as exc:
            raise BotCheckFailedError(f"{where} did not answer GetInfo: {_rpc_text(exc)}") from None
    info: dict[str, Any] = {
        field: str(getattr(reply, field))[:200]
        for field in ("name", "version", "author", "protocol_version", "language")
    }
    _check_info(info, where)
    # The matches it plays at once (0: unset); arena.capacity reads it from the version's info.
    info["max_concurrent_matches"] = max(0, int(reply.max_concurrent_matches))
    from sdk.grpc_player import GrpcPlayer

    player = GrpcPlayer(address)
    try:
        _conformance_match(player, info["name"], settings, where)
    finally:
        player.close()
    warnings = _protocol_check(address, settings, where)
    if warnings:
        info["check_warnings"] = warnings[:10]
    return info


def check_bot_class(bot_class: type[Any], settings: Settings) -> dict[str, Any]:
    """The conformance match for a hosted bot, played in-process; its info if it passes."""
    from sdk.referee import LocalPlayer

    info = _class_info(bot_class)
    _conformance_match(LocalPlayer(bot_class), info["name"], settings, f"hosted bot {info['name']!r}")
    return info


def _protocol_check(address: str, settings: Settings, where: str) -> list[str]:
    """The SDK's protocol check (``tonk check``: every rule variant and 2 to 6 seats, crafted
    rare positions, determinism) at the arena's deadline; any fault refuses the bot. Returns
    its warnings (nondeterminism included: legal play, so it is reported, not refused)."""
    try:
        from sdk.conformance import CheckConfig, ConformanceError
        from sdk.conformance import check_bot as run_check
    except ImportError:  # an SDK without the checker: the match against random must do
        return []
    config = CheckConfig(deadline_ms=settings.decision_deadline_ms, hands=PROTOCOL_CHECK_HANDS, max_faults=1)
    try:
        report = run_check(address, config).to_json()
    except ConformanceError as exc:
        raise BotCheckFailedError(f"{where} could not be checked: {exc}") from None
    faults, problems = list(report["faults"]), list(report["problems"])
    if faults or problems:
        if faults:
            first = faults[0]
            what = f"in {first['scenario']!r}: {first['kind']}: {first['reason']}"
        else:
            what = problems[0]
        command = f"tonk check {address} --deadline-ms {config.deadline_ms} --hands {config.hands}"
        command += f" --seed {config.seed}"
        raise ConformanceFailedError(
            f"{where} failed the protocol check {what}",
            details={"faults": faults, "problems": problems, "check": command},
        )
    return [str(w) for w in report["warnings"]] + [f"nondeterministic: {n}" for n in report["nondeterminism"]]


def _check_health(address: str, where: str) -> None:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=CHECK_RPC_TIMEOUT_S
            )
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise BotUnreachableError(f"could not reach {where}: {_rpc_text(exc)}") from None
            if code == grpc.StatusCode.UNIMPLEMENTED:
                raise BotUnhealthyError(
                    f"{where} does not serve the standard gRPC health service (grpc.health.v1.Health); "
                    "`tonk serve` and sdk.serve() provide it"
                ) from None
            raise BotUnhealthyError(f"{where} failed its health check: {_rpc_text(exc)}") from None
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        raise BotUnhealthyError(f"{where} reports {status}, not SERVING, on its health service")


def _check_info(info: dict[str, str], where: str) -> None:
    from sdk.protocol import PROTOCOL_VERSION

    if not info["name"].strip():
        raise BotCheckFailedError(f"{where} gave no name in its GetInfo reply")
    if info["protocol_version"] != PROTOCOL_VERSION:
        raise BotCheckFailedError(
            f"{where} speaks protocol {info['protocol_version']!r}; this arena speaks {PROTOCOL_VERSION!r}"
        )


def _conformance_match(player: Any, name: str, settings: Settings, where: str) -> None:
    """A few hands against ``random`` under the real referee; the first fault refuses the bot."""
    from bots.random_bot import RandomBot
    from sdk.dealing import new_seed
    from sdk.referee import LocalPlayer, RefereeConfig, play_match

    config = RefereeConfig(
        decision_deadline_ms=settings.decision_deadline_ms, time_bank_ms=settings.time_bank_ms, max_faults=1
    )
    counted = _CountingPlayer(player)
    seed = new_seed()
    # A hand can end at the deal (TONK) before the bot acts: play on until it has acted.
    for _attempt in range(3):
        result = play_match(
            [counted, LocalPlayer(RandomBot)],
            seed,
            CHECK_HANDS,
            match_id=f"conformance-{seed:x}",
            names=[name or "candidate", "random"],
            config=config,
        )
        faults = [f for f in result.faults if f.seat == 0]
        if faults:
            first = faults[0]
            when = f"hand {first.hand_index}, decision {first.decision}"
            if first.decision < 0:
                when = "starting the match"
            raise ConformanceFailedError(
                f"{where} faulted in its conformance match against 'random' (seed {seed}, {when}): "
                f"{first.kind.value}: {first.reason}",
                details={"seed": seed, "hands": CHECK_HANDS, "faults": [f.to_json() for f in faults]},
            )
        if counted.decisions:
            return
        seed = new_seed()
    raise ConformanceFailedError(f"{where} was never asked to act in its conformance match; try again")


class _CountingPlayer:
    """Delegates to a player, counting its decisions."""

    def __init__(self, player: Any):
        self.player = player
        self.decisions = 0

    def describe(self) -> dict[str, str]:
        return dict(self.player.describe())

    def match_start(self, info: Any) -> None:
        self.player.match_start(info)

    def act(self, request: Any) -> Any:
        self.decisions += 1
        return self.player.act(request)

    def hand_end(self, result: Any) -> None:
        self.player.hand_end(result)

    def match_end(self, summary: Any) -> None:
        self.player.match_end(summary)

    def close(self) -> None:
        self.player.close()


def _rpc_text(exc: Exception) -> str:
    import grpc

    if isinstance(exc, grpc.Call):
        return f"{exc.code().name}: {exc.details()}"
    return str(exc)


def _ensure_name_free(session: Session, name: str) -> None:
    bot = find_bot(session, name)
    if bot is not None:
        retired = ""
        if bot.status == "retired":
            retired = " (by a retired bot; its owner can bring it back with an update)"
        raise NameTakenError(f"bot name {name!r} is already taken{retired}")


def _ensure_may_change(owner: Owner, bot: Bot) -> None:
    if bot.owner_id != owner.id and not owner.is_operator:
        raise NotOwnerError(f"bot {bot.name!r} belongs to another owner; only its owner can change it")


def _run_checks(address: str, settings: Settings, check: bool, checker: BotChecker | None) -> dict[str, Any]:
    if not check:
        return {}
    return dict((checker or check_bot)(address, settings))


def _class_info(bot_class: type[Any]) -> dict[str, Any]:
    from sdk.bot import PROTOCOL_VERSION

    return {
        "name": str(bot_class.name),
        "version": str(bot_class.version),
        "author": str(bot_class.author),
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
    "ConformanceFailedError",
    "InvalidAddressError",
    "InvalidBotNameError",
    "InvalidHostedBotError",
    "NameTakenError",
    "NotOwnerError",
    "RegistryError",
    "bot_to_json",
    "check_bot",
    "check_bot_class",
    "find_bot",
    "get_bot",
    "host_bot",
    "latest_version",
    "list_bots",
    "register_bot",
    "retire_bot",
    "update_bot",
]
