"""The admission checks: what an arena verifies before it accepts a bot at ``HOST:PORT``.

One implementation for both sides, so a bot that passes ``tonk check`` is accepted by an
arena that allows its address, and both say the same thing when it is not:

1. **health**: the standard gRPC health service (``grpc.health.v1.Health/Check``) answers
   SERVING for the empty service name ``""`` (the server as a whole);
2. **GetInfo**: ``tonk.v1.BotService/GetInfo`` answers with a non-empty ``name`` and
   ``protocol_version`` equal to ``"tonk.v1"`` (``version``, ``author`` and ``language`` are
   shown to people, each cut to 200 characters);
3. **a short match** against the house ``random`` bot under the real referee, at the arena's
   deadlines, with no fault allowed (the arena picks a fresh seed; ``tonk check`` a fixed one);
4. **the protocol check** of :mod:`sdk.conformance` (every rule variant, 2 to 6 seats, crafted
   positions), again with no fault allowed.

Steps 1 to 3 live here; the arena (arena/bots/registry.py) calls them and turns an
:class:`AdmissionError` into its HTTP refusal of the same ``code``; ``tonk check`` reports
them as problems. docs/protocol.md states the same requirements for bots in any language.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Final

from sdk.actions import Action
from sdk.referee import DecisionRequest, Player, PlayerWrapper

#: Seconds to wait for the health and GetInfo answers.
RPC_TIMEOUT_S: Final = 5.0
#: Hands of the match against ``random``.
MATCH_HANDS: Final = 4
#: The health service's name asked for: "" is the server as a whole.
HEALTH_SERVICE: Final = ""
#: The arena's own process late by this much around a fault: the arena was slow too, and says so.
SLOW_ARENA_MS: Final = 100
#: GetInfo fields kept (each cut to this many characters).
INFO_FIELDS: Final = ("name", "version", "author", "protocol_version", "language")
INFO_FIELD_CHARS: Final = 200


class AdmissionError(Exception):
    """The bot fails an admission check. ``code`` is the refusal code of ``tonk submit``
    (``bot_unreachable``, ``bot_unhealthy``, ``bot_check_failed``, ``conformance_failed``);
    ``details`` what the arena adds to its answer (faults, a seed to reproduce them)."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.details = details


def where(address: str) -> str:
    """How every message names the bot."""
    return f"the bot at {address!r}"


def _channel(address: str, dial: str | None, authority: str | None) -> Any:
    """A channel to ``dial`` (an IP the caller checked; default ``address`` itself), which
    presents ``authority`` as the host it asks for: an arena dials the resolution its address
    check passed, never the name again (a name could be rebound to an internal host)."""
    import grpc

    options = [] if authority is None else [("grpc.default_authority", authority)]
    return grpc.insecure_channel(dial or address, options=options)


