"""``search``: determinised Monte Carlo search ("perfect information Monte Carlo").

At each decision that is a real choice (go down or not, where to draw from, what to
discard) the bot:

1. **Samples worlds** (:class:`Sampler`): full hands consistent with its observation. Its own
   hand, the discard pile and the table are known; an opponent holds the cards it took from
   the discard pile and has not played since; every other card that has not been seen face up
   is dealt to the opponents' remaining slots (hand sizes are known) and the rest is the
   stock. Each world is a real :class:`~sdk.engine.HandState`, put in the observation's phase
   with its picked-up card, turn count and locks.
2. **Plays each candidate action in every world** and finishes the hand with a fast
   rollout policy for all seats (:class:`RolloutPolicy`). The policy reads only what its seat
   could know (its own hand, the table, hand sizes, discards), never the sampled hands of the
   others, so rollouts do not "peek". Going down is settled exactly on the sampled hands.
   All candidates share each world (common random numbers), so they are compared paired.
3. **Chooses.** Among the ways to play on, the heuristic bot's own choice
   (:mod:`bots.heuristic`, the guide), unless another beats it by :attr:`SearchBot.switch_z`
   standard errors of the paired difference: with a few hundred noisy rollouts, a small
   observed edge is more often noise than knowledge, and the guide plays draws and discards
   better than the rollout policy does. It goes down instead when that is worth at least
   :attr:`SearchBot.drop_floor` chips per opponent, settled exactly in the sampled worlds
   (0.25: heads-up, it expects to be lowest at least 3 times in 4). That is below the
   heuristic bot's bar: heads-up most hands are a race to go down first (nine in ten end
   with a winning drop), and waiting for more certainty lets the opponent go first. Playing
   on is not weighed against going down by default (:attr:`SearchBot.compare_drop`):
   rollouts play worse than the bot will, which biases that comparison, and in duplicate
   play the fixed bar did as well or better.

**Sampling.** With ``opponent_model = False`` the unseen cards are dealt uniformly over what
is consistent with the observation (plain PIMC, :meth:`Sampler.sample`). With it on (the
default, :meth:`Sampler.sample_modelled`) each opponent's unknown cards are drawn from the
same unseen cards, but in proportion to a model of how players keep cards
(:class:`CardModel`: rarely above the last card it discarded, lower the more it has
discarded; fitted on house-bot play), and a world in which an opponent would already have
gone down on its last turn is redrawn a few times. Every world is consistent with the
observation either way; the model only changes how likely each one is, which is what the
go-down decision turns on (uniform worlds overrate opponents' totals badly: a Brier score of
0.22 for "am I lowest?" against 0.12 with the model, on positions from play against the
heuristic bot).

**Budget.** ``budget_ms`` (default 200; the ``TONK_SEARCH_BUDGET_MS`` environment variable
overrides the class default) is spent as work, :attr:`SearchBot.work_per_ms` rollout turns a
ms (``budget_use`` of it), so the number of worlds does not depend on the machine's load;
the clock only stops a search past :attr:`SearchBot.safety` of the match's decision deadline
(``work_per_ms = None``: the budget is wall time, the search stopping before a rollout
predicted to overrun it). A decision deadline tighter than the budget shrinks it to
:attr:`SearchBot.deadline_share` of the deadline. ``iterations`` bounds the number of worlds.
Randomness comes only from ``self.rng`` (one draw per decision seeds that decision's
generator), so the bot is deterministic unless the clock stops it.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Sequence
from typing import ClassVar

from bots.heuristic import CardCounter, HeuristicBot
from sdk.actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, Discard, Layoff, Meld
from sdk.bot import Bot, MatchInfo
from sdk.cards import DECK, Card
from sdk.engine import HandState, Phase
from sdk.melds import completes_meld, fits_table, hand_melds
from sdk.observation import Observation

BUDGET_ENV = "TONK_SEARCH_BUDGET_MS"
_SQRT_HALF = math.sqrt(0.5)


class CardModel:
    """How likely an opponent's unknown card is to have each value.

    Relative likelihood ``exp(-tilt * discards * value)``, times ``leak`` above the value of
    the last card it discarded: players throw away their worst card each turn, so what they
    keep is below it, and lower the longer they have been at it. Fitted on heuristic play
    (1% of unknown cards were above the last discard; the mean fell by about 0.035 per point
    per discard).
    """

    MAX_DISCARDS = 10
    VALUES = tuple(range(1, 11))
    COUNTS = tuple(sum(c.value == v for c in DECK) for v in VALUES)

    def __init__(self, tilt: float = 0.035, leak: float = 0.05) -> None:
        self.tilt = tilt
        self.leak = leak
        # Mean and spread of one unknown card for each (discards, last discard value); the
        # rollouts' go-down rule reads these.
        self.mean: list[list[float]] = []
        self.sd: list[list[float]] = []
        for d in range(self.MAX_DISCARDS + 1):
            means, sds = [], []
            for cap in range(11):
                weights = [
                    n * self.likelihood(v, d, cap or 10)
                    for v, n in zip(self.VALUES, self.COUNTS, strict=True)
                ]
                total = sum(weights)
                mean = sum(w * v for w, v in zip(weights, self.VALUES, strict=True)) / total
                var = sum(w * (v - mean) ** 2 for w, v in zip(weights, self.VALUES, strict=True)) / total
                means.append(mean)
                sds.append(math.sqrt(var))
            self.mean.append(means)
            self.sd.append(sds)

    def likelihood(self, value: int, discards: int, cap: int) -> float:
        w = math.exp(-self.tilt * min(discards, self.MAX_DISCARDS) * value)
        return w if value <= cap else w * self.leak


MODEL = CardModel()


def public_drop_value(
    mine: float, seat: int, sizes: Sequence[int], discards: Sequence[int], caps: Sequence[int]
) -> float:
    """Expected chips per opponent for ``seat`` going down with total ``mine``, judged from
    public information only: each opponent's total is taken as normal, with the mean and
    spread of its hand size's worth of :class:`CardModel` cards."""
    top = CardModel.MAX_DISCARDS
    mine += 0.5  # an opponent must be strictly higher
    win = 1.0
    under = 0.0  # expected number of opponents at or under ``mine``
    for o, k in enumerate(sizes):
        if o == seat:
            continue
        d = min(discards[o], top)
        z = (mine - k * MODEL.mean[d][caps[o]]) / (MODEL.sd[d][caps[o]] * math.sqrt(k))
        below = 0.5 * (1.0 + math.erf(z * _SQRT_HALF))
        win *= 1.0 - below
        under += below
    opponents = len(sizes) - 1
    return (win * opponents - 2.0 * (1.0 - win) * max(1.0, under)) / opponents


