"""``heuristic``: greedy play plus card counting: it remembers what it has seen.

Everything here is computed from the observation alone (the discard pile, the table, the
hand sizes and the public history), so the bot keeps no state between decisions:

* **Live cards.** Cards not yet seen face up (:meth:`Observation.unseen_cards`) are the only
  ones anybody can still draw; cards an opponent took from the discard pile and still holds
  (:meth:`Observation.opponent_known_cards`) are in that opponent's hand.
* **Which cards to keep.** A card that could still become part of a meld (a pair, two suited
  cards one or two apart) is worth less than its face value: ``value * (1 - p)``, where ``p``
  is the chance that one of its *live* "outs" turns up within a few draws. It discards the card
  with the highest such residual value, so it keeps pairs and suited connectors while
  their outs are alive and lets them go once the outs are dead.
* **What not to give away.** A discard the next seat can lay off on the table, or that
  matches a card it picked up (same rank, or same suit within two), is held back unless it
  costs too much to keep.
* **Drawing.** It takes the top discard when that leaves a better hand than drawing an
  average live card from the stock would (a one-card look-ahead over every live card).
* **Going down.** It estimates each opponent's total from the cards known to be in their
  hand plus samples of live cards for the rest. Opponents throw their worst card away each
  turn, so the samples leave out cards above that opponent's last discard and keep the
  lowest of a few extra draws, more the more it has discarded (:meth:`opponent_model`). It
  goes down when the expected payoff of going down, settled exactly on those samples, is
  clearly positive (:attr:`drop_margin`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import ClassVar

from bots.greedy import card_order
from sdk.actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, Discard, Layoff
from sdk.bot import Bot
from sdk.cards import Card, hand_value
from sdk.melds import fits_table, hand_melds
from sdk.observation import Observation

WIN = -100.0  # evaluation of an emptied hand: better than any residual value


class CardCounter:
    """What one observation says about the cards still in play."""

    def __init__(self, obs: Observation, horizon: float) -> None:
        self.rules = obs.rules
        self.table = obs.table
        self.unseen = obs.unseen_cards()
        self.live = [False] * 52  # drawable by me at some point: stock or opponents' hands
        for card in self.unseen:
            self.live[card.index] = True
        # Chance that one given live card shows up within ``horizon`` of my draws.
        self.per_draw = min(1.0, horizon / max(1, len(self.unseen)))

    def outs(self, a: Card, b: Card) -> int:
        """Live cards that make a meld with the two cards ``a`` and ``b``."""
        live = self.live
        if a.rank == b.rank:
            return sum(live[s * 13 + a.rank - 1] for s in range(4))
        if a.suit_index != b.suit_index:
            return 0
        lo, hi = min(a.rank, b.rank), max(a.rank, b.rank)
        base = a.suit_index * 13 - 1  # + rank gives the index
        if hi - lo == 1:
            return (lo > 1 and live[base + lo - 1]) + (hi < 13 and live[base + hi + 1])
        if hi - lo == 2:
            return int(live[base + lo + 1])
        return 0

    def meld_chance(self, hand: Sequence[Card]) -> dict[Card, float]:
        """For each card: the chance its best partial meld in ``hand`` gets completed."""
        chance = dict.fromkeys(hand, 0.0)
        miss = 1.0 - self.per_draw
        for a, b in combinations(hand, 2):
            n = self.outs(a, b)
            if n:
                p = 1.0 - miss**n
                if p > chance[a]:
                    chance[a] = p
                if p > chance[b]:
                    chance[b] = p
        return chance

    def residuals(self, hand: Sequence[Card]) -> dict[Card, float]:
        """Each card's expected contribution to the hand total: value * (1 - meld chance)."""
        return {c: c.value * (1.0 - p) for c, p in self.meld_chance(hand).items()}

    def after_draw(self, hand: Iterable[Card], keep: Card | None = None) -> float:
        """Evaluation (lower is better) of ``hand`` just after a draw: lay down what melds, lay
        off what fits, discard the worst card (never ``keep``, the card just picked up, unless
        it is the last one) and sum the residual values of what is left."""
        cards = list(hand)
        while True:
            melds = hand_melds(cards, self.rules)
            if not melds:
                break
            for card in max(melds, key=hand_value):
                cards.remove(card)
        cards = [c for c in cards if not fits_table(c, self.table, self.rules)]
        if len(cards) <= 1:
            return WIN
        residual = self.residuals(cards)
        worst = max((c for c in cards if c is not keep), key=lambda c: (residual[c], card_order(c)))
        return sum(r for c, r in residual.items() if c is not worst)


