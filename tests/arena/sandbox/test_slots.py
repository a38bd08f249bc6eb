"""Sandbox slots (arena/sandbox/slots.py): a machine runs at most TONK_SANDBOX_SLOTS hosted bots
at once, whatever capacity they declare, across threads and processes; a match takes its
seats' slots all at once; a killed holder's slots come back."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers.net import wait_for

from arena.play.plan import MatchPlan, SeatPlan, run_match
from arena.processes import spawn
from arena.sandbox.slots import sandbox_slots, slot_count
from bots.greedy import GreedyBot
from sdk.referee import LocalPlayer, RefereeConfig
from sdk.rules import STANDARD


def test_slot_count_reads_the_setting_and_refuses_nonsense() -> None:
    assert slot_count({"TONK_SANDBOX_SLOTS": "3"}) == 3
    assert slot_count({}) >= 4
    for bad in ("0", "-2", "many"):
        with pytest.raises(ValueError, match=f"TONK_SANDBOX_SLOTS.*{bad!r}"):
            slot_count({"TONK_SANDBOX_SLOTS": bad})


def test_a_third_holder_waits_for_one_of_two_slots(tmp_path: Path) -> None:
    inside = threading.Event()
    with sandbox_slots(tmp_path, 1, 2) as a, sandbox_slots(tmp_path, 1, 2) as b:
        assert (a, b) == (1, 1)

        def third() -> None:
            with sandbox_slots(tmp_path, 1, 2):
                inside.set()

        waiter = threading.Thread(target=third)
        waiter.start()
        # Both slots are held: the third cannot be inside (it would be at once if slots did not bind).
        assert not inside.wait(0.5)
    waiter.join(30)
    assert inside.is_set()


def test_a_match_takes_all_its_slots_or_none(tmp_path: Path) -> None:
    """Two seats wanted with one slot free: nothing stays taken while it waits (a half-held
    match would block another match that could otherwise play)."""
    got: list[int] = []

    def pair() -> None:
        with sandbox_slots(tmp_path, 2, 2, patience_s=60) as n:
            got.append(n)

    with sandbox_slots(tmp_path, 1, 2):
        waiter = threading.Thread(target=pair)
        waiter.start()
        # The waiting pair does not sit on the free slot: a single-seat taker gets it.
        with sandbox_slots(tmp_path, 1, 2, patience_s=5) as single:
            assert single == 1
    waiter.join(60)
    assert got == [2]  # and once both are free, the pair takes both


def test_a_killed_holder_gives_its_slot_back(tmp_path: Path) -> None:
    code = (
        "import sys, time, pathlib\n"
        "from arena.sandbox.slots import sandbox_slots\n"
        "with sandbox_slots(pathlib.Path(sys.argv[1]), 1, 1):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(600)\n"
    )
    holder = spawn([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with sandbox_slots(tmp_path, 1, 1, patience_s=0.3) as n:
            assert n == 0  # the other process holds the only slot
        holder.kill()
        holder.wait(10)
        with sandbox_slots(tmp_path, 1, 1, patience_s=30) as n:
            assert n == 1  # the kernel let go of it with the process
    finally:
        holder.kill()
        holder.wait(10)


class _Prepared(LocalPlayer):
    """A seat that, like a hosted one, has a ``prepare`` (so run_match takes a slot for it),
    and counts how many such seats play at once."""

    lock = threading.Lock()
    playing = 0
    most = 0

    def prepare(self) -> None:
        with self.lock:
            type(self).playing += 1
            type(self).most = max(type(self).most, type(self).playing)

    def close(self) -> None:
        with self.lock:
            type(self).playing -= 1
        super().close()


def _plan(n: int) -> MatchPlan:
    seats = tuple(SeatPlan(s, s, f"seat{s}", None, "greedy") for s in (1, 2))
    config = RefereeConfig(decision_deadline_ms=5000)
    return MatchPlan(n, 1, f"slots-{n}", 1000 + n, 8, STANDARD, config, seats)


def test_hosted_seats_in_flight_never_exceed_the_slots(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("TONK_SANDBOX_DIR", str(tmp_path))
    monkeypatch.setenv("TONK_SANDBOX_SLOTS", "2")
    _Prepared.playing = _Prepared.most = 0
    everyone_started = threading.Barrier(6, timeout=60)
    errors: list[BaseException] = []

    def one(n: int) -> None:
        try:
            everyone_started.wait()
            run_match(_plan(n), player_factory=lambda seat: _Prepared(GreedyBot))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    wait_for("six matches to end", lambda: not any(t.is_alive() for t in threads), 300)
    assert not errors, errors
    assert _Prepared.playing == 0
    # Six two-seat matches at once, two slots: one match at a time (without slots: up to 12).
    assert _Prepared.most == 2
