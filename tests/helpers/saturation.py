"""A referee process saturated by CPU-burning threads, and a short match played in it: the
fair-clock tests (tests/sdk/test_fair_clock.py for a dialled bot, tests/system/test_connected_processes.py
for a connected one) check that the bot is charged its own time, not the process's lag.
The bot plays from a process of its own (as the arena's bots do): served in the saturated
process, its own handler would wait for the GIL mid-call, and that wait is rightly its time."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from arena.processes import spawn
from bots.random_bot import RandomBot
from sdk.observation import Observation
from sdk.referee import Fault, LocalPlayer, Player, RefereeConfig, play_match


class Quick(RandomBot):
    """Thinks 5 ms a decision (time.sleep), served from its own process
    (``sdk.fresh_process.serve_in_fresh_process("helpers.saturation:Quick")``)."""

    def act(self, obs: Observation) -> object:  # type: ignore[override]
        time.sleep(0.005)
        return super().act(obs)


@contextmanager
def saturated() -> Iterator[None]:
    """Four threads burning CPU in pure Python (on a 2-core machine): every other thread
    of this process waits for the GIL (5 ms a turn, each) whenever it comes back from C."""
    stop = threading.Event()

    def burn() -> None:
        x = 0
        while not stop.is_set():
            for i in range(2000):
                x ^= i * i

    burners = [threading.Thread(target=burn, daemon=True) for _ in range(4)]
    for thread in burners:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in burners:
            thread.join()


def play_seat0(player: Player) -> tuple[list[Fault], list[int]]:
    """Four hands of ``player`` (seat 0) against a random bot, 100 ms a decision and no time
    bank: seat 0's faults and the µs charged for each of its decisions."""
    result = play_match(
        [player, LocalPlayer(RandomBot)],
        seed=4242,
        hands=4,
        config=RefereeConfig(decision_deadline_ms=100, time_bank_ms=0, max_faults=100),
    )
    latencies = [us for log in result.hands for (seat, _), us in zip(log.record.actions, log.latencies_us,
                                                                       strict=True) if seat == 0]  # fmt: skip
    return [f for f in result.faults if f.seat == 0], latencies


Run = tuple[list[Fault], list[int]]  # seat 0's faults and the µs charged for each decision

#: A decision charged this long is the referee's lag, not a 5 ms bot's (the old clock charged
#: up to 300 ms here).
FAIR_US = 60_000


def fair(run: Run) -> bool:
    faults, latencies = run
    return bool(latencies) and faults == [] and max(latencies) < FAIR_US


def first_fair(play: Callable[[], Run], tries: int = 3) -> list[Run]:
    """Up to ``tries`` saturated matches, until one shows a fair clock; every run played, the
    last one the verdict. The saturated referee's lag is in every run, so a clock that charges
    it fails them all; what a single run could also catch is the machine's own load (the
    other tests of a parallel suite keeping both cores busy) holding the bot's process or the
    network past 100 ms once, which is not what these tests judge."""
    runs: list[Run] = []
    for _ in range(tries):
        runs.append(play())
        if fair(runs[-1]):
            break
    return runs


@contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """``count`` busy processes (``make test-under-load``'s loops), each in a session of its own:
    the kernel's autogroup scheduling shares the CPU between sessions first (a sandbox has its
    own), so busy processes sharing one session would take only one session's share. Started
    with :func:`arena.processes.spawn`, so none outlives the test however it ends."""
    procs = [
        spawn([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL, start_new_session=True)
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