class Public:
    """The public facts the rollout policy uses: per seat, discards made and the value of the
    last one (0 = none yet)."""

    __slots__ = ("caps", "discards")

    def __init__(self, discards: list[int], caps: list[int]) -> None:
        self.discards = discards
        self.caps = caps

    @classmethod
    def of(cls, obs: Observation) -> Public:
        players = len(obs.hand_sizes)
        public = cls([0] * players, [0] * players)
        for event in obs.history:
            if isinstance(event.action, Discard):
                public.discarded(event.seat, event.action.card)
        return public

    def discarded(self, seat: int, card: Card) -> None:
        self.discards[seat] += 1
        self.caps[seat] = card.value

    def copy(self) -> Public:
        return Public(list(self.discards), list(self.caps))


class Sampler:
    """Deals the cards ``obs`` cannot see, consistently with it (see the module docstring).

    :meth:`sample` deals them uniformly; :meth:`sample_modelled` weights each opponent's
    unknown cards by :data:`MODEL` and redraws worlds where an opponent would have gone down.
    Under the ``stock_reshuffle`` variant the recycled stock's known order is not used: those
    cards are dealt like the other unseen ones.
    """

    def __init__(self, obs: Observation, drop_margin: float = 0.5) -> None:
        self.obs = obs
        seats = range(len(obs.hand_sizes))
        self.known = [[] if s == obs.seat else obs.opponent_known_cards(s) for s in seats]
        placed: set[Card] = set(obs.hand) | set(obs.discard)
        for meld in obs.table:
            placed.update(meld.cards)
        for cards in self.known:
            placed.update(cards)
        self.pool = [c for c in DECK if c not in placed]  # deck order, so only the rng decides
        self.missing = [0 if s == obs.seat else obs.hand_sizes[s] - len(self.known[s]) for s in seats]
        self.public = Public.of(obs)
        self.drop_margin = drop_margin
        self.last_turns = [None if s == obs.seat else _last_turn(obs, s) for s in seats]
        self.redraws = 3  # tries per world to avoid an opponent that would have gone down

    # -- dealing --------------------------------------------------------------------------

    def sample(self, rng: random.Random) -> HandState:
        """A world with the unseen cards dealt uniformly at random."""
        pool = list(self.pool)
        rng.shuffle(pool)
        hands: list[list[Card]] = []
        used = 0
        for seat, missing in enumerate(self.missing):
            if seat == self.obs.seat:
                hands.append(list(self.obs.hand))
            else:
                hands.append(self.known[seat] + pool[used : used + missing])
                used += missing
        return self.build(hands, pool[used:])

    def sample_modelled(self, rng: random.Random) -> HandState:
        """A world with each opponent's unknown cards drawn in proportion to :data:`MODEL`."""
        for _ in range(self.redraws):
            hands, stock = self._deal_modelled(rng)
            if not self._would_have_dropped(hands):
                break
        return self.build(hands, stock)

    def _deal_modelled(self, rng: random.Random) -> tuple[list[list[Card]], list[Card]]:
        pool = list(self.pool)
        rng.shuffle(pool)  # the stock's order, and the tie order of equal keys
        public = self.public
        chosen: set[Card] = set()
        hands: list[list[Card]] = []
        for seat, missing in enumerate(self.missing):
            if seat == self.obs.seat:
                hands.append(list(self.obs.hand))
                continue
            d, cap = public.discards[seat], public.caps[seat] or 10
            # Weighted sampling without replacement (Efraimidis-Spirakis keys u ** (1 / w)).
            keyed = sorted(
                (
                    (rng.random() ** (1.0 / MODEL.likelihood(c.value, d, cap)), c)
                    for c in pool
                    if c not in chosen
                ),
                key=_first,
                reverse=True,
            )
            cards = [c for _, c in keyed[:missing]]
            chosen.update(cards)
            hands.append(self.known[seat] + cards)
        return hands, [c for c in pool if c not in chosen]

    def _would_have_dropped(self, hands: list[list[Card]]) -> bool:
        """Whether some opponent, holding its sampled cards, would have gone down at the start
        of its last turn by the rollouts' own rule (so it would not be playing now)."""
        for seat, turn in enumerate(self.last_turns):
            if turn is None:
                continue
            played, drawn, sizes, discards, caps = turn
            now = sum([c.value for c in hands[seat]]) + played
            # A card drawn from the stock is one of its unknown cards now: assume the highest
            # (the most favourable case for not having gone down).
            hidden = hands[seat][len(self.known[seat]) :]
            took = drawn if drawn is not None else max([c.value for c in hidden], default=0)
            if public_drop_value(now - took, seat, sizes, discards, caps) >= self.drop_margin:
                return True
        return False

    def build(self, hands: list[list[Card]], stock: list[Card]) -> HandState:
        obs = self.obs
        state = HandState.from_position(
            hands,
            obs.discard,
            stock,
            obs.table,
            dealer=obs.dealer,
            to_act=obs.to_act,
            rules=obs.rules,
            start="position",
        )
        # from_position starts a fresh turn: put the world where the observation is.
        state.phase = Phase(obs.phase)
        state.picked = obs.picked_up
        state.turns = obs.turn
        state.locked = set(obs.locked)
        return state


