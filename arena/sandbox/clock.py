"""The clock of a bot in a sandbox: a decision is charged the CPU time (user and system) of all
the sandbox's processes between sending the request and receiving the reply, as the kernel
counts it (arena/sandbox/cgroups.py), so a loaded machine never costs the bot a decision.

One clock for every place the arena times a sandboxed bot: its matches (arena/play/hosted.py)
and its admission check (arena/bots/uploaded.py). An upload checked on the wall clock was
refused on a loaded machine for time its matches would never charge it (a decision the host
held up 1.2 s beside busy loops, in ``tests/system/test_hosted.py`` under
``make test-under-load``).

A wall-clock ceiling of ``WALL_FACTOR`` times the deadline (plus ``WALL_EXTRA_S``) cuts off a
bot that sleeps or blocks instead of thinking; it does not count the time the sandbox's
threads waited for a CPU (the kernel's run delay: ``Sandbox.run_delay_ns``), so the host's
load cannot reach it, and only ``BACKSTOP_FACTOR`` times the ceiling of plain wall time is a
hard stop (the transport's timeout). CPU past the ceiling is cut off too.
"""

from __future__ import annotations

from typing import Final

from arena.sandbox.runner import Sandbox
from sdk.actions import Action
from sdk.grpc_player import GrpcPlayer
from sdk.referee import DecisionRequest, FaultKind, PlayerFaultError, PlayerWrapper

#: The wall-clock ceiling of a decision, as a multiple of its deadline (plus ``WALL_EXTRA_S``).
WALL_FACTOR: Final = 5
WALL_EXTRA_S: Final = 1.0
#: The hard stop of a decision in plain wall time, as a multiple of its ceiling (reached only
#: where the host leaves the bot under a tenth of the CPU it needs).
BACKSTOP_FACTOR: Final = 10

#: Leads the reason of a decision the watch cut off (told apart from the transport's backstop).
_CUT: Final = "cut off: "


def wall_ceiling_s(deadline_ms: int) -> float:
    return WALL_FACTOR * max(deadline_ms, 1) / 1000 + WALL_EXTRA_S


def backstop_s(deadline_ms: int) -> float:
    return BACKSTOP_FACTOR * wall_ceiling_s(deadline_ms)


class CpuWatch:
    """Watches one Decide in flight (sdk.grpc_player.GrpcPlayer.watch): cut off once the
    call's wall time, less what the host's load took from the bot, passes the ceiling, or
    once the sandbox's CPU does (threads waiting for a CPU together could otherwise hold the
    first off until the backstop)."""

    def __init__(self, box: Sandbox, deadline_ms: int, cpu_before: int):
        self.box = box
        self.deadline_ms = deadline_ms
        self.cpu_before = cpu_before
        # Read per call, though it costs the worker about half a millisecond: read only at
        # the first look past the deadline, what the load took before then counted against
        # the bot, and a thinker near its budget beside busy loops was cut off (the fresh-clone
        # run of 50d8cec, test_a_hosted_bot_is_charged_its_cpu_time_not_the_machines_load).
        self.delay_before = box.run_delay_ns()

    def __call__(self, elapsed_s: float) -> str | None:
        used_ms = (self.box.cpu_ns() - self.cpu_before) / 1e6
        ceiling = wall_ceiling_s(self.deadline_ms)
        if used_ms > ceiling * 1000:
            return f"{_CUT}it used {used_ms:.0f} ms of CPU, past the ceiling of {ceiling:g} s"
        if elapsed_s <= ceiling:
            return None
        waited_s = max(0, self.box.run_delay_ns() - self.delay_before) / 1e9
        if elapsed_s - waited_s <= ceiling:
            return None
        return (
            f"{_CUT}no reply within the wall-clock ceiling of {ceiling:g} s, not counting the "
            f"{waited_s:.1f} s it waited for a CPU (a hosted bot is charged CPU time; "
            f"it used {used_ms:.0f} ms)"
        )


def box_player(box: Sandbox) -> GrpcPlayer:
    """A player of the bot served in ``box``, whose transport waits out the backstop (the
    clock, not the transport, cuts a decision off)."""
    return GrpcPlayer(box.address, transport_timeout_s=backstop_s)


class CpuClock:
    """Charges the decisions of the bot in ``box`` its processes' CPU time."""

    def __init__(self, box: Sandbox):
        self.box = box
        #: What the last decision was charged, in µs (the referee charges this).
        self.last_charged_us: int | None = None

    def act(self, player: GrpcPlayer, request: DecisionRequest) -> Action | int:
        """``player.act(request)``, watched and charged by the box's CPU; a transport timeout
        is said in the clock's words."""
        box = self.box
        self.last_charged_us = None
        cpu_before = box.cpu_ns()
        player.watch = CpuWatch(box, request.deadline_ms, cpu_before)
        player.watch_after_s = request.deadline_ms / 1000
        try:
            return player.act(request)
        except PlayerFaultError as exc:
            if exc.kind is FaultKind.TIMEOUT and "Decide: " + _CUT not in exc.reason:
                raise PlayerFaultError(
                    FaultKind.TIMEOUT,
                    f"no reply within {backstop_s(request.deadline_ms):g} s of wall-clock time "
                    "(a hosted bot is charged CPU time; "
                    f"it used {(box.cpu_ns() - cpu_before) / 1e6:.0f} ms)",
                ) from None
            raise
        finally:
            self.last_charged_us = max(0, box.cpu_ns() - cpu_before) // 1000


class CpuTimedPlayer(PlayerWrapper):
    """A player of the bot served in ``box`` on its CPU clock, for a referee outside a match
    (the admission check's): the same clock its matches charge it by."""

    def __init__(self, box: Sandbox):
        self.grpc = box_player(box)
        super().__init__(self.grpc)
        self.clock = CpuClock(box)

    @property
    def address(self) -> str:
        return self.grpc.address

    @property
    def last_charged_us(self) -> int | None:
        return self.clock.last_charged_us

    def act(self, request: DecisionRequest) -> Action | int:
        return self.clock.act(self.grpc, request)


__all__ = [
    "BACKSTOP_FACTOR",
    "WALL_EXTRA_S",
    "WALL_FACTOR",
    "CpuClock",
    "CpuTimedPlayer",
    "CpuWatch",
    "backstop_s",
    "box_player",
    "wall_ceiling_s",
]
