"""Golden records: hands of fixed seeds, stored in tests/golden/ as tonk-hand/1 JSON.

Each is checked three ways, byte for byte against the stored file:

- re-dealt from its seed (``deck_order(seed, hand)``) with the recorded actions applied;
- read from the file and replayed from the record alone;
- played again by the referee with the same seeded bots.

The deck derivation itself, its vectors and an independent implementation of it are
checked in tests/sdk/test_dealing.py.

A change here means the engine now plays or writes a hand differently. If that is a rules
change made on purpose, run ``python tests/golden/regenerate.py`` and review the diff.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from helpers.paths import TESTS

from sdk.actions import Draw
from sdk.dealing import deck_order
from sdk.engine import HandState, Phase
from sdk.record import HandRecord

GOLDEN_DIR = TESTS / "golden"


def _load_regenerate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("golden_regenerate", GOLDEN_DIR / "regenerate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


regenerate = _load_regenerate()
GOLDENS: tuple[Any, ...] = regenerate.GOLDENS
IDS = [g.name for g in GOLDENS]


def stored(golden: Any) -> str:
    path: Path = golden.path
    return path.read_text(encoding="utf-8")


def test_every_golden_file_is_listed_and_every_listed_golden_has_a_file() -> None:
    assert {p.name for p in GOLDEN_DIR.glob("*.json")} == {f"{g.name}.json" for g in GOLDENS}


def test_goldens_cover_every_seat_count_and_several_variants() -> None:
    assert {g.seats for g in GOLDENS} == {2, 3, 4, 5, 6}
    assert sum(1 for g in GOLDENS if g.rules) >= 3
    assert {g.end for g in GOLDENS} >= {"tonk", "drop", "out", "stock", "cap"}


@pytest.mark.parametrize("golden", GOLDENS, ids=IDS)
def test_golden_replayed_from_the_seed(golden: Any) -> None:
    text = stored(golden)
    record = HandRecord.from_text(text)
    deck = deck_order(golden.seed, golden.hand)
    state = HandState.deal(deck, golden.seats, golden.dealer, golden.rule_set)
    for seat, action in record.actions:
        state.apply(action, seat)
    assert state.outcome is not None
    assert state.outcome.end == golden.end
    assert regenerate.text_of(HandRecord.from_state(state, golden.names)) == text


@pytest.mark.parametrize("golden", GOLDENS, ids=IDS)
def test_golden_replayed_from_the_record(golden: Any) -> None:
    text = stored(golden)
    record = HandRecord.from_text(text)
    assert regenerate.text_of(record) == text  # read then written: the same bytes
    outcome = record.verify()
    assert outcome.to_json() == record.outcome
    replayed = HandRecord.from_state(record.replay(), record.players)
    assert regenerate.text_of(replayed) == text


@pytest.mark.parametrize("golden", GOLDENS, ids=IDS)
def test_golden_played_again_by_the_referee(golden: Any) -> None:
    assert regenerate.text_of(regenerate.play(golden)) == stored(golden)


def _replay_states(record: HandRecord) -> list[HandState]:
    state = record.initial_state()
    states = [state.copy()]
    for seat, action in record.actions:
        state.apply(action, seat)
        states.append(state.copy())
    return states


def test_golden_reshuffle_turns_the_stock_over() -> None:
    (golden,) = [g for g in GOLDENS if g.rules.get("stock_reshuffle") and g.end == "cap"]
    record = HandRecord.from_text(stored(golden))
    stock_draws = sum(1 for _, a in record.actions if isinstance(a, Draw) and a.source == "stock")
    assert stock_draws > len(record.stock)


def test_golden_hit_lock_blocks_a_drop() -> None:
    locked_turns = 0
    for golden in GOLDENS:
        if golden.rules.get("hit_lock"):
            states = _replay_states(HandRecord.from_text(stored(golden)))
            for state in states:
                if state.phase is Phase.START and state.to_act in state.locked:
                    assert "drop" not in [a.kind for a in state.legal_actions()]
                    locked_turns += 1
    assert locked_turns >= 2