_LastTurn = tuple[int, int | None, list[int], list[int], list[int]]


def _last_turn(obs: Observation, seat: int) -> _LastTurn | None:
    """What ``seat``'s last complete turn tells: (the value it played from its hand, the value
    of the card it drew if public, and hand sizes, discard counts and last-discard values at
    the start of that turn), or None if it has not had a turn."""
    history = obs.history
    players = len(obs.hand_sizes)
    # Forward: the public facts just before each event.
    public = Public([0] * players, [0] * players)
    before: list[tuple[list[int], list[int]]] = []
    for event in history:
        before.append((list(public.discards), list(public.caps)))
        if isinstance(event.action, Discard):
            public.discarded(event.seat, event.action.card)
    # Backward: undo hand sizes to the draw that began the seat's last finished turn.
    sizes = list(obs.hand_sizes)
    played = 0
    ended = False
    for i in range(len(history) - 1, -1, -1):
        event = history[i]
        action = event.action
        s = event.seat
        if isinstance(action, Discard):
            sizes[s] += 1
            if s == seat:
                ended = True
                played += action.card.value
        elif isinstance(action, Meld):
            sizes[s] += len(action.cards)
            if s == seat and ended:
                played += sum([c.value for c in action.cards])
        elif isinstance(action, Layoff):
            sizes[s] += 1
            if s == seat and ended:
                played += action.card.value
        elif action.kind == "draw":
            sizes[s] -= 1
            if s == seat and ended:
                drawn = event.card.value if event.card is not None else None
                discards, caps = before[i]
                return played, drawn, sizes, discards, caps
    return None


