"""The seed -> deck derivation against the test vectors published in docs/dealing.md.

The vectors are read from the document itself, so the page and the code cannot drift apart.
"""

from __future__ import annotations

import hashlib
import random
import re
import struct

import pytest
from helpers.paths import ROOT

from sdk.cards import DECK, Card
from sdk.dealing import _deck_order_streamed, deck_order, derive_seed
from sdk.engine import HandState
from sdk.errors import NotationError

DOC = (ROOT / "docs" / "dealing.md").read_text(encoding="utf-8")


def _table_rows(heading: str) -> list[list[str]]:
    """The body rows of the first table after ``heading`` in docs/dealing.md."""
    section = DOC.split(heading, 1)[1]
    rows = []
    for line in section.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not set(cells[0]) <= {"-", " "}:
                rows.append(cells)
        elif rows:
            break
    return rows[1:]  # without the header


def _number(cell: str) -> int:
    return int(cell.split()[0])


DECK_VECTORS = [(_number(r[0]), int(r[1]), r[2].split()) for r in _table_rows("### Full deck orders")]
SEED_VECTORS = [
    (_number(r[0]), "" if r[1] == "(empty)" else r[1].split()[0].strip("`"), int(r[2]))
    for r in _table_rows("### Child seeds")
]


def test_the_document_has_vectors() -> None:
    assert len(DECK_VECTORS) >= 5 and len(SEED_VECTORS) >= 4
    assert (2**64 - 1, 0) in [(s, h) for s, h, _ in DECK_VECTORS]


@pytest.mark.parametrize(("seed", "hand", "deck"), DECK_VECTORS)
def test_deck_order_vectors(seed: int, hand: int, deck: list[str]) -> None:
    assert [c.text for c in deck_order(seed, hand)] == deck
    assert sorted(deck_order(seed, hand), key=lambda c: c.index) == list(DECK)


@pytest.mark.parametrize(("parent", "label", "child"), SEED_VECTORS)
def test_derive_seed_vectors(parent: int, label: str, child: int) -> None:
    assert derive_seed(parent, label) == child
    assert 0 <= child < 2**64


def test_the_worked_first_block() -> None:
    digest = hashlib.sha256(b"tonk-deal/1:0:0:0").digest()
    assert digest.hex() in DOC
    integers = struct.unpack(">4Q", digest)
    for x in integers:
        assert str(x) in DOC
    swaps = [(i, x % (i + 1)) for i, x in zip(range(51, 47, -1), integers, strict=True)]
    for i, j in swaps:
        assert f"i={i}, j={j}" in DOC
    deck = deck_order(0, 0)
    assert deck[51] == DECK[46] == Card.parse("8s") and deck[50] == DECK[4] == Card.parse("5c")


def test_the_worked_deal() -> None:
    state = HandState.deal(deck_order(0, 0), 3, dealer=2)
    rows = _table_rows("### One deal")
    for seat, hand_cell in ((int(r[0]), r[1]) for r in rows):
        cards, total = hand_cell.split(" (total ")
        assert [c.text for c in state.hands[seat]] == cards.split()
        assert state.totals()[seat] == int(total.rstrip(")"))
    assert state.discard == [Card.parse("Kc")]
    assert [c.text for c in state.stock[:3]] == ["9c", "2s", "8h"]
    assert state.outcome is None and state.to_act == 0


