"""The seat player of an uploaded bot: its sandbox, started by the worker, and a clock that
charges the bot the CPU time its processes used.

**Memory.** By default every match starts the bot fresh (``TONK_SANDBOX_MEMORY=match``), so
nothing of one seat rotation of a duplicate deal can be remembered in the next: the
advantage a memory bot draws from seeing a deal again is gone by construction
(docs/arena.md). ``deal`` keeps one sandbox for the matches of one deal played on this worker
at once or in quick succession (it can remember within the deal: the rotations' fairness
then rests on the fair-play check); ``worker`` keeps one per bot version per worker process
(cheapest; the bot may remember everything it saw on that worker). A kept sandbox ends when
no match has used it for ``IDLE_S``.

**Limits.** A fault of a bot that ran into one of its sandbox's limits (memory, processes,
a disk cap, its CPU seconds) leads with that limit (arena/sandbox/causes.py), as does the end
of what it printed: "unreachable" alone would leave its owner guessing.

**Clock.** A decision is charged the CPU time of all the sandbox's processes, with a
wall-clock ceiling the host's load cannot reach (arena/sandbox/clock.py, the clock its
admission check uses too), so a loaded worker machine never costs a hosted bot a decision.
In a shared sandbox (deal, worker) the CPU of concurrent matches is charged together: the
clock is exact only per match.

**Its own clock only.** Between its turns the bot's processes do not run at all (frozen:
arena/sandbox/freeze.py), so no thread or child of it thinks while the other seats play (a
turn is its run of consecutive calls, as the referee tells it: :meth:`HostedPlayer.turns`;
outside a referee, each call is one);
what it uses from launch to serving is charged to its start-up budget
(``Limits.start_cpu_s``), and a bot over it faults naming that limit.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from arena.sandbox.causes import Counters
from arena.sandbox.clock import CpuClock, box_player
from arena.sandbox.launch import Launch
from arena.sandbox.limits import MEMORY_SCOPES as MEMORY_SCOPES  # re-exported
from arena.sandbox.limits import Limits
from arena.sandbox.limits import memory_scope as memory_scope  # re-exported
from arena.sandbox.runner import Sandbox, SandboxStartError
from arena.sandbox.spares import SPARES
from sdk.actions import Action
from sdk.bot import DealSummary, HandResult, MatchInfo, MatchSummary
from sdk.grpc_player import GrpcPlayer
from sdk.referee import DecisionRequest, FaultKind, PlayerFaultError

#: How long a kept (deal or worker) sandbox outlives its last match.
IDLE_S: Final = 60.0
#: How long a fault waits for a bot that lost its connection to be seen to end, so the
#: signal that ended it can name the limit (a live bot is not waited for: it is not ending).
SETTLE_S: Final = 1.0
#: Bound of a fault's reason (the store cuts at 2,000: the cause leads, so it is kept).
REASON_LIMIT: Final = 1000


@dataclass(frozen=True, slots=True)
class SeatOutput:
    """What a hosted bot printed during a match (bounded), for its owner."""

    text: str
    total_bytes: int
    truncated: bool


class _Kept:
    def __init__(self, box: Sandbox):
        self.box = box
        self.users = 0
        self.idle_since = time.monotonic()


class SandboxPool:
    """Sandboxes kept across matches (deal and worker scopes), one per key, closed when idle."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[Hashable, _Kept] = {}

    def acquire(self, key: Hashable, start: Callable[[], Sandbox]) -> Sandbox:
        with self._lock:
            self._close_idle()
            kept = self._kept.get(key)
            if kept is not None and kept.box.process is not None and kept.box.process.poll() is None:
                kept.users += 1
                return kept.box
        box = start()  # outside the lock: a start takes a fraction of a second
        with self._lock:
            self._kept[key] = kept = _Kept(box)
            kept.users += 1
        return box

    def release(self, key: Hashable) -> None:
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                kept.users -= 1
                kept.idle_since = time.monotonic()

    def _close_idle(self) -> None:
        now = time.monotonic()
        for key, kept in list(self._kept.items()):
            if kept.users <= 0 and now - kept.idle_since > IDLE_S:
                del self._kept[key]
                kept.box.close()

    def close_all(self) -> None:
        with self._lock:
            kept, self._kept = list(self._kept.values()), {}
        for k in kept:
            k.box.close()


POOL = SandboxPool()