class HeuristicBot(Bot):
    """Greedy play that counts cards, keeps meld builders and guesses opponents' totals."""

    name = "heuristic"
    version = "1.0.0"
    author = "Tonk Arena house bots"
    max_concurrent_matches = 32  # well under a millisecond a decision

    #: How many of my draws a partial meld can expect before the hand ends.
    horizon: ClassVar[float] = 3.0
    #: Samples of the opponents' hands behind each going-down decision.
    samples: ClassVar[int] = 200
    #: How many extra cards each opponent discard stands for when sampling its hand.
    keep_rate: ClassVar[float] = 0.5
    #: Go down when its expected payoff (chips per opponent) is at least this.
    drop_margin: ClassVar[float] = 0.5
    #: Take the top discard when it beats an average stock card by this many points.
    take_margin: ClassVar[float] = 0.0
    #: Points a discard must be worth to give the next seat a card it is building towards.
    danger: ClassVar[float] = 3.0

    def act(self, obs: Observation) -> Action | int:
        counter = CardCounter(obs, self.horizon)
        if obs.phase == "start":
            if obs.can_drop() and self.drop_value(obs, counter) >= self.drop_margin:
                return DROP
            return self.draw(obs, counter)
        melds = obs.melds_available()
        if melds:
            return max(melds, key=lambda m: (hand_value(m.cards), len(m.cards)))
        layoffs = obs.layoffs_available()
        if layoffs:
            return max(layoffs, key=_layoff_order)
        return self.discard(obs, counter)

    # -- going down -----------------------------------------------------------------------

    def drop_value(self, obs: Observation, counter: CardCounter) -> float:
        """Expected chips per opponent for going down now, settled on sampled opponent hands."""
        mine = obs.hand_value
        opponents = [s for s in range(len(obs.hand_sizes)) if s != obs.seat]
        models = [self.opponent_model(obs, counter, s) for s in opponents]
        sample = self.rng.sample
        total = 0.0
        done = 0
        while done < self.samples:
            for _ in range(25):
                totals = [known + sum(sorted(sample(pool, draws))[:k]) for known, k, draws, pool in models]
                if mine < min(totals):
                    total += len(opponents)
                else:
                    total -= 2 * sum(t <= mine for t in totals)
            done += 25
            if total / (done * len(opponents)) < self.drop_margin - 1.0:
                break  # clearly not worth it: spare the remaining samples
        return total / (done * len(opponents))

    def opponent_model(
        self, obs: Observation, counter: CardCounter, seat: int
    ) -> tuple[int, int, int, list[int]]:
        """How to sample ``seat``'s total: (known total, unknown cards, draws, values to draw from).

        Each turn an opponent sees one more card and throws its worst away, so after ``d``
        discards its unknown cards look like the lowest ``k`` of about ``k + keep_rate * d``
        live cards, none above its last discard (the one it just judged its worst).
        """
        known = obs.opponent_known_cards(seat)
        unknown = obs.hand_sizes[seat] - len(known)
        discards = [
            e.action.card.value for e in obs.history if e.seat == seat and isinstance(e.action, Discard)
        ]
        pool = [c.value for c in counter.unseen]
        if discards:
            below = [v for v in pool if v <= discards[-1]]
            if len(below) >= unknown:
                pool = below
        draws = min(len(pool), unknown + round(self.keep_rate * len(discards)))
        return hand_value(known), unknown, draws, pool

    # -- drawing --------------------------------------------------------------------------

    def draw(self, obs: Observation, counter: CardCounter) -> Action:
        legal = obs.legal_actions
        top = obs.top_discard
        if DRAW_STOCK not in legal:
            return DRAW_DISCARD if DRAW_DISCARD in legal else legal[0]
        if top is None or DRAW_DISCARD not in legal:
            return DRAW_STOCK
        hand = list(obs.hand)
        take = counter.after_draw([*hand, top], keep=top)
        if take == WIN:
            return DRAW_DISCARD
        # A card that meets nothing in the hand or on the table just adds its value: those
        # are evaluated once per value.
        by_value: dict[int, float] = {}
        stock = 0.0
        for card in counter.unseen:
            if fits_table(card, obs.table, obs.rules) or any(_related(card, c) for c in hand):
                stock += counter.after_draw([*hand, card])
            else:
                if card.value not in by_value:
                    by_value[card.value] = counter.after_draw([*hand, card])
                stock += by_value[card.value]
        stock /= max(1, len(counter.unseen))
        return DRAW_DISCARD if take < stock - self.take_margin else DRAW_STOCK

    # -- discarding -----------------------------------------------------------------------

    def discard(self, obs: Observation, counter: CardCounter) -> Action:
        options = obs.discards_available()
        residual = counter.residuals(obs.hand)
        after = (obs.seat + 1) % len(obs.hand_sizes)
        building = obs.opponent_known_cards(after)

        def cost(action: Discard) -> tuple[float, tuple[int, int, int]]:
            card = action.card
            score = residual[card]
            if fits_table(card, obs.table, obs.rules) or any(_related(card, k) for k in building):
                score -= self.danger
            return (score, card_order(card))

        return max(options, key=cost)


def _related(a: Card, b: Card) -> bool:
    """Whether ``a`` and ``b`` could sit in one meld (same rank, or same suit within two)."""
    return a.rank == b.rank or (a.suit_index == b.suit_index and abs(a.rank - b.rank) <= 2)


def _layoff_order(layoff: Layoff) -> tuple[tuple[int, int, int], int]:
    return (card_order(layoff.card), -layoff.onto)