def check_health(
    address: str, timeout_s: float = RPC_TIMEOUT_S, *, dial: str | None = None, authority: str | None = None
) -> None:
    """Step 1: raises AdmissionError unless the health service answers SERVING."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    bot = where(address)
    with _channel(address, dial, authority) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=HEALTH_SERVICE), timeout=timeout_s
            )
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise AdmissionError(
                    "bot_unreachable",
                    f"could not reach {bot}: {rpc_text(exc)} (is it running, and listening on that "
                    "address? `tonk serve` listens on 127.0.0.1 unless given --host)",
                ) from None
            if code == grpc.StatusCode.UNIMPLEMENTED:
                raise AdmissionError(
                    "bot_unhealthy",
                    f"{bot} does not serve the standard gRPC health service (grpc.health.v1.Health); "
                    "`tonk serve` and sdk.serve() provide it, other languages add their gRPC "
                    "library's health service (docs/protocol.md)",
                ) from None
            raise AdmissionError("bot_unhealthy", f"{bot} failed its health check: {rpc_text(exc)}") from None
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        raise AdmissionError(
            "bot_unhealthy",
            f"{bot} reports {status}, not SERVING, on its health service (service name {HEALTH_SERVICE!r})",
        )


def fetch_info(
    address: str, timeout_s: float = RPC_TIMEOUT_S, *, dial: str | None = None, authority: str | None = None
) -> dict[str, str]:
    """Step 2: the bot's GetInfo answer, checked; raises AdmissionError. Holds the INFO_FIELDS,
    the ``max_concurrent_matches`` it declares (as text, "0" when unset) and, when the bot
    returned one, its ``claim`` code (docs/protocol.md, claiming an address)."""
    import grpc

    from sdk.protocol import bot_pb2, bot_pb2_grpc

    with _channel(address, dial, authority) as channel:
        try:
            reply = bot_pb2_grpc.BotServiceStub(channel).GetInfo(bot_pb2.GetInfoRequest(), timeout=timeout_s)
        except grpc.RpcError as exc:
            raise AdmissionError(
                "bot_check_failed", f"{where(address)} did not answer GetInfo: {rpc_text(exc)}"
            ) from None
    info = {name: str(getattr(reply, name))[:INFO_FIELD_CHARS] for name in INFO_FIELDS}
    check_info(info, address)
    if reply.claim:
        info["claim"] = reply.claim[:INFO_FIELD_CHARS]
    info["max_concurrent_matches"] = str(max(0, reply.max_concurrent_matches))
    return info


def check_info(info: dict[str, str], address: str) -> None:
    from sdk.protocol import PROTOCOL_VERSION

    if not info["name"].strip():
        raise AdmissionError("bot_check_failed", f"{where(address)} gave no name in its GetInfo reply")
    if info["protocol_version"] != PROTOCOL_VERSION:
        raise AdmissionError(
            "bot_check_failed",
            f"{where(address)} speaks protocol {info['protocol_version']!r}; "
            f"this arena speaks {PROTOCOL_VERSION!r}",
        )


@dataclass(frozen=True)
class MatchCheck:
    """Step 3's settings: the arena's deadlines and, for ``tonk check``, a fixed seed."""

    deadline_ms: int = 1000
    time_bank_ms: int = 5000
    seed: int | None = None  # None: a fresh one per attempt
    hands: int = MATCH_HANDS


def conformance_match(player: Any, name: str, check: MatchCheck, bot: str) -> None:
    """Step 3: a few hands against ``random`` under the real referee; the first fault of the
    bot (seat 0) raises AdmissionError. ``bot`` names it in the message (:func:`where`).

    A timeout is played again once (a fresh match; the same seed when ``check.seed`` is
    fixed): on a loaded machine a fast bot can miss one deadline, and refusing it for that
    refused bots a plain retry accepted. A refusal says how late the checking process itself
    was around the fault (sdk.clock's sampler), so a slow arena is told from a slow bot."""
    from sdk.clock import sampler
    from sdk.dealing import new_seed
    from sdk.players import load_bot_class
    from sdk.referee import FaultKind, LocalPlayer, RefereeConfig, play_match

    config = RefereeConfig(decision_deadline_ms=check.deadline_ms, time_bank_ms=check.time_bank_ms,
                           max_faults=1)  # fmt: skip
    counted = CountingPlayer(player)
    seed = new_seed() if check.seed is None else check.seed
    lag = sampler()  # started before the match, so that it has samples of it
    retried: str | None = None  # the timeout that was played again
    # A hand can end at the deal (TONK) before the bot acts: play on until it has acted.
    attempt = 0
    while attempt < 3:
        started = time.perf_counter_ns()
        result = play_match(
            [counted, LocalPlayer(load_bot_class("random"))],
            seed,
            check.hands,
            match_id=f"conformance-{seed:x}",
            names=[name or "candidate", "random"],
            config=config,
        )
        faults = [f for f in result.faults if f.seat == 0]
        if faults:
            first = faults[0]
            lag_ms = lag.worst_ns(started) / 1e6
            if first.kind is FaultKind.TIMEOUT and retried is None:
                retried = f"{first.reason} (the arena's own process up to {lag_ms:.0f} ms late)"
                seed = new_seed() if check.seed is None else check.seed
                continue
            when = f"hand {first.hand_index}, decision {first.decision}"
            if first.decision < 0:
                when = "starting the match"
            again = f"; its match was played again after a timeout ({retried})" if retried else ""
            raise AdmissionError(
                "conformance_failed",
                f"{bot} faulted in its conformance match against 'random' (seed {seed}, {when}): "
                f"{first.kind.value}: {first.reason}{again}; {arena_lag_note(lag_ms)}",
                details={"seed": seed, "hands": check.hands, "faults": [f.to_json() for f in faults],
                         "arena_lag_ms": round(lag_ms, 1), "retried_timeout": retried},
            )  # fmt: skip
        if counted.decisions:
            return
        attempt += 1
        seed = new_seed() if check.seed is None else check.seed + attempt
    raise AdmissionError("conformance_failed", f"{bot} was never asked to act in its conformance match; "
                         "try again")  # fmt: skip


def arena_lag_note(lag_ms: float) -> str:
    """Whether the checking process itself was slow around a fault, in words."""
    if lag_ms < SLOW_ARENA_MS:
        return f"the arena itself was not slow (its own process at most {lag_ms:.0f} ms late)"
    load = ""
    if hasattr(os, "getloadavg"):
        load = f", load average {os.getloadavg()[0]:.1f} on {os.cpu_count() or 1} CPUs"
    return (f"the arena itself was slow meanwhile (its own process up to {lag_ms:.0f} ms late{load}): "
            "its load, not the bot, may be the cause; try again")  # fmt: skip


class CountingPlayer(PlayerWrapper):
    """Wraps a player, counting its decisions."""

    def __init__(self, inner: Player):
        super().__init__(inner)
        self.decisions = 0

    def act(self, request: DecisionRequest) -> Action | int:
        self.decisions += 1
        return self.inner.act(request)


def rpc_text(exc: Exception) -> str:
    import grpc

    if isinstance(exc, grpc.Call):
        return f"{exc.code().name}: {exc.details()}"
    return str(exc)


__all__ = [
    "HEALTH_SERVICE",
    "MATCH_HANDS",
    "AdmissionError",
    "MatchCheck",
    "arena_lag_note",
    "check_health",
    "check_info",
    "conformance_match",
    "fetch_info",
    "where",
]
