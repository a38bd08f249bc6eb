"""``tonk check``: the conformance checker against good and deliberately broken bots, each
served over real gRPC on loopback."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import grpc
import pytest
from helpers.grpc_bots import (
    CrashBot,
    HangBot,
    IllegalBot,
    MalformedBot,
    NondeterministicBot,
    OutOfRangeBot,
    raw_server,
    serving,
)
from helpers.net import free_port

from bots.random_bot import RandomBot
from sdk import cli
from sdk.bot import Bot
from sdk.conformance import (
    POSITIONS,
    SITUATIONS,
    CheckConfig,
    CheckReport,
    ConformanceError,
    SparringBot,
    WildBot,
    check_bot,
    position_state,
    situations_of,
)
from sdk.decision_file import decision_from_json
from sdk.observation import observe
from sdk.protocol import bot_pb2 as pb
from sdk.referee import FaultKind, LocalPlayer, play_match

QUICK = CheckConfig(hands=3, deadline_ms=1000)


@pytest.fixture(scope="module")
def random_report() -> CheckReport:
    with serving(RandomBot) as running:
        return check_bot(running.address)


def test_the_random_house_bot_passes(random_report: CheckReport) -> None:
    assert random_report.passed, random_report.render()
    assert random_report.info["name"] == "random"
    text = random_report.render()
    assert "RESULT: PASS" in text and "faults: none" in text


def test_every_situation_is_reached(random_report: CheckReport) -> None:
    missing = [s for s in SITUATIONS if s not in random_report.coverage()]
    assert not missing


def test_latency_percentiles_and_determinism_are_reported(random_report: CheckReport) -> None:
    pct = random_report.latency_percentiles_ms()
    assert list(pct) == ["p50", "p95", "p99", "max"]
    assert 0 < pct["p50"] <= pct["p95"] <= pct["p99"] <= pct["max"]
    assert random_report.determinism_compared > 0 and not random_report.nondeterminism
    data = json.loads(json.dumps(random_report.to_json()))
    assert data["passed"] and data["missing"] == [] and data["decisions"] == len(random_report.decisions)


@pytest.mark.parametrize("target", ["bots.random_bot:RandomBot", "random", "greedy"])
def test_a_class_or_house_name_is_served_for_the_check(target: str) -> None:
    report = check_bot(target, QUICK)
    assert report.passed, report.render()


@pytest.mark.parametrize(
    ("bot", "kind", "reason", "deadline_ms"),
    [
        # Bots that answer at once get a deadline a loaded CI machine cannot miss (a crash
        # logs a traceback on the bot's side first); only the hanging one waits it out.
        (CrashBot, FaultKind.CRASH, "RuntimeError: boom in act", 5000),
        (IllegalBot, FaultKind.ILLEGAL, "comes after the draw", 5000),
        (OutOfRangeBot, FaultKind.ILLEGAL, "out of range", 5000),
        (MalformedBot, FaultKind.MALFORMED, "names no action", 5000),
        # Slow: it waits out every deadline of every scenario.
        pytest.param(HangBot, FaultKind.TIMEOUT, "no reply within 150 ms", 150, marks=pytest.mark.slow),
    ],
    ids=["crash", "illegal", "out-of-range", "malformed", "hang"],
)
def test_broken_bots_fail_with_the_right_fault(
    bot: type[Bot], kind: FaultKind, reason: str, deadline_ms: int
) -> None:
    with serving(bot) as running:
        report = check_bot(running.address, CheckConfig(hands=3, deadline_ms=deadline_ms, max_faults=4))
    assert not report.passed
    faults = report.faults
    assert faults and {d.fault for d in faults} == {kind}, report.render()
    assert reason in faults[0].reason
    assert report.stopped_early
    assert f"{kind.value.upper()}" in report.render() and "RESULT: FAIL" in report.render()


def test_nondeterminism_is_caught() -> None:
    with serving(NondeterministicBot) as running:
        report = check_bot(running.address, QUICK)
    assert not report.faults, report.render()
    assert report.nondeterminism and "Bot.rng" in report.nondeterminism[0]
    assert not report.passed and "NONDETERMINISTIC" in report.render()


def test_a_set_iterated_in_hash_order_is_caught_by_a_fresh_process() -> None:
    # Same process, same order: only the replay from a new process of the bot can see it.
    # 12 hands: some 29 decisions compared, each an independent chance for a new process to
    # differ (at QUICK's 3 hands, 5: no miss in 200 runs, but no margin either).
    report = check_bot("helpers.faultbots:HashOrderSetBot", dataclasses.replace(QUICK, hands=12))
    assert not report.faults, report.render()
    assert report.determinism_fresh_process
    assert report.nondeterminism and "a new process" in report.nondeterminism[0], report.render()
    assert not report.passed and "NONDETERMINISTIC" in report.render()


def test_a_served_bot_is_replayed_by_a_fresh_process_too() -> None:
    report = check_bot("greedy", QUICK)
    assert report.passed and report.determinism_fresh_process, report.render()
    assert "and in a new process" in report.render()


def test_garbage_replies_are_malformed() -> None:
    with raw_server({"Decide": lambda data, ctx: b"\xff\xff\xff"}) as address:
        report = check_bot(address, CheckConfig(hands=2, max_faults=3))
    assert {d.fault for d in report.faults} == {FaultKind.MALFORMED}


def test_a_bot_without_health_service_or_getinfo_fails_as_the_arena_refuses_it() -> None:
    # Index 0 is always legal, so it plays without a fault; but it has no health service and
    # GetInfo answers UNIMPLEMENTED, which the arena refuses (it used to pass `tonk check`).
    reply = pb.DecideResponse(action_index=0).SerializeToString()
    with raw_server({"Decide": lambda data, ctx: reply}) as address:
        report = check_bot(address, QUICK)
    assert not report.faults and not report.passed, report.render()
    assert [code for code, _ in report.refusals] == ["bot_unhealthy", "bot_check_failed"]
    text = report.render()
    assert "does not serve the standard gRPC health service (grpc.health.v1.Health)" in text
    assert "did not answer GetInfo: UNIMPLEMENTED" in text
    assert "faults: none" not in text and "RESULT: FAIL" in text


def test_tonk_check_and_the_arena_refuse_in_the_same_words() -> None:
    from arena.bots.registry import BotCheckFailedError
    from arena.bots.registry import check_served_bot as admit
    from arena.config import Settings

    reply = pb.DecideResponse(action_index=0).SerializeToString()
    with raw_server({"Decide": lambda data, ctx: reply}) as address:
        report = check_bot(address, QUICK)
        with pytest.raises(BotCheckFailedError) as refused:
            admit(address, Settings(allowed_bot_hosts=("127.0.0.1",)))
    assert (refused.value.code, refused.value.message) == report.refusals[0]


def test_an_unreachable_bot_fails_fast_without_saying_none() -> None:
    address = f"127.0.0.1:{free_port()}"
    report = check_bot(address, QUICK)
    assert not report.passed and report.stopped_early and not report.decisions
    assert report.refusals[0][0] == "bot_unreachable"
    text = report.render()
    assert f"could not reach the bot at {address!r}" in text and "is it running" in text
    assert "none" not in text and text.endswith(text.splitlines()[-1]) and "RESULT: FAIL" in text


def test_a_target_that_names_no_bot_is_an_error() -> None:
    with pytest.raises(ConformanceError):
        check_bot("no.such.module:Bot", QUICK)


def test_positions_put_the_bot_in_each_rare_situation() -> None:
    reached = set()
    for position in POSITIONS:
        state = position_state(position)
        assert state.to_act == 0
        reached |= set(situations_of(observe(state, 0)))
    needs_positions = {s for s in SITUATIONS if "seats" not in s}
    assert needs_positions <= reached


def test_sparring_partners_play_legally() -> None:
    result = play_match([LocalPlayer(SparringBot), LocalPlayer(WildBot), LocalPlayer(SparringBot)], 4, 20)
    assert not result.faults
    assert any(a.kind in ("meld", "layoff") for h in result.hands for _, a in h.record.actions)


def test_cli_exit_codes_and_dumped_faults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "random", "--hands", "2", "--quiet"]) == 0
    assert "RESULT: PASS" in capsys.readouterr().out
    with serving(IllegalBot) as running:
        code = cli.main(["check", running.address, "--hands", "2", "--json", "--dump-faults", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1 and json.loads(out)["passed"] is False
    dumped = sorted(tmp_path.glob("fault-*.json"))
    assert dumped
    request = decision_from_json(json.loads(dumped[0].read_text()))
    assert request.observation.legal_actions  # a replayable decision
    assert cli.main(["check", "not a bot"]) == 2


def test_cli_check_over_a_running_server(capsys: pytest.CaptureFixture[str]) -> None:
    with serving(RandomBot) as running, grpc.insecure_channel(running.address):
        assert cli.main(["check", running.address, "--hands", "2", "--quiet"]) == 0
    assert "bot: random" in capsys.readouterr().out