class HostedPlayer:
    """A seat played by an uploaded bot in a sandbox (see the module's docstring).

    ``bundle`` gives the built bot's folder on this worker (fetched from the store and cached
    on first use). The sandbox starts at the player's first call; a bot that does not start
    faults as UNREACHABLE with what it printed, like a dialled bot that is down.
    """

    def __init__(
        self,
        name: str,
        bundle: Callable[[], Path],
        launch: Launch,
        *,
        limits: Limits | None = None,
        scope: str = "match",
        scope_key: Hashable = None,
    ):
        self.name = name
        self._bundle = bundle
        self.launch = launch
        self.limits = limits or Limits.from_env()
        self.scope = scope
        self._key = scope_key
        self.box: Sandbox | None = None
        self._grpc: GrpcPlayer | None = None
        self._clock: CpuClock | None = None
        self._failed: str | None = None
        self.last_charged_us: int | None = None
        self._output: SeatOutput | None = None
        self._since = Counters()  # the box's limit counters when this match took it
        self.limit_hit: str | None = None  # the limits it ran into (arena/sandbox/causes.py)
        self._told = 0  # inside a referee's turns(): it says when this seat's turn is over
        self._held = False  # the sandbox is kept awake until the turn is over

    def prepare(self) -> None:
        """Start the sandbox now (before the referee's clock runs: its start-up is not the
        bot's StartMatch time); a failure is kept for the seat's first call."""
        with contextlib.suppress(PlayerFaultError):
            self._player()

    def _player(self) -> GrpcPlayer:
        if self._grpc is not None:
            return self._grpc
        if self._failed is not None:
            raise PlayerFaultError(FaultKind.UNREACHABLE, self._failed)
        try:
            bundle = self._bundle()

            def start() -> Sandbox:
                box = Sandbox(bundle, self.launch, limits=self.limits).start()
                box.freeze_between_calls()  # charges its start-up budget (closes it if over)
                return box

            # A match's own sandbox is a spare started ahead of it (arena/sandbox/spares.py).
            if self.scope == "match":
                box = SPARES.take(bundle, self.launch, self.limits)
                # A spare is frozen once it serves (spares.fresh); a box from elsewhere is here,
                # its start-up CPU charged (closed if over its budget).
                box.freeze_between_calls()
                self.box = box
            else:
                self.box = POOL.acquire(self._key, start)
        except SandboxStartError as exc:
            self.limit_hit = exc.cause
            lead = f"{exc.cause}; " if exc.cause else ""
            self._failed = f"{lead}the hosted bot did not start: {exc.detail or exc}"[:REASON_LIMIT]
            raise PlayerFaultError(FaultKind.UNREACHABLE, self._failed) from None
        except Exception as exc:  # the bot's failure to start is its seat's fault, not the match's
            self._failed = f"the hosted bot did not start: {exc}"[:REASON_LIMIT]
            raise PlayerFaultError(FaultKind.UNREACHABLE, self._failed) from None
        self._since = self.box.counters()
        self._grpc = box_player(self.box)
        self._grpc.address = f"hosted {self.name}"
        self._clock = CpuClock(self.box)
        return self._grpc

    # -- the Player protocol ------------------------------------------------------------------

    def _awake(self) -> contextlib.AbstractContextManager[None]:
        """The sandbox runs for the length of one call (arena/sandbox/freeze.py), or, inside a
        referee that says when this seat's turn is over, from its first call of a turn to
        :meth:`turn_over`: the calls of one turn (a draw and its discard, a notice and the
        next hand's first decision) are not each paid a freeze and a thaw."""
        freezer = self.box.freezer if self.box is not None else None
        if freezer is None or self._held:
            return contextlib.nullcontext()
        if self._told > 0:
            freezer.hold()
            self._held = True
            return contextlib.nullcontext()
        return freezer.awake()

    @contextlib.contextmanager
    def turns(self) -> Iterator[None]:
        """The referee tells this seat when each of its turns is over (sdk.referee.Player)."""
        self._told += 1
        try:
            yield
        finally:
            self._told -= 1
            self.turn_over()

    def turn_over(self) -> None:
        """Another seat plays next (or none does): the sandbox stops until its next call."""
        if self._held:
            self._held = False
            freezer = self.box.freezer if self.box is not None else None
            if freezer is not None:
                freezer.release()

    def describe(self) -> dict[str, str]:
        try:
            player = self._player()
            with self._awake():
                return player.describe()
        except PlayerFaultError:
            return {"name": self.name, "version": "", "author": "", "protocol_version": ""}

    def _named(self, exc: PlayerFaultError) -> PlayerFaultError:
        """``exc`` with the limit the bot ran into leading its reason, if it ran into one."""
        box = self.box
        if box is None:
            return exc
        settle = SETTLE_S if exc.kind is FaultKind.UNREACHABLE else 0.0
        said = exc.reason if exc.kind is FaultKind.CRASH else ""  # its runtime's error, if it sent one
        cause = box.limit_hit(self._since, settle_s=settle, said=said)
        if cause is None:
            return exc
        self.limit_hit = cause
        return PlayerFaultError(exc.kind, f"{cause}; {exc.reason}"[:REASON_LIMIT])

    def _notify(self, call: Callable[[GrpcPlayer], None]) -> None:
        """A lifecycle call to the bot; a fault names the limit it ran into, as in :meth:`act`."""
        player = self._player()
        try:
            with self._awake():
                call(player)
        except PlayerFaultError as exc:
            raise self._named(exc) from None

    def match_start(self, info: MatchInfo) -> None:
        self._notify(lambda player: player.match_start(info))

    def act(self, request: DecisionRequest) -> Action | int:
        player = self._player()
        assert self._clock is not None
        self.last_charged_us = None
        with self._awake():
            try:
                return self._clock.act(player, request)
            except PlayerFaultError as exc:
                raise self._named(exc) from None
            finally:
                self.last_charged_us = self._clock.last_charged_us

    def hand_end(self, result: HandResult) -> None:
        self._notify(lambda player: player.hand_end(result))

    def match_end(self, summary: MatchSummary) -> None:
        self._notify(lambda player: player.match_end(summary))

    def deal_end(self, deal: DealSummary) -> None:
        self._notify(lambda player: player.deal_end(deal))

    def close(self) -> None:
        self.turn_over()
        if self._grpc is not None:
            self._grpc.close()
        box = self.box
        if box is None:
            return
        # Read before the box is closed (its control group and mounts go with it), and said at
        # the end of its log, where the bot's own words stopped.
        self.limit_hit = box.limit_hit(self._since) or self.limit_hit
        if self.scope == "match":
            box.close()
        else:  # kept: this match's share of the output is not told apart
            POOL.release(self._key)
        text = box.output()
        if self.limit_hit:
            text += f"\n[tonk arena] {self.limit_hit}\n"
        self._output = SeatOutput(text, box.output_bytes(), box.truncated())

    def output(self) -> SeatOutput | None:
        """What the bot printed, once the player is closed (None if it never started)."""
        if self._output is None and self._failed is not None:
            return SeatOutput(self._failed, len(self._failed), False)
        return self._output