class RolloutPolicy:
    """A fast greedy-like policy for every seat of a sampled world.

    Go down when :func:`public_drop_value` says it pays; take the discard when it completes a
    meld, fits the table or is low; lay down the biggest meld and every lay-off; discard the
    highest card, a card with a partner (pair, suited within two) counting at 60%.
    """

    def __init__(self, public: Public, drop_margin: float, take_at: int = 3) -> None:
        self.public = public
        self.drop_margin = drop_margin
        self.take_at = take_at

    def act(self, state: HandState) -> Action:
        return self.start(state) if state.phase is Phase.START else self.play(state)

    def start(self, state: HandState) -> Action:
        seat = state.to_act
        hand = state.hands[seat]
        if seat not in state.locked:
            mine = sum([c.value for c in hand])
            sizes = [len(h) for h in state.hands]
            public = self.public
            if public_drop_value(mine, seat, sizes, public.discards, public.caps) >= self.drop_margin:
                return DROP
        if not state.stock_size:
            return DRAW_DISCARD if state.discard else DROP
        if state.discard:
            top = state.discard[-1]
            if top.value <= self.take_at and top.value < max([c.value for c in hand]):
                return DRAW_DISCARD
            if fits_table(top, state.table, state.rules) or completes_meld(top, hand, state.rules):
                return DRAW_DISCARD
        return DRAW_STOCK

    def play(self, state: HandState) -> Action:
        hand = state.hands[state.to_act]
        rules = state.rules
        if _may_meld(hand):
            melds = hand_melds(hand, rules)
            if melds:
                return Meld(max(melds, key=_points))
        for i, meld in enumerate(state.table):
            for card in hand:
                if meld.accepts(card, rules):
                    return Layoff(card, i)
        return Discard(self.discard_choice(hand, state.picked, rules.discard_pickup_may_return))

    @staticmethod
    def discard_choice(hand: Sequence[Card], picked: Card | None, may_return: bool) -> Card:
        best = hand[0]
        best_score = -1.0
        for card in hand:
            if card is picked and not may_return and len(hand) > 1:
                continue
            score = float(card.value)
            rank, suit = card.rank, card.suit_index
            for other in hand:
                if other is not card and (
                    other.rank == rank or (other.suit_index == suit and -2 <= other.rank - rank <= 2)
                ):
                    score *= 0.6
                    break
            if score > best_score or (score == best_score and card.index > best.index):
                best, best_score = card, score
        return best

    def finish(self, state: HandState, seat: int, max_turns: int) -> float:
        """Play ``state`` out; ``seat``'s payoff (a showdown on totals if it runs too long)."""
        stop = state.turns + max_turns
        public = self.public
        while state.outcome is None:
            if state.turns >= stop:
                return _showdown(state, seat)
            actor = state.to_act
            action = self.act(state)
            state.apply(action)
            if isinstance(action, Discard):
                public.discarded(actor, action.card)
        return float(state.outcome.payoffs[seat])


def _may_meld(hand: Sequence[Card]) -> bool:
    """Cheap necessary condition for a meld: three of a rank, or three of a suit."""
    if len(hand) < 3:
        return False
    ranks = [c.rank for c in hand]
    suits = [c.suit_index for c in hand]
    return any(ranks.count(r) >= 3 for r in ranks) or any(suits.count(s) >= 3 for s in suits)


def _showdown(state: HandState, seat: int) -> float:
    totals = state.totals()
    low = min(totals)
    winners = [s for s, t in enumerate(totals) if t == low]
    if seat in winners:
        return float(len(totals) - len(winners))
    return -float(len(winners))


def _points(cards: tuple[Card, ...]) -> tuple[int, int]:
    return (sum([c.value for c in cards]), len(cards))


def _paired_sd(totals: list[float], diff_sq: list[list[float]], n: int, i: int, j: int) -> float:
    """Standard deviation of the per-world difference between candidates ``i`` and ``j``."""
    mean = (totals[i] - totals[j]) / n
    return math.sqrt(max(0.0, diff_sq[i][j] / n - mean * mean))


def _first(item: tuple[float, Card]) -> float:
    return item[0]


