"""examples/learning-bot: train.py trains in the PettingZoo environment (seeded: the same
policy twice), and learned_bot.py plays the committed policy through the referee as any bot
does, with no fault."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from helpers.paths import ROOT

from sdk.action_index import SIZE
from sdk.referee import LocalPlayer, play_match
from sdk.rules import STANDARD

pytest.importorskip("pettingzoo")
EXAMPLE = ROOT / "examples" / "learning-bot"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"learning_example_{name}", EXAMPLE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_training_is_seeded_and_learns_something(tmp_path: Path) -> None:
    train = load("train")
    first, again = train.train(300, seed=3), train.train(300, seed=3)
    assert first == again
    assert set(first) == {"start", "play"} and all(len(v) == SIZE for v in first.values())
    assert any(v != 0 for v in first["play"])  # the payoffs moved some preferences
    assert train.train(300, seed=4) != first


def test_the_learned_bot_plays_a_match_without_a_fault() -> None:
    policy = json.loads((EXAMPLE / "policy.json").read_text())
    assert set(policy) == {"start", "play"} and all(len(v) == SIZE for v in policy.values())
    bot = load("learned_bot")
    from bots.random_bot import RandomBot

    players = [LocalPlayer(bot.LearnedBot), LocalPlayer(RandomBot)]
    result = play_match(players, seed=17, hands=30, rules=STANDARD)
    assert not result.faults and len(result.hands) == 30
    assert sum(result.scores) == 0
