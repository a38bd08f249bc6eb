"""Golden records: hands of fixed seeds, stored in tests/golden/ as tonk-hand/1 JSON.

Each is checked three ways, byte for byte against the stored file:

- re-dealt from its seed (``deck_order(seed, hand)``) with the recorded actions applied;
- read from the file and replayed from the record alone;
- played again by the referee with the same seeded bots.

Plus ``deck_order`` test vectors (seed, hand index -> first 10 cards) and an independent
implementation of the documented derivation (sdk/dealing.py) to check it against.

A change here means the engine now plays or writes a hand differently. If that is a rules
change made on purpose, run ``python tests/golden/regenerate.py`` and review the diff.
"""

from __future__ import annotations

import hashlib
import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sdk.actions import Draw
from sdk.cards import RANKS, SUITS
from sdk.dealing import deck_order
from sdk.engine import HandState, Phase
from sdk.record import HandRecord

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


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


# -- deck_order test vectors -------------------------------------------------------------------

VECTORS = [
    (0, 0, "7h 4c Ks Kd 8c 10s 4h Ac 3s Qd"),
    (0, 1, "Ac 3s 10s Kc 10d 9s 3d 2h 5c 4h"),
    (1, 0, "Js 9s 3s 4s As Qd 9d 7s 5h Kd"),
    (42, 7, "Jc Kc 2d 8c Ad Jd 3d Kh 10h 2s"),
    (2024, 0, "3s 7s Ks 9h 6d 9s 7d 4d 6s 6c"),
    (2**64 - 1, 0, "Qc 10d 9h Kd 6h 4d 7c 10s 7h 5h"),
    (12345678901234567890, 3, "9h 3h 9c Jd Kh 2d 6h Js Jh 4h"),
    (7, 1000, "Qh Ah 10d 3s 10c 2h Jd 5h Qs 4c"),
]


@pytest.mark.parametrize(("seed", "hand", "first_ten"), VECTORS)
def test_deck_order_vectors(seed: int, hand: int, first_ten: str) -> None:
    deck = deck_order(seed, hand)
    assert " ".join(c.text for c in deck[:10]) == first_ten
    assert len(set(deck)) == 52


def reference_deck_order(seed: int, hand: int) -> list[str]:
    """The derivation as documented in sdk/dealing.py, written out independently."""
    pool: list[int] = []
    block = 0
    order = list(range(52))  # index = suit * 13 + rank - 1, suits c d h s
    for i in range(51, 0, -1):
        n = i + 1
        limit = 2**64 - 2**64 % n
        while True:
            if not pool:
                digest = hashlib.sha256(f"tonk-deal/1:{seed}:{hand}:{block}".encode("ascii")).digest()
                block += 1
                pool = [int.from_bytes(digest[k : k + 8], "big") for k in range(0, 32, 8)]
            x = pool.pop(0)
            if x < limit:
                break
        j = x % n
        order[i], order[j] = order[j], order[i]
    return [RANKS[c % 13] + SUITS[c // 13] for c in order]


def test_deck_order_follows_the_documented_derivation() -> None:
    rng = random.Random(20240601)
    pairs = [(s, h) for s, h, _ in VECTORS] + [(rng.randrange(2**64), rng.randrange(500)) for _ in range(200)]
    for seed, hand in pairs:
        assert [c.text for c in deck_order(seed, hand)] == reference_deck_order(seed, hand), (seed, hand)