class SearchBot(Bot):
    """Determinised rollouts over sampled hidden cards; see the module docstring."""

    name = "search"
    version = "1.0.0"
    author = "Tonk Arena house bots"
    max_concurrent_matches = 4  # it searches for its whole budget, on one core

    #: Wall-time budget per decision in ms; 0 means no time limit (then set ``iterations``).
    #: ``TONK_SEARCH_BUDGET_MS`` overrides it for bots built without an explicit budget.
    budget_ms: ClassVar[float] = 200.0
    #: Most worlds per decision (None: as many as the time budget allows).
    iterations: ClassVar[int | None] = None
    #: Fraction of the budget the search aims to use (the rest is the safety margin).
    budget_use: ClassVar[float] = 0.85
    #: Deal opponents' unknown cards by :class:`CardModel` (False: uniformly).
    opponent_model: ClassVar[bool] = True
    #: Standard errors by which a candidate must beat the guide's (the heuristic bot's) choice.
    switch_z: ClassVar[float] = 2.0
    #: Go down when its expected payoff over the worlds is at least this (chips per opponent).
    drop_floor: ClassVar[float] = 0.25
    #: Also ask going down to beat playing on (as the rollouts estimate it) by ``drop_bias``
    #: chips per opponent.
    compare_drop: ClassVar[bool] = False
    drop_bias: ClassVar[float] = 0.0
    #: Rollout seats go down when :func:`public_drop_value` is at least this.
    rollout_drop_margin: ClassVar[float] = 0.5
    #: Rollouts stop after this many turns and settle as a showdown.
    max_rollout_turns: ClassVar[int] = 40
    #: Whether draws and discards are searched (going down always is).
    search_draws: ClassVar[bool] = True
    search_discards: ClassVar[bool] = True
    #: Rollout turns one ms of the budget buys (None: stop on the clock). Counting work
    #: instead of time makes the number of worlds, and so every choice, the same on a busy
    #: machine as on an idle one (a duplicate deal's rotations, ``tonk check``'s determinism
    #: test); the clock then only stops a search that runs past :attr:`safety` of the match's
    #: decision deadline (a badly overloaded machine). About 57 turns a ms of CPU on the bench
    #: machine.
    work_per_ms: ClassVar[float | None] = 50.0
    #: Share of the decision deadline the budget may take, and after which the clock stops a
    #: work-budgeted search.
    deadline_share: ClassVar[float] = 0.5
    safety: ClassVar[float] = 0.8

    def __init__(self, budget_ms: float | None = None, iterations: int | None = None) -> None:
        super().__init__()
        if budget_ms is None:
            env = os.environ.get(BUDGET_ENV)
            budget_ms = float(env) if env else type(self).budget_ms
        self.max_iterations = iterations if iterations is not None else type(self).iterations
        if budget_ms <= 0 and self.max_iterations is None:
            raise ValueError("a search without a time budget needs an iteration budget")
        self.budget = budget_ms / 1000.0 if budget_ms > 0 else None
        self.hard_stop = self.budget  # seconds of wall time after which a work budget gives up
        self.last_iterations = 0  # worlds searched at the last decision (for tests and benches)
        self.last_work = 0  # rollout turns (and world-candidate pairs) the last decision spent
        self.guide = HeuristicBot()  # its draws and discards are the defaults the search tests
        self.clock = time.perf_counter  # the budget's clock (tests may swap in a CPU clock)
        # (wall, CPU) seconds of every decision of the match: on a loaded machine the wall
        # time also counts the waits for a CPU, which benches want to tell apart.
        self.timings: list[tuple[float, float]] = []

    def on_match_start(self, info: MatchInfo) -> None:
        # A tighter clock than the budget assumes: think for a share of it only.
        deadline = info.decision_deadline_ms / 1000.0
        if self.budget is not None and deadline > 0:
            self.budget = min(self.budget, self.deadline_share * deadline)
            self.hard_stop = max(self.budget, self.safety * deadline)

    def act(self, obs: Observation) -> Action | int:
        wall, cpu = time.perf_counter(), time.thread_time()
        action = self.decide(obs)
        self.timings.append((time.perf_counter() - wall, time.thread_time() - cpu))
        return action

    def decide(self, obs: Observation) -> Action:
        started = self.clock()
        legal = obs.legal_actions
        self.last_iterations = 0
        self.last_work = 0
        if len(legal) == 1:
            return legal[0]
        rng = random.Random(self.rng.getrandbits(64))
        candidates = self.candidates(obs, self.guide_choice(obs))
        if len(candidates) == 1:
            return candidates[0]  # a meld or a lay-off: nothing to sample worlds for
        sampler = self.sampler(obs)
        policy = RolloutPolicy(sampler.public, self.rollout_drop_margin)
        return self.search(obs, sampler, policy, candidates, rng, started)

    def sampler(self, obs: Observation) -> Sampler:
        """Where this decision's worlds come from (``bench/oracle.py`` swaps in the true
        hands to measure how much better perfect knowledge would do)."""
        return Sampler(obs, self.rollout_drop_margin)

    def guide_choice(self, obs: Observation) -> Action:
        """The heuristic bot's way to play on: its draw at the start of a turn (whether it
        would go down is the search's question), else its meld, lay-off or discard."""
        guide = self.guide
        if obs.phase == "start":
            return guide.draw(obs, CardCounter(obs, guide.horizon))
        reply = guide.act(obs)
        return obs.legal_actions[reply] if isinstance(reply, int) else reply

    def candidates(self, obs: Observation, default: Action) -> list[Action]:
        """The actions worth comparing, the guide's choice first."""
        options: list[Action]
        if obs.phase == "start":
            options = [a for a in (DRAW_STOCK, DRAW_DISCARD, DROP) if a in obs.legal_actions]
            if not self.search_draws:
                options = [a for a in options if a.kind == "drop" or a == default]
        elif default.kind != "discard" or not self.search_discards:
            return [default]  # melds and lay-offs are always played
        else:
            options = list(obs.discards_available())
        return [default] + [a for a in options if a != default]

    def search(
        self,
        obs: Observation,
        sampler: Sampler,
        base: RolloutPolicy,
        candidates: list[Action],
        rng: random.Random,
        started: float,
    ) -> Action:
        seat = obs.seat
        n = len(candidates)
        totals = [0.0] * n
        diff_sq = [[0.0] * n for _ in range(n)]  # sums of squared paired differences
        deadline = None if self.budget is None else started + self.budget * self.budget_use
        work_budget = math.inf
        spent = 0
        if self.work_per_ms is not None and self.budget is not None and self.hard_stop is not None:
            work_budget = self.budget * 1000.0 * self.budget_use * self.work_per_ms
            deadline = started + self.hard_stop
        slowest = 0.0  # longest rollout so far, to predict whether the next one fits
        sample = sampler.sample_modelled if self.opponent_model else sampler.sample
        clock = self.clock
        done = 0
        limit = self.max_iterations
        while (limit is None or done < limit) and spent < work_budget:
            if deadline is not None and clock() + 2 * slowest > deadline:
                break
            world = sample(rng)
            results: list[float] = []
            for action in candidates:
                t0 = clock()
                if deadline is not None and t0 + slowest > deadline:
                    break
                state = world.copy()
                state.apply(action)
                spent += 1  # a world and a candidate cost something even when settled at once
                if state.outcome is not None:
                    results.append(float(state.outcome.payoffs[seat]))
                else:
                    policy = RolloutPolicy(base.public.copy(), base.drop_margin, base.take_at)
                    if isinstance(action, Discard):
                        policy.public.discarded(seat, action.card)
                    turns = state.turns
                    results.append(policy.finish(state, seat, self.max_rollout_turns))
                    spent += state.turns - turns
                slowest = max(slowest, clock() - t0)
            if len(results) < n:
                break  # out of time mid-world: keep every comparison paired
            for i, r in enumerate(results):
                totals[i] += r
                row = diff_sq[i]
                for j, q in enumerate(results):
                    row[j] += (r - q) ** 2
            done += 1
        self.last_iterations = done
        self.last_work = spent
        if done < 2:
            return candidates[0]
        means = [t / done for t in totals]
        # Among the ways to play on, keep the guide's choice unless another is better by
        # ``switch_z`` standard errors of the paired difference.
        playing = [i for i, a in enumerate(candidates) if a.kind != "drop"]
        if not playing:
            return candidates[0]
        choice = playing[0]
        for i in playing[1:]:
            gain = means[i] - means[playing[0]]
            noise = _paired_sd(totals, diff_sq, done, i, playing[0]) / math.sqrt(done - 1)
            if gain > means[choice] - means[playing[0]] and gain > self.switch_z * noise:
                choice = i
        drop = next((i for i, a in enumerate(candidates) if a.kind == "drop"), None)
        if drop is not None:
            opponents = len(obs.hand_sizes) - 1
            if means[drop] >= self.drop_floor * opponents and (
                not self.compare_drop or means[drop] >= means[choice] + self.drop_bias * opponents
            ):
                return DROP
        return candidates[choice]
