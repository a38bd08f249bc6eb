"""Fast starts (arena/sandbox/spares.py): a hosted bot's match takes a fresh sandbox started
ahead of it, by default, and nothing of one match reaches the next: bench/hosted.py's
persistence probe plants files, a process, a socket and memory in one match and looks for them
in the next (and, as the probe's own check, finds them all in a sandbox kept across matches)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from helpers.bench_modules import bench_module
from helpers.paths import ROOT
from helpers.sandbox import requires_bwrap
from helpers.uploads import entry, write_bundle

from arena.play import hosted
from arena.play.hosted import POOL, HostedPlayer
from arena.sandbox import spares
from arena.sandbox.causes import PREFIX
from arena.sandbox.launch import Launch
from arena.sandbox.limits import Limits
from arena.sandbox.spares import SPARES, Spares, spare_count
from bots.random_bot import RandomBot
from sdk.referee import LocalPlayer, RefereeConfig, play_match

LIMITS = Limits(start_s=60)


def test_the_spares_setting_is_read_strictly() -> None:
    assert spare_count({}) == spares.DEFAULT_SPARES > 0  # on unless turned off
    assert spare_count({"TONK_SANDBOX_SPARES": "0"}) == 0
    assert spare_count({"TONK_SANDBOX_SPARES": " 3 "}) == 3
    for bad in ("x", "1.5", "-1", str(spares.MAX_SPARES + 1)):
        with pytest.raises(ValueError, match="TONK_SANDBOX_SPARES"):
            spare_count({"TONK_SANDBOX_SPARES": bad})


@requires_bwrap
def test_a_match_takes_a_sandbox_started_before_it_asked_by_default(tmp_path: Path) -> None:
    assert hosted.SPARES is SPARES
    bundle = write_bundle(tmp_path, "honest")
    launch = Launch("python", entry=entry("honest"))
    hits = SPARES.hits
    first = HostedPlayer("honest", lambda: bundle, launch, limits=LIMITS)
    first.prepare()
    first.close()
    SPARES.wait_started()
    asked = time.monotonic_ns()
    second = HostedPlayer("honest", lambda: bundle, launch, limits=LIMITS)
    try:
        assert second.describe()["name"] == "honest"
        assert second.box is not None and second.box is not first.box
        assert second.box.ready_ns < asked  # it served before the match asked for it
        assert SPARES.hits == hits + 1
    finally:
        second.close()
    assert first.box is not None and first.box.workdir is None  # each match's sandbox is closed


@requires_bwrap
def test_nothing_of_one_match_reaches_the_next(tmp_path: Path) -> None:
    # The probe is bench/hosted.py's (its persistence run): one bot, checked here.
    with bench_module(ROOT / "bench" / "hosted.py", "bench_hosted_probe_test") as bench:
        bundle = bench.probe_bundle(tmp_path)
        launch = Launch("python", entry=bench.PROBE_ENTRY)
        hits = SPARES.hits
        for n in range(3):
            player = HostedPlayer("probe", lambda: bundle, launch, limits=LIMITS)
            found = bench.probe_match(player, f"match-{n}")
            assert found == frozenset(), f"match {n} found {found} of an earlier match"
        assert SPARES.hits == hits + 2  # the second and third matches took spares
        # The probe sees all it planted when the sandbox is the same: it would see a leak.
        try:
            kept = [
                HostedPlayer("probe", lambda: bundle, launch, limits=LIMITS, scope="worker", scope_key="k")
                for _ in range(2)
            ]
            assert bench.probe_match(kept[0], "kept-0") == frozenset()
            assert bench.probe_match(kept[1], "kept-1") == bench.PLANTED
        finally:
            POOL.close_all()


@requires_bwrap
def test_a_bot_that_does_not_start_faults_as_before_and_no_spare_is_kept(tmp_path: Path) -> None:
    attack = 'if when == "import":\n    raise RuntimeError("will not start")'
    bundle = write_bundle(tmp_path, "broken", attack)
    launch = Launch("python", entry=entry("broken"))
    misses = SPARES.misses
    for _ in range(2):
        player = HostedPlayer("broken", lambda: bundle, launch, limits=LIMITS)
        player.prepare()
        player.close()
        output = player.output()
        assert output is not None and "the hosted bot did not start" in output.text
        assert "the bot exited with status 1" in output.text
    assert SPARES.kept() == 0 and SPARES.misses == misses  # two failed starts, nothing kept


@requires_bwrap
def test_a_spare_whose_bot_died_while_it_waited_is_replaced(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path, "honest")
    launch = Launch("python", entry=entry("honest"))
    first = HostedPlayer("honest", lambda: bundle, launch, limits=LIMITS)
    first.prepare()
    first.close()
    SPARES.wait_started()
    (spare,) = [s.future.result() for kept in SPARES._kept.values() for s in kept]
    assert spare.process is not None and spare.freezer is not None
    spare.freezer.disable()  # where it waits frozen, a bot cannot die
    os.killpg(spare.process.pid, signal.SIGKILL)
    spare.process.wait(30)
    misses = SPARES.misses
    second = HostedPlayer("honest", lambda: bundle, launch, limits=LIMITS)
    try:
        assert second.describe()["name"] == "honest"
        assert second.box is not spare and SPARES.misses == misses + 1
    finally:
        second.close()
    assert spare.workdir is None  # the dead spare was closed


FORK_BOMB = """
    if when != "decision":
        return
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.05)
"""


@requires_bwrap
def test_a_limit_hit_in_a_spare_is_named_as_before(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path, "forker", FORK_BOMB)
    launch = Launch("python", entry=entry("forker"))
    limits = Limits(processes=48, start_s=60)
    first = HostedPlayer("forker", lambda: bundle, launch, limits=limits)
    first.prepare()  # no decision: no bomb
    first.close()
    SPARES.wait_started()
    hits = SPARES.hits
    player = HostedPlayer("forker", lambda: bundle, launch, limits=limits)
    config = RefereeConfig(decision_deadline_ms=300, max_faults=3, lifecycle_deadline_ms=5000)
    try:
        result = play_match([player, LocalPlayer(RandomBot)], seed=20261207, hands=2, config=config)
    finally:
        player.close()
    assert SPARES.hits == hits + 1
    mine = [f for f in result.faults if f.seat == 0]
    assert mine and mine[0].reason.startswith(PREFIX + "process limit ("), mine
    output = player.output()
    assert output is not None and player.limit_hit and output.text.rstrip().endswith(player.limit_hit)


@requires_bwrap
def test_spares_beyond_the_capacity_are_closed_least_recently_used_first(tmp_path: Path) -> None:
    pool = Spares(capacity=1)
    try:
        for name in ("one", "two"):
            bundle = write_bundle(tmp_path, name)
            pool.take(bundle, Launch("python", entry=entry(name)), LIMITS).close()
            pool.wait_started()
            if name == "one":
                (older,) = [s.future.result() for kept in pool._kept.values() for s in kept]
        assert pool.kept() == 1
        assert older.workdir is None and older.process is not None and older.process.poll() is not None
    finally:
        pool.close_all()


@requires_bwrap
def test_with_spares_off_each_match_starts_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TONK_SANDBOX_SPARES", "0")
    bundle = write_bundle(tmp_path, "honest")
    launch = Launch("python", entry=entry("honest"))
    for _ in range(2):
        asked = time.monotonic_ns()
        player = HostedPlayer("honest", lambda: bundle, launch, limits=LIMITS)
        player.prepare()
        player.close()
        assert player.box is not None and player.box.started_ns >= asked
    assert SPARES.kept() == 0


SPINNER = """
import threading
from sdk.bot import Bot