def test_deal_order_one_card_at_a_time_from_the_left_of_the_dealer() -> None:
    deck = deck_order(5, 5)
    for players in range(2, 7):
        for dealer in range(players):
            state = HandState.deal(deck, players, dealer)
            for k in range(5 * players):
                seat = (dealer + 1 + k) % players
                assert state.initial["hands"][seat][k // players] is deck[k]
            assert state.initial["discard"] == [deck[5 * players]]
            assert state.initial["stock"] == deck[5 * players + 1 :]


def test_fast_path_matches_the_block_by_block_reference() -> None:
    rng = random.Random(7)
    for _ in range(300):
        seed, hand = rng.randrange(2**64), rng.randrange(10_000)
        prefix = f"tonk-deal/1:{seed}:{hand}:".encode("ascii")
        assert deck_order(seed, hand) == _deck_order_streamed(prefix)


#: First ten cards of more decks, pinned here besides the document's full ones.
FIRST_TEN = [
    (0, 0, "7h 4c Ks Kd 8c 10s 4h Ac 3s Qd"),
    (0, 1, "Ac 3s 10s Kc 10d 9s 3d 2h 5c 4h"),
    (1, 0, "Js 9s 3s 4s As Qd 9d 7s 5h Kd"),
    (42, 7, "Jc Kc 2d 8c Ad Jd 3d Kh 10h 2s"),
    (2024, 0, "3s 7s Ks 9h 6d 9s 7d 4d 6s 6c"),
    (2**64 - 1, 0, "Qc 10d 9h Kd 6h 4d 7c 10s 7h 5h"),
    (12345678901234567890, 3, "9h 3h 9c Jd Kh 2d 6h Js Jh 4h"),
    (7, 1000, "Qh Ah 10d 3s 10c 2h Jd 5h Qs 4c"),
]


@pytest.mark.parametrize(("seed", "hand", "first_ten"), FIRST_TEN)
def test_first_ten_cards_vectors(seed: int, hand: int, first_ten: str) -> None:
    deck = deck_order(seed, hand)
    assert " ".join(c.text for c in deck[:10]) == first_ten
    assert len(set(deck)) == 52


def from_the_document(seed: int, hand: int) -> list[str]:
    """The derivation as docs/dealing.md describes it, written out independently, with its
    own rejection loop."""
    stream: list[int] = []
    block = 0
    deck = list(range(52))  # index = suit * 13 + rank - 1, suits c d h s
    for i in range(51, 0, -1):
        n = i + 1
        limit = 2**64 - 2**64 % n
        while True:
            if not stream:
                digest = hashlib.sha256(f"tonk-deal/1:{seed}:{hand}:{block}".encode("ascii")).digest()
                stream = [int.from_bytes(digest[k : k + 8], "big") for k in range(0, 32, 8)]
                block += 1
            x = stream.pop(0)
            if x < limit:
                break
        j = x % n
        deck[i], deck[j] = deck[j], deck[i]
    ranks = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
    return [ranks[c % 13] + "cdhs"[c // 13] for c in deck]


def test_the_derivation_is_written_out_independently() -> None:
    rng = random.Random(20240601)
    pairs = [(0, 0), (3, 9), (2**63, 1), (2**64 - 1, 123)] + [(s, h) for s, h, _ in FIRST_TEN]
    pairs += [(rng.randrange(2**64), rng.randrange(500)) for _ in range(200)]
    for seed, hand in pairs:
        assert [c.text for c in deck_order(seed, hand)] == from_the_document(seed, hand), (seed, hand)


@pytest.mark.parametrize("seed", [-1, 2**64, True, 1.0, "7", None])
def test_a_bad_seed_is_refused_naming_it(seed: object) -> None:
    with pytest.raises(NotationError, match=re.escape(repr(seed))):
        deck_order(seed, 0)  # type: ignore[arg-type]
    with pytest.raises(NotationError, match="a seed is an integer from 0 to 2\\*\\*64 - 1"):
        derive_seed(seed, "x")  # type: ignore[arg-type]


@pytest.mark.parametrize("hand", [-1, True, 1.5, "0"])
def test_a_bad_hand_index_is_refused_naming_it(hand: object) -> None:
    with pytest.raises(NotationError, match="a hand index is an integer >= 0"):
        deck_order(1, hand)  # type: ignore[arg-type]


def test_different_hands_and_seeds_give_different_decks() -> None:
    decks = {tuple(c.index for c in deck_order(seed, hand)) for seed in range(20) for hand in range(20)}
    assert len(decks) == 400
