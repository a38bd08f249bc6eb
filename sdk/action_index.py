"""Every action of Tonk as a number, and a seat's view as numbers: what a learning bot's
network reads and writes (the PettingZoo environment in sdk/tonk_env.py uses both, and a
bot trained on them uses the same two functions in its ``act``).

The numbering is fixed (it never depends on the position), :data:`SIZE` in all:

==============  =====  ===============================================================
first index     count  actions
==============  =====  ===============================================================
0               1      drop
1               2      draw from the stock, draw from the discard pile
3               52     discard a card (by card index: ``suit * 13 + rank - 1``)
55              373    meld: the 65 books (three of a rank, four ways, or all four) then
                       the 308 spreads (3 to 13 cards in sequence, a suit's ace low or high)
428             884    lay off a card (52) onto table meld 0 to 16 (17: the most a 52-card
                       deck can hold)
==============  =====  ===============================================================

A meld is numbered by its set of cards, in whatever order its cards were written. The rules'
variants (docs/rules.md) only change which numbers are legal, never what a number means.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import Final

from sdk.actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, Discard, Draw, Drop, Layoff, Meld
from sdk.cards import DECK, Card
from sdk.errors import IllegalActionError, NotationError
from sdk.observation import Observation

#: Melds a 52-card table can hold at most (17 of three cards each).
MAX_TABLE_MELDS: Final = 17
_DISCARD: Final = 3
_MELD: Final = _DISCARD + 52


class ActionIndexError(NotationError):
    """A number that names no action, or an action this numbering has no number for."""


class ActionNotLegalError(IllegalActionError):
    """A number that names an action, but not one the seat may take now."""


def _melds() -> list[frozenset[int]]:
    ways = [suits for size in (3, 4) for suits in combinations(range(4), size)]
    books = [frozenset(13 * s + rank - 1 for s in suits) for rank in range(1, 14) for suits in ways]
    spreads = []
    for suit in range(4):
        for length in range(3, 14):
            for low in range(1, 16 - length):  # extended ranks: 14 is the ace high
                ranks = [r if r <= 13 else 1 for r in range(low, low + length)]
                if len(set(ranks)) == length:  # an ace at both ends would be one card twice
                    spreads.append(frozenset(13 * suit + r - 1 for r in ranks))
    return books + spreads


MELDS: Final = tuple(_melds())
_MELD_INDEX: Final = {cards: _MELD + i for i, cards in enumerate(MELDS)}
_LAYOFF: Final = _MELD + len(MELDS)
#: How many actions there are.
SIZE: Final = _LAYOFF + 52 * MAX_TABLE_MELDS


def action_index(action: Action) -> int:
    """The number of ``action``."""
    if isinstance(action, Drop):
        return 0
    if isinstance(action, Draw):
        return 1 if action.source == "stock" else 2
    if isinstance(action, Discard):
        return _DISCARD + action.card.index
    if isinstance(action, Meld):
        found = _MELD_INDEX.get(frozenset(c.index for c in action.cards))
        if found is None or len(action.cards) != len(set(action.cards)):
            raise ActionIndexError(f"{str(action)!r} is not a book or a spread of distinct cards")
        return found
    if isinstance(action, Layoff):
        if not 0 <= action.onto < MAX_TABLE_MELDS:
            raise ActionIndexError(f"{str(action)!r}: a table holds melds 0 to {MAX_TABLE_MELDS - 1}")
        return _LAYOFF + action.onto * 52 + action.card.index
    raise ActionIndexError(f"{action!r} is not a Tonk action")


def index_action(number: int) -> Action:
    """The action numbered ``number`` (its meld's cards low to high by card index)."""
    if type(number) is not int or not 0 <= number < SIZE:
        raise ActionIndexError(f"an action number is 0 to {SIZE - 1}, got {number!r}")
    if number == 0:
        return DROP
    if number < _DISCARD:
        return DRAW_STOCK if number == 1 else DRAW_DISCARD
    if number < _MELD:
        return Discard(DECK[number - _DISCARD])
    if number < _LAYOFF:
        return Meld(tuple(DECK[i] for i in sorted(MELDS[number - _MELD])))
    onto, card = divmod(number - _LAYOFF, 52)
    return Layoff(DECK[card], onto)


def action_mask(legal: Iterable[Action]) -> list[int]:
    """1 at the number of each legal action, 0 elsewhere (PettingZoo's ``action_mask``)."""
    mask = [0] * SIZE
    for action in legal:
        mask[action_index(action)] = 1
    return mask


def legal_action(observation: Observation, number: int) -> Action:
    """The legal action of ``observation`` numbered ``number``, as the referee takes it (the
    meld with the cards in the order the engine listed them)."""
    for action in observation.legal_actions:
        if action_index(action) == number:
            return action
    raise ActionNotLegalError(f"action {number} ({index_action(number)}) is not legal now", rule="not_legal")


#: Seats a view encodes at most (docs/rules.md: a table seats 2 to 5).
MAX_SEATS: Final = 5
#: Numbers in a view: five card sets of 52, the hand sizes and match scores of five seats
#: (relative to the viewer), the stock's size, the phase (start, play) and the turn.
FEATURES: Final = 52 * 5 + MAX_SEATS * 2 + 4


def _cards(into: list[float], at: int, cards: Iterable[Card]) -> None:
    for card in cards:
        into[at + card.index] = 1.0


def encode_observation(observation: Observation) -> list[float]:
    """``observation`` as :data:`FEATURES` numbers from 0 to 1, seats counted from the viewer
    (0 is itself): its hand; every card in the discard pile; the top of the pile; every card
    on the table; the card it picked up this turn; each seat's hand size and match score
    (scaled); the stock's size; whether it is the start or play phase; the turn (scaled)."""
    x = [0.0] * FEATURES
    _cards(x, 0, observation.hand)
    _cards(x, 52, observation.discard)
    _cards(x, 104, observation.discard[-1:])
    _cards(x, 156, (c for meld in observation.table for c in meld.cards))
    if observation.picked_up is not None and observation.to_act == observation.seat:
        _cards(x, 208, (observation.picked_up,))
    seats = len(observation.hand_sizes)
    at = 260
    for offset in range(min(seats, MAX_SEATS)):
        seat = (observation.seat + offset) % seats
        x[at + offset] = observation.hand_sizes[seat] / 52
        if observation.scores:
            x[at + MAX_SEATS + offset] = min(1.0, max(0.0, 0.5 + observation.scores[seat] / 200))
    at += 2 * MAX_SEATS
    x[at] = observation.stock_size / 52
    x[at + 1] = 1.0 if observation.phase == "start" else 0.0
    x[at + 2] = 1.0 if observation.phase == "play" else 0.0
    x[at + 3] = min(1.0, observation.turn / 100)
    return x


def numbers(actions: Sequence[Action]) -> list[int]:
    """The numbers of ``actions``, in their order."""
    return [action_index(a) for a in actions]
