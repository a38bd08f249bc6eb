"""Cards: notation (docs/rules.md, "Cards and values"), values, the 52 interned objects."""

from __future__ import annotations

import copy
import pickle

import pytest
from helpers.paths import ROOT

from sdk.cards import DECK, DECK_SET, RANKS, SUITS, Card, format_cards, hand_value, parse_cards, sort_hand
from sdk.errors import NotationError


def test_there_are_52_distinct_cards_in_index_order() -> None:
    assert len(DECK) == 52 == len(DECK_SET)
    for index, card in enumerate(DECK):
        assert card.index == index == card.suit_index * 13 + card.rank - 1
        assert card.suit == SUITS[card.suit_index]
    assert [c.text for c in DECK[:13]] == [r + "c" for r in RANKS]
    assert DECK[51].text == "Ks" and DECK[0].text == "Ac" and DECK[35].text == "10h"


def test_values_ace_1_pips_face_value_jack_queen_king_10() -> None:
    values = {c.text: c.value for c in DECK}
    assert values["Ac"] == 1 and values["2d"] == 2 and values["10h"] == 10
    assert values["Js"] == values["Qs"] == values["Ks"] == 10
    assert hand_value(parse_cards(["10s", "8d", "8h", "5s", "4c"])) == 35  # Croaker, rules text
    assert hand_value([]) == 0
    assert sum(c.value for c in DECK) == 4 * (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 30)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("10s", "10s"), ("Ts", "10s"), ("tS", "10s"), ("10S", "10s"), ("qh", "Qh"), ("aC", "Ac"),
     (" Kd ", "Kd"), ("2c", "2c")],
)
def test_parsing_accepts_t_for_ten_and_any_case_writes_canonical(text: str, canonical: str) -> None:
    card = Card.parse(text)
    assert card.text == canonical == str(card)
    assert Card(text) is card
    assert format_cards([card]) == [canonical]


@pytest.mark.parametrize("text", ["", "1s", "11s", "Xz", "10", "s", "10x", "AA", "1 0s", "Ks!"])
def test_an_unknown_card_is_refused_quoting_it(text: str) -> None:
    with pytest.raises(NotationError, match=f"unknown card {text!r}"):
        Card.parse(text)


@pytest.mark.parametrize("value", [10, None, ["10s"], b"10s"])
def test_a_card_that_is_not_text_is_refused(value: object) -> None:
    with pytest.raises(NotationError, match="a card is written as text like '10s'"):
        Card.parse(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["10s 8d", {"10s": 1}, {"10s"}, 5, None, b"10s"])
def test_a_list_of_cards_must_be_a_list(value: object) -> None:
    with pytest.raises(NotationError, match="expected a list of cards"):
        parse_cards(value)  # type: ignore[arg-type]


def test_parse_cards_reads_lists_tuples_and_lenient_spellings() -> None:
    assert parse_cards(["Ts", "qh"]) == parse_cards(("10s", "Qh")) == [Card.parse("10s"), Card.parse("Qh")]
    with pytest.raises(NotationError, match="unknown card 'Zz'"):
        parse_cards(["10s", "Zz"])


def test_cards_are_interned_through_copy_and_pickle() -> None:
    for card in (DECK[0], DECK[35], DECK[51]):
        assert copy.copy(card) is card
        assert copy.deepcopy(card) is card
        assert pickle.loads(pickle.dumps(card)) is card
        assert Card.from_index(card.index) is card
        assert eval(repr(card), {"Card": Card}) is card


@pytest.mark.parametrize("index", [-1, 52, 100])
def test_from_index_out_of_range(index: int) -> None:
    with pytest.raises(NotationError, match=f"card index {index} is outside 0..51"):
        Card.from_index(index)


def test_sort_orders() -> None:
    hand = parse_cards(["Ks", "2c", "Ah", "2h"])
    assert [c.text for c in sort_hand(hand)] == ["2c", "Ah", "2h", "Ks"]  # by suit, then rank
    assert [c.text for c in sorted(hand)] == ["Ah", "2c", "2h", "Ks"]  # by rank, then suit


def test_the_guides_card_table_is_what_a_card_holds() -> None:
    # Issue #40: a newcomer took `card.rank` for text (print shows 10) and their v2 crashed.
    guide = (ROOT / "docs" / "bot-author-guide.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line for line in guide.splitlines() if line.startswith("| `")}
    kinds = {"rank": "int", "suit": "str", "value": "int", "text": "str", "index": "int"}
    for field, kind in kinds.items():
        assert f"| `{kind}` |" in rows[field], rows.get(field)
        assert type(getattr(Card.parse("Qh"), field)).__name__ == kind
    ace, queen, ten = Card.parse("Ac"), Card.parse("qH"), Card.parse("Ts")
    assert (ace.rank, ace.value, queen.rank, queen.value, ten.rank, ten.value) == (1, 1, 12, 10, 10, 10)
    assert (str(ten), ten.text, ten.suit, ten.index) == ("10s", "10s", "s", 3 * 13 + 10 - 1)
    assert Card("10s") is ten and sorted([queen, ace, ten]) == [ace, ten, queen]
