"""``greedy``: keep the hand's point total as low as possible *right now*.

The simplest bot that plays Tonk on purpose, and the one to read first. Each decision
looks only at its own hand and the top of the discard pile:

* **Start of the turn.** Go down when the hand totals :attr:`GreedyBot.drop_at` or less.
  Otherwise take the top discard when it completes a meld with the hand, fits a spread on
  the table, or is low (:attr:`GreedyBot.take_at` or less, and lower than the card it would
  replace); else draw from the stock.
* **After the draw.** Lay down the meld worth the most points, then every lay-off it can,
  one action per call, then discard the highest card it is allowed to.

It ignores what the other seats hold, which is what :mod:`bots.heuristic` adds.

    tonk serve bots.greedy:GreedyBot --port 50052
"""

from __future__ import annotations

from typing import ClassVar

from sdk.actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, Discard, Layoff, Meld
from sdk.bot import Bot
from sdk.cards import Card, hand_value
from sdk.melds import completes_meld, fits_table
from sdk.observation import Observation


def card_order(card: Card) -> tuple[int, int, int]:
    """Highest value first, then highest rank (K before 10: same value, harder to meld
    into a spread), then a fixed suit order so ties never depend on hand order."""
    return (card.value, card.rank, card.index)


class GreedyBot(Bot):
    """Minimise the hand total now; go down when it is under a fixed threshold."""

    name = "greedy"
    version = "1.0.0"
    author = "Tonk Arena house bots"
    max_concurrent_matches = 64  # a few microseconds a decision

    #: Go down at the start of a turn when the hand totals this or less.
    drop_at: ClassVar[int] = 9
    #: Take a discard worth this or less (when it is lower than the card it would replace).
    take_at: ClassVar[int] = 3

    def act(self, obs: Observation) -> Action | int:
        if obs.phase == "start":
            return self.start_of_turn(obs)
        return self.play(obs)

    def start_of_turn(self, obs: Observation) -> Action:
        if obs.can_drop() and obs.hand_value <= self.drop_at:
            return DROP
        top = obs.top_discard
        if top is not None and DRAW_DISCARD in obs.legal_actions and self.wants(top, obs):
            return DRAW_DISCARD
        if DRAW_STOCK in obs.legal_actions:
            return DRAW_STOCK
        return obs.legal_actions[-1]  # only the discard pile (or only dropping) is left

    def wants(self, top: Card, obs: Observation) -> bool:
        if completes_meld(top, obs.hand, obs.rules) or fits_table(top, obs.table, obs.rules):
            return True
        highest = max(c.value for c in obs.hand)
        return top.value <= self.take_at and top.value < highest

    def play(self, obs: Observation) -> Action:
        melds = obs.melds_available()
        if melds:
            return max(melds, key=_meld_points)
        layoffs = obs.layoffs_available()
        if layoffs:
            return max(layoffs, key=_layoff_order)
        return max(obs.discards_available(), key=_discard_order)


def _meld_points(meld: Meld) -> tuple[int, int]:
    return (hand_value(meld.cards), len(meld.cards))


def _layoff_order(layoff: Layoff) -> tuple[tuple[int, int, int], int]:
    return (card_order(layoff.card), -layoff.onto)


def _discard_order(discard: Discard) -> tuple[int, int, int]:
    return card_order(discard.card)
