"""The arena's admission check of a bot, one for every way a bot comes in.

A bot dialled at an address (:func:`check_served_bot`), a bot class the arena hosts
(:func:`check_bot_class`) and a bot that connects out (arena/link, :func:`check_connected_bot`
in arena/bots/connected.py) meet the same checks, with the SDK's code that ``tonk check``
runs (sdk.admission, sdk.conformance): its GetInfo, a short conformance match against the
house ``random`` bot at the arena's deadlines with zero faults allowed, and the protocol
check (every rule variant, 2 to 6 seats, crafted rare positions). A refusal is a
:class:`BotCheckFailedError` whose message and details, the bot's own text in part, are
cleaned and bounded before anything stores or shows them (:func:`refusal`,
:func:`judge_protocol_report`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from arena.bots.addresses import DialTarget, pin_address
from arena.bots.claims import check_claim
from arena.config import Settings
from arena.errors import UnprocessableError
from arena.text import NAME_LIMIT, REASON_LIMIT, clean_text

if TYPE_CHECKING:
    from arena.sandbox.clock import CpuTimedPlayer
    from arena.sandbox.runner import Sandbox

#: Hands of the conformance match a bot plays before it is accepted.
CHECK_HANDS = 4  # sdk.admission.MATCH_HANDS


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


#: Hands per scenario of the protocol check (sdk.conformance) run after that match.
PROTOCOL_CHECK_HANDS = 2
#: Seconds to wait for the health and GetInfo answers.
CHECK_RPC_TIMEOUT_S = 5.0


def check_served_bot(
    address: str,
    settings: Settings,
    *,
    target: DialTarget | None = None,
    claim: str | None = None,
    box: Sandbox | None = None,
) -> dict[str, Any]:
    """Check the bot served at ``address`` (health, GetInfo, conformance match, protocol
    check: sdk.admission, the same code ``tonk check`` runs) and return its info (name,
    version, author, protocol_version, language); a BotCheckFailedError subclass says what
    failed, in the words ``tonk check`` uses. Every check dials ``target``, the resolution the
    address check passed (:func:`arena.bots.addresses.pin_address`; pinned here when not given),
    never the name. ``claim``: the claim code GetInfo must return (arena/bots/claims.py), None for
    none. ``box``: the sandbox the bot runs in (an upload), whose decisions are then charged
    its CPU time, the clock of its matches (arena/sandbox/clock.py), not the wall clock a
    loaded host stretches. All of it is bounded by ``Settings.check_time_limit_s``."""
    from sdk import admission
    from sdk.grpc_player import GrpcPlayer

    if target is None:
        address, target = pin_address(address, settings.allowed_bot_hosts)
    where = admission.where(address)
    budget = CheckBudget(settings.check_time_limit_s, where)
    dial = {"dial": target.target, "authority": target.authority}
    try:
        admission.check_health(address, budget.timeout(CHECK_RPC_TIMEOUT_S), **dial)
        reply = admission.fetch_info(address, budget.timeout(CHECK_RPC_TIMEOUT_S), **dial)
    except admission.AdmissionError as exc:
        raise refusal(exc) from None
    info: dict[str, Any] = {field: clean_text(reply[field], NAME_LIMIT) for field in admission.INFO_FIELDS}
    check_claim(reply.get("claim", ""), claim, address, where)
    # The matches it plays at once (0: unset); arena.play.capacity reads it from the version's info.
    info["max_concurrent_matches"] = max(0, int(reply.get("max_concurrent_matches", "0")))
    player: GrpcPlayer | CpuTimedPlayer
    if box is None:
        player = GrpcPlayer(target.target, authority=target.authority)
    else:
        from arena.sandbox.clock import CpuTimedPlayer

        player = CpuTimedPlayer(box)
    match = admission.MatchCheck(settings.decision_deadline_ms, settings.time_bank_ms, hands=CHECK_HANDS)
    try:
        with budget.cutting(player.close):
            try:
                admission.conformance_match(player, info["name"], match, where)
            except admission.AdmissionError as exc:
                raise refusal(exc) from None
    finally:
        player.close()
    warnings = _protocol_check(target.target, address, settings, where, budget, box)
    if warnings:
        info["check_warnings"] = [clean_text(w, REASON_LIMIT) for w in warnings[:10]]
    return info


def check_bot_class(bot_class: type[Any], settings: Settings) -> dict[str, Any]:
    """The conformance match for a hosted bot, played in-process; its info if it passes."""
    from sdk import admission
    from sdk.referee import LocalPlayer

    info = class_info(bot_class)
    match = admission.MatchCheck(settings.decision_deadline_ms, settings.time_bank_ms, hands=CHECK_HANDS)
    where = f"hosted bot {info['name']!r}"
    try:
        admission.conformance_match(LocalPlayer(bot_class), info["name"], match, where)
    except admission.AdmissionError as exc:
        raise refusal(exc) from None
    return info


def refusal(exc: Any) -> BotCheckFailedError:
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
    if isinstance(details.get("retried_timeout"), str):
        details["retried_timeout"] = clean_text(details["retried_timeout"], REASON_LIMIT)
    if isinstance(details.get("faults"), list):
        details["faults"] = [
            {**f, "reason": clean_text(f.get("reason", ""), REASON_LIMIT)} if isinstance(f, dict) else f
            for f in details["faults"]
        ]
    return kind(message, details=details)


def _protocol_check(
    dial: str, address: str, settings: Settings, where: str, budget: CheckBudget, box: Sandbox | None
) -> list[str]:
    """The SDK's protocol check (``tonk check``: every rule variant and 2 to 6 seats, crafted
    rare positions, determinism) at the arena's deadline; any fault refuses the bot. Returns
    its warnings (nondeterminism included: legal play, so it is reported, not refused).
    ``box``: the bot's sandbox, whose CPU clock then times it (see :func:`check_served_bot`)."""
    try:
        from sdk.conformance import CheckConfig, ConformanceError, check_player
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
        if box is None:
            checked = run_check(dial, config)  # the checked IP, not the name (see check_served_bot)
        else:
            from arena.sandbox.clock import CpuTimedPlayer

            player = CpuTimedPlayer(box)
            try:
                with budget.cutting(player.close):
                    checked = check_player(player, config, address)
            finally:
                player.close()
    except ConformanceError as exc:
        raise BotCheckFailedError(f"{where} could not be checked: {exc}") from None
    if checked.time_limit_hit:
        raise budget.exceeded()
    command = f"tonk check {address} --deadline-ms {config.deadline_ms} --hands {config.hands}"
    return judge_protocol_report(checked.to_json(), where, command + f" --seed {config.seed}")


