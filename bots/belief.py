"""``belief``: the search bot planning against a belief fitted to how opponents play.

:mod:`bots.search` samples each opponent's unknown cards from a one-parameter model of card
values. This bot keeps its search, rollouts and go-down rule, and replaces the belief it
samples from (:class:`BeliefSampler`): each unseen card gets, per opponent, a weight read off
everything the seat saw that opponent do, and the opponent's unknown cards are drawn
without replacement in proportion to those weights.

**What moves the belief** (:class:`BeliefModel`; log-weights, fitted by logistic regression
on which unseen cards opponents really held, in heuristic-bot play at 2 and 3 seats):

* *How long it has been discarding*, per card value: after a few discards high cards are
  rare (a ten or a face card after 4 discards is about 5 times less likely than an ace) but
  the low and middle values are about even, which the search bot's exponential model gets
  wrong both ways.
* *Its last discard*: a card above it is 3 to 12 times less likely (it kept the card it
  judged better).
* *Discard-pile passes*: a player who drew from the stock over a card did not want it, so
  cards of that rank are less likely in its hand (and suited neighbours slightly).
* *Its discards*: cards of a rank it threw away are less likely (it would have kept a pair).
* *Its pick-ups*: suited neighbours of a card it took from the pile are more likely (it took
  the card to build a spread). The picked card itself, while unplayed, is known.
* *Not going down*: a world in which an opponent would already have gone down is redrawn
  (as in :mod:`bots.search`).

Every world stays consistent with the observation: the belief only changes how likely each
consistent world is. On the heuristic play it was fitted on, the per-card log loss falls
from 0.332 (the search bot's model) to 0.316 heads-up (uniform: 0.337); on other deals
(``bench/calibration.py``) its "am I lowest?" scores a Brier of 0.105 against the search
bot's 0.108 at go-down decisions. That sharper reading did not make it play measurably
better than the search bot (``bench/strength.py``), so it is not a house bot.

**Budget.** It counts its budget in rollout turns (:attr:`SearchBot.work_per_ms`), not time,
so it plays the same on a busy machine as on an idle one (``tonk check`` tests that), and
thinks for half the match's decision deadline at most.

Going down is decided by its expected value over the worlds drawn from this belief, settled
exactly, as in :mod:`bots.search`; draws and discards by the same paired rollouts.
"""

from __future__ import annotations

import math
import random
from typing import ClassVar

from bots.search import Sampler, SearchBot
from sdk.actions import Discard, Draw
from sdk.cards import Card
from sdk.observation import Observation

#: Log-weight by (discards made, capped at 7) and card value 1..10, relative to the row's best.
VALUE_LOG = (
    (-0.05, -0.02, -0.05, -0.06, -0.06, -0.05, -0.01, -0.04, 0.00, -0.02),
    (-0.20, -0.18, -0.11, -0.12, -0.06, -0.04, 0.00, -0.00, -0.05, -0.37),
    (-0.26, -0.17, -0.14, -0.10, -0.06, -0.01, 0.00, -0.01, -0.10, -0.74),
    (-0.28, -0.15, -0.17, -0.11, -0.07, -0.08, 0.00, -0.02, -0.21, -1.17),
    (-0.22, -0.12, -0.10, -0.06, -0.02, 0.00, -0.04, -0.11, -0.46, -1.68),
    (-0.16, -0.04, -0.04, -0.07, -0.01, -0.02, 0.00, -0.29, -0.95, -2.63),
    (-0.10, -0.04, -0.00, -0.07, 0.00, -0.09, -0.16, -0.74, -1.91, -3.50),
    (-0.04, -0.03, 0.00, -0.07, -0.19, -0.52, -0.86, -1.98, -4.27, -5.23),
)
#: Log-weight of a card above the value of the last discard, by discards made (capped at 7).
ABOVE_LOG = (0.0, -1.05, -1.82, -2.39, -2.53, -2.37, -1.88, -1.40)
#: Log-weight per earlier event relating the card to one the opponent (passed, discarded,
#: picked up), by relation: same rank, same suit one apart, same suit two apart.
PASSED_LOG = (-0.37, -0.16, -0.04)
DISCARDED_LOG = (-0.58, -0.19, -0.08)
PICKED_LOG = (0.02, 0.22, 0.01)


def relation(a: Card, b: Card) -> int:
    """0: same rank; 1: same suit, adjacent; 2: same suit, two apart; -1: none of these."""
    if a.rank == b.rank:
        return 0
    if a.suit_index == b.suit_index:
        gap = abs(a.rank - b.rank)
        if gap <= 2:
            return gap
    return -1