def spin():
    while True:  # thinks on no one's clock, if it can
        pass

threading.Thread(target=spin, daemon=True).start()

class UploadedBot(Bot):
    name = "spinner"
    def act(self, obs):
        return obs.legal_actions[0]
"""


@requires_bwrap
def test_a_spare_waits_frozen_and_uses_no_cpu(tmp_path: Path) -> None:
    bundle = tmp_path / "spinner"
    (bundle / "code").mkdir(parents=True)
    (bundle / "deps").mkdir()
    (bundle / "code" / "bot_spinner.py").write_text(SPINNER)
    launch = Launch("python", entry="bot_spinner:UploadedBot")
    first = HostedPlayer("spinner", lambda: bundle, launch, limits=LIMITS)
    first.prepare()
    first.close()
    SPARES.wait_started()
    (spare,) = [s.future.result() for kept in SPARES._kept.values() for s in kept]
    assert spare.freezer is not None and spare.freezer.enabled
    before = spare.cpu_ns()
    time.sleep(0.5)
    # Its spinning thread is frozen with it: unfrozen it would use about 500 ms here. A few
    # microseconds may still be counted as the last of its processes takes the stop (a
    # fresh-clone run saw 5.6 us), so the bound is the own-clock tests' 10 ms, not zero.
    assert spare.cpu_ns() - before < 10_000_000
    second = HostedPlayer("spinner", lambda: bundle, launch, limits=LIMITS)
    try:
        assert second.describe()["name"] == "spinner"  # thawed for its calls
        assert second.box is spare
    finally:
        second.close()