def judge_protocol_report(report: Mapping[str, Any], where: str, command: str | None = None) -> list[str]:
    """The verdict on a protocol check's report (sdk.conformance ``to_json``): any fault or
    problem refuses the bot, with the first in the message and up to 20 of each in the
    details, every text of the bot's cleaned and bounded; else its warnings (nondeterminism
    included: legal play, so it is reported, not refused). ``command`` reproduces the check."""
    faults, problems = list(report["faults"]), list(report["problems"])
    if faults or problems:
        if faults:
            first = faults[0]
            what = f"in {first['scenario']!r}: {first['kind']}: {first['reason']}"
        else:
            what = problems[0]
        details: dict[str, Any] = {
            "faults": [{**f, "reason": clean_text(f.get("reason", ""), REASON_LIMIT)} for f in faults[:20]],
            "problems": [clean_text(p, REASON_LIMIT) for p in problems[:20]],
        }
        if command is not None:
            details["check"] = command
        raise ConformanceFailedError(
            f"{where} failed the protocol check {clean_text(what, REASON_LIMIT)}", details=details
        )
    return [str(w) for w in report["warnings"]] + [f"nondeterministic: {n}" for n in report["nondeterminism"]]


class CheckBudget:
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


def class_info(bot_class: type[Any]) -> dict[str, Any]:
    from sdk.protocol import PROTOCOL_VERSION

    return {
        "name": clean_text(bot_class.name, NAME_LIMIT),
        "version": clean_text(bot_class.version, NAME_LIMIT),
        "author": clean_text(bot_class.author, NAME_LIMIT),
        "protocol_version": PROTOCOL_VERSION,
        "language": "python",
        "max_concurrent_matches": max(0, int(getattr(bot_class, "max_concurrent_matches", 0))),
    }