class SeatEvidence:
    """What one opponent did in the seat's sight: cards it passed, discarded and picked up."""

    __slots__ = ("discarded", "passed", "picked")

    def __init__(self) -> None:
        self.passed: list[Card] = []
        self.discarded: list[Card] = []
        self.picked: list[Card] = []


def evidence(obs: Observation) -> list[SeatEvidence]:
    """Per seat, from the public history: the top discard it drew over (the pile's top at each
    stock draw, replayed forward from the pile as it was dealt), its discards and pick-ups."""
    pile = list(obs.discard)
    for event in reversed(obs.history):  # undo the history to recover the dealt pile
        if isinstance(event.action, Discard):
            if pile:  # under stock_reshuffle the pile was turned over: evidence goes soft
                pile.pop()
        elif isinstance(event.action, Draw) and event.action.source == "discard" and event.card is not None:
            pile.append(event.card)
    seats = [SeatEvidence() for _ in obs.hand_sizes]
    for event in obs.history:
        action, mine = event.action, seats[event.seat]
        if isinstance(action, Draw):
            if action.source == "discard":
                if pile:
                    pile.pop()
                if event.card is not None:
                    mine.picked.append(event.card)
            elif pile:
                mine.passed.append(pile[-1])
        elif isinstance(action, Discard):
            pile.append(action.card)
            mine.discarded.append(action.card)
    return seats


class BeliefModel:
    """Weights of unseen cards for one opponent (see the module docstring)."""

    MAX_DISCARDS = len(VALUE_LOG) - 1

    def weights(self, pool: list[Card], seen: SeatEvidence) -> list[float]:
        d = min(len(seen.discarded), self.MAX_DISCARDS)
        cap = seen.discarded[-1].value if seen.discarded else 10
        row = VALUE_LOG[d]
        out = []
        for card in pool:
            log = row[card.value - 1]
            if card.value > cap:
                log += ABOVE_LOG[d]
            for table, cards in (
                (PASSED_LOG, seen.passed),
                (DISCARDED_LOG, seen.discarded),
                (PICKED_LOG, seen.picked),
            ):
                for other in cards:
                    r = relation(card, other)
                    if r >= 0:
                        log += table[r]
            out.append(math.exp(log))
        return out


MODEL = BeliefModel()


class BeliefSampler(Sampler):
    """:class:`bots.search.Sampler` whose modelled worlds come from :class:`BeliefModel`."""

    def __init__(self, obs: Observation, drop_margin: float = 0.5) -> None:
        super().__init__(obs, drop_margin)
        seen = evidence(obs)
        # Per opponent, 1 / weight of each pool card: the exponent of its sampling key.
        self.inverse: list[list[float]] = [
            [] if s == obs.seat else [1.0 / w for w in MODEL.weights(self.pool, seen[s])]
            for s in range(len(obs.hand_sizes))
        ]

    def _deal_modelled(self, rng: random.Random) -> tuple[list[list[Card]], list[Card]]:
        pool = self.pool
        order = list(range(len(pool)))
        rng.shuffle(order)  # the stock's order, and the tie order of equal keys
        taken = [False] * len(pool)
        hands: list[list[Card]] = []
        for seat, missing in enumerate(self.missing):
            if seat == self.obs.seat:
                hands.append(list(self.obs.hand))
                continue
            inverse = self.inverse[seat]
            # Weighted sampling without replacement (Efraimidis-Spirakis keys u ** (1 / w)).
            keyed = sorted(
                ((rng.random() ** inverse[i], i) for i in order if not taken[i]), reverse=True
            )
            picks = [i for _, i in keyed[:missing]]
            for i in picks:
                taken[i] = True
            hands.append(self.known[seat] + [pool[i] for i in picks])
        return hands, [pool[i] for i in order if not taken[i]]


class BeliefBot(SearchBot):
    """The search bot sampling from :class:`BeliefSampler`; see the module docstring."""

    name = "belief"
    version = "1.0.0"
    author = "Tonk Arena house bots"

    opponent_model: ClassVar[bool] = True
    #: Its budget counts rollout turns, not time (about 57 a ms of CPU on the bench machine),
    #: so it plays the same on a busy machine: ``tonk check`` asks for that.
    work_per_ms: ClassVar[float | None] = 50.0

    def sampler(self, obs: Observation) -> Sampler:
        return BeliefSampler(obs, self.rollout_drop_margin)
