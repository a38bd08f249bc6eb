"""The replay's steps come from the engine (arena/queries/replay_steps.py): for recorded
hands at 2 to 6 seats, ending every way (drops that win and drops that are caught, going out,
TONK, stock-out, turn limit, faults), every step's totals and the last step's payments are the
engine's, and the caption names every seat's payment."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from arena.queries.replay_steps import hand_steps, match_steps
from bots.random_bot import RandomBot
from sdk.actions import DROP, Action
from sdk.bot import Bot
from sdk.cards import RANKS, hand_value
from sdk.observation import Observation
from sdk.record import HandRecord
from sdk.referee import LocalPlayer, plain_record, play_match
from sdk.rules import Rules


class Keeper(Bot):
    """Never goes down: melds and lays off whenever it can. Its hands end by going out, at a
    showdown when the stock runs out, or at the turn limit."""

    name = "keeper"

    def act(self, obs: Observation) -> Action | int:
        legal = [a for a in obs.legal_actions if a.kind != "drop"]
        eager = [a for a in legal if a.kind in ("meld", "layoff")]
        return self.rng.choice(eager or legal)


class Bold(Keeper):
    """Goes down early with a middling total: often caught by a lower hand."""

    name = "bold"

    def act(self, obs: Observation) -> Action | int:
        if DROP in obs.legal_actions and obs.hand_value <= 22 and obs.turn >= 1:
            return DROP
        return super().act(obs)


class Crasher(Keeper):
    name = "crasher"

    def act(self, obs: Observation) -> Action | int:
        if obs.turn >= 4 and obs.hand_index % 2:
            raise RuntimeError("boom")
        return super().act(obs)


LINEUPS: list[list[type[Bot]]] = [
    [Keeper, Bold],
    [Keeper, Keeper],
    [Keeper, Keeper, Keeper],
    [Bold, Keeper, RandomBot],
    [Bold, Keeper, Crasher, Keeper],
    [Bold, Bold, Keeper, RandomBot, Keeper],
    [Keeper, Bold, Keeper, Bold, Crasher, Keeper],
]
RULES = [Rules(), Rules(tonk_low=21, tonk_high=45), Rules(stock_reshuffle=True, turn_cap=12)]


@pytest.fixture(scope="module")
def logs() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for k, lineup in enumerate(LINEUPS):
        for r, rules in enumerate(RULES):
            names = [f"{b.name}{s}" for s, b in enumerate(lineup)]
            seed = 100 + 7 * k + r
            result = play_match([LocalPlayer(b) for b in lineup], seed, 6, rules=rules, names=names)
            out.extend(log.to_json() for log in result.hands)
    return out


def caught(log: dict[str, Any]) -> bool:
    o = log["outcome"]
    dropper = log["actions"][-1]["seat"] if log["actions"] else None
    return o["end"] == "drop" and dropper not in o["winners"]


def test_the_sample_covers_every_ending_at_every_table_size(logs: list[dict[str, Any]]) -> None:
    ends = Counter(log["outcome"]["end"] for log in logs)
    assert {"drop", "out", "tonk", "stock", "cap", "fault"} <= set(ends), ends
    assert {len(log["players"]) for log in logs} == {2, 3, 4, 5, 6}
    assert any(caught(log) and len(log["players"]) >= 3 for log in logs)
    assert any(log["outcome"]["end"] == "tonk" and log["rules"] not in (None, "standard") for log in logs)


def test_every_step_shows_the_engines_totals_and_payments(logs: list[dict[str, Any]]) -> None:
    for log in logs:
        hand = hand_steps(log)
        steps = hand["steps"]
        record = HandRecord.from_json(plain_record(log))
        state = record.initial_state()
        actions = list(record.actions)
        faulted = bool(log.get("faults"))
        assert len(steps) == len(actions) + 1 + faulted
        for i, step in enumerate(steps):
            if 0 < i <= len(actions):
                seat, action = actions[i - 1]
                state.apply(action, seat)
                assert step["event"]["seat"] == seat and step["event"]["kind"] == action.kind
            assert step["totals"] == [hand_value(h) for h in state.hands], (log, i)
            assert [sorted(h) for h in step["hands"]] == [sorted(c.text for c in h) for h in state.hands]
            assert step["stock"] == state.stock_size and step["discard_size"] == len(state.discard)
            assert [m["cards"] for m in step["table"]] == [[c.text for c in m.cards] for m in state.table]
            assert ("outcome" in step) == (i == len(steps) - 1)
        if faulted:
            state.forfeit(log["faults"][0]["seat"])
        assert state.outcome is not None
        outcome = steps[-1]["outcome"]
        assert outcome == state.outcome.to_json() == log["outcome"]
        assert sum(outcome["payoffs"]) == 0
        caption = steps[-1]["caption"]
        for seat, payoff in enumerate(outcome["payoffs"]):
            name = log["players"][seat]
            if payoff < 0:
                assert f"{name} pays {-payoff}" in caption, caption
            elif payoff > 0:
                assert f"{name} wins {payoff}" in caption, caption


def test_captions_follow_the_rules_of_the_hand(logs: list[dict[str, Any]]) -> None:
    for log in logs:
        hand = hand_steps(log)
        end = log["outcome"]["end"]
        caption = hand["steps"][-1]["caption"]
        rules = Rules.from_json(log.get("rules"))
        if end == "tonk" and "Everyone" not in caption:
            assert f"a dealt hand of {rules.tonk_low} or less, or {rules.tonk_high} or more" in caption
        if caught(log):
            dropper = log["actions"][-1]["seat"]
            assert f"{log['players'][dropper]} goes down with" in caption and "caught" in caption
        if end == "cap":
            assert f"({rules.turn_cap} turns)" in caption
        if end == "fault":
            assert "faulted" in caption and "forfeits" in caption
        for step in hand["steps"]:
            assert step["caption"] and step["log"]
            for cards in step["hands"]:
                indexes = [("cdhs".index(c[-1]), RANKS.index(c[:-1])) for c in cards]
                assert indexes == sorted(indexes)  # sorted for reading: by suit, then rank
            ev = step["event"]
            if ev["kind"] == "draw" and ev["source"] == "stock":
                name = log["players"][ev["seat"]]
                assert step["caption_hidden"].startswith(f"{name} draws from the stock")
                assert "(" not in step["caption_hidden"].split(".")[0]


def test_match_steps_keep_the_running_score(logs: list[dict[str, Any]]) -> None:
    hands = match_steps(logs[:6])
    assert hands[0]["score_before"] == [0, 0]
    running = [0, 0]
    for hand, log in zip(hands, logs[:6], strict=True):
        assert hand["score_before"] == running
        running = [a + b for a, b in zip(running, log["outcome"]["payoffs"], strict=True)]


def test_a_hand_the_engine_cannot_replay_is_reported_not_fatal(logs: list[dict[str, Any]]) -> None:
    broken = dict(logs[0], actions=[{"seat": 0, "discard": "Kh"}] * 3)
    hands = match_steps([broken, logs[1]])
    assert "cannot be replayed" in hands[0]["error"] and hands[1]["steps"]
