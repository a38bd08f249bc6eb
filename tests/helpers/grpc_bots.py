"""Bots that break the protocol in each way a referee must survive, served in-process over
real gRPC on loopback (``serving``), and a raw server that answers with any bytes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import ClassVar

import grpc

from bots.random_bot import RandomBot
from sdk.actions import Action, Discard
from sdk.bot import Bot, HandResult, MatchInfo
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.observation import Observation, observe
from sdk.protocol import SERVICE_NAME
from sdk.referee import (
    DecisionRequest,
)
from sdk.rules import Rules
from sdk.server import RunningServer, start_server

HANG = threading.Event()  # set at teardown: a hanging bot's thread must end with the tests


class CrashBot(Bot):
    name = "crash"

    def act(self, obs: Observation) -> Action | int:
        raise RuntimeError("boom in act")


class HangBot(Bot):
    name = "hang"

    def act(self, obs: Observation) -> Action | int:
        HANG.wait(30)
        return 0


class IllegalBot(Bot):
    """Discards before drawing: well-formed, against the rules."""

    name = "illegal"

    def act(self, obs: Observation) -> Action | int:
        if obs.phase == "start":
            return Discard(obs.hand[0])
        return 0


class OutOfRangeBot(Bot):
    name = "out-of-range"

    def act(self, obs: Observation) -> Action | int:
        return len(obs.legal_actions) + 5


class MalformedBot(Bot):
    """Answers with something that is no action at all."""

    name = "malformed"

    def act(self, obs: Observation) -> Action | int:
        return "draw stock"  # type: ignore[return-value]


class NondeterministicBot(Bot):
    """Plays the same match differently each time it sees it: the first legal action the
    first time, the last one the next (so the difference shows at its very first decision,
    which a clock-based choice could miss by coincidence in a short match)."""

    name = "nondeterministic"
    _seen: ClassVar[dict[str, int]] = {}
    visit = 0

    def on_match_start(self, info: MatchInfo) -> None:
        self.visit = self._seen.get(info.match_id, 0)
        self._seen[info.match_id] = self.visit + 1

    def act(self, obs: Observation) -> Action | int:
        return 0 if self.visit % 2 == 0 else len(obs.legal_actions) - 1


class HookCrashBot(RandomBot):
    """Plays fine, but its optional hooks raise."""

    name = "hook-crash"

    def on_hand_end(self, result: HandResult) -> None:
        raise ValueError("bad hook")


@contextmanager
def serving(bot: type[Bot] | Callable[[], Bot], **kwargs: object) -> Iterator[RunningServer]:
    running = start_server(bot, **kwargs)  # type: ignore[arg-type]
    try:
        yield running
    finally:
        HANG.set()
        running.stop(0)
        HANG.clear()


@contextmanager
def raw_server(methods: dict[str, Callable[[bytes, grpc.ServicerContext], bytes]]) -> Iterator[str]:
    """A server for tonk.v1.BotService that answers the named methods with raw bytes (and
    UNIMPLEMENTED for the rest): what a bot in another language might do wrong."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handlers = {name: grpc.unary_unary_rpc_method_handler(fn) for name, fn in methods.items()}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(0)


def a_decision(deadline_ms: int = 1000, match_id: str = "t") -> DecisionRequest:
    state = HandState.deal(deck_order(4, 0), 2, rules=Rules(tonk_low=0, tonk_high=200))
    obs = observe(state, state.to_act, ("a", "b"), (0, 0), 0, 1)
    return DecisionRequest(match_id, 0, f"{match_id}/0/0", obs, deadline_ms)
