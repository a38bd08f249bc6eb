"""The replay viewer's game logic (dashboard/static/js/tonk.js) under Node: rebuilding hands
step by step from their records must end exactly where the engine ended, for every way a
hand can end, and every step must have a caption."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from case_files import CASES

from bots.random_bot import RandomBot
from sdk.actions import Action
from sdk.bot import Bot
from sdk.observation import Observation
from sdk.referee import LocalPlayer, play_match
from sdk.rules import Rules

TONK_JS = Path(__file__).resolve().parents[1] / "dashboard" / "static" / "js" / "tonk.js"

SCRIPT = """
const Tonk = require(process.argv[1]);
const hands = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = hands.map((hand) => {
  const steps = Tonk.buildSteps(hand);
  const last = steps[steps.length - 1].state;
  return {
    steps: steps.length,
    totals: last.hands.map(Tonk.total),
    stock: last.stock.length,
    table: last.table.map((m) => m.cards),
    all: steps.map((s) => Tonk.caption(s, hand, null)),
    seat0: steps.map((s) => Tonk.caption(s, hand, 0)),
    log: steps.map((s) => Tonk.logText(s.event, hand, 0)),
  };
});
process.stdout.write(JSON.stringify(out));
"""


def node() -> str:
    found = shutil.which("node") or shutil.which("nodejs")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("node is needed to test the replay viewer's logic")
        pytest.skip("node is not installed")
    return found


def run_js(hands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [node(), "-e", SCRIPT, str(TONK_JS)], input=json.dumps(hands), capture_output=True, text=True,
        timeout=60, check=True,
    )
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result


class Keeper(Bot):
    """Never goes down: melds and lays off whenever it can, else plays at random. Its hands
    end by going out or at a showdown when the stock runs out."""

    name = "keeper"

    def act(self, obs: Observation) -> Action | int:
        legal = [a for a in obs.legal_actions if a.kind != "drop"]
        eager = [a for a in legal if a.kind in ("meld", "layoff")]
        return self.rng.choice(eager or legal)


class Crasher(Keeper):
    name = "crasher"

    def act(self, obs: Observation) -> Action | int:
        if obs.turn >= 6:
            raise RuntimeError("boom")
        return super().act(obs)


def sample_hands() -> list[dict[str, Any]]:
    """Hands ending every way: drop, out, TONK, stock-out, fault, plus a reshuffling variant."""
    hands: list[dict[str, Any]] = []
    ends: set[str] = set()
    rules = [Rules(), Rules(stock_reshuffle=True, turn_cap=60), Rules(ace_high_or_low=True, book_layoff=True)]
    for seed in range(1, 40):
        bots: list[type[Bot]] = [Keeper, Keeper] if seed % 2 else [Keeper, RandomBot, Keeper, Keeper]
        if seed % 7 == 0:
            bots = [Keeper, Crasher, Keeper]
        result = play_match([LocalPlayer(b) for b in bots], seed, 4, rules=rules[seed % 3])
        for log in result.hands:
            hands.append(log.to_json())
            ends.add(log.record.outcome["end"] if log.record.outcome else "?")
    assert {"drop", "out", "stock", "fault"} <= ends, ends
    return hands


def test_rebuilt_hands_end_where_the_engine_ended() -> None:
    hands = sample_hands()
    results = run_js(hands)
    for hand, got in zip(hands, results, strict=True):
        outcome = hand["outcome"]
        assert got["totals"] == outcome["totals"], (hand, got)
        extra = 1 if outcome["end"] == "fault" else 0
        assert got["steps"] == len(hand["actions"]) + 1 + extra
        assert all(got["all"]) and all(got["seat0"])


def test_captions_say_what_happened_in_plain_words() -> None:
    path = CASES / "seed-example-1.json"
    if not path.exists():
        pytest.skip(f"{path} (the rules text's first example) is not here")
    example = json.loads(path.read_text())
    (got,) = run_js([example])
    assert got["all"][0].startswith("Elmo deals 5 cards to each player and turns up 5\u2663")
    assert got["all"][1] == "Croaker draws from the stock (6\u2660)."
    assert got["all"][8] == "Croaker lays down 8\u2665 8\u2666 8\u2660, a book of 8s."
    assert got["all"][-1] == "Croaker goes down with 9: lowest, wins 2."
    # Seat 0 (Croaker) sees its own stock draws, never another seat's.
    assert got["seat0"][1] == "Croaker (you) draws from the stock (6\u2660)."
    assert got["seat0"][3] == "Goblin draws from the stock."
    assert got["log"][3] == "draws from the stock"
