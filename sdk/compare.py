""""Is A better than B?" from duplicate pairs: each deal played twice heads-up, A in each seat
once on the same cards, so the cards' luck cancels inside the pair and the pairs are the units
of every estimate (the two halves of a pair are correlated; treating them as independent would
make the intervals too narrow).

Two effect sizes, each with a 95% interval (normal approximation, 1.96 standard errors of the
mean over pairs):

- chips: A's chips minus B's per 100 hands, each pair one sample;
- Elo: each match scores A 1, 1/2 or 0 by final chips, a pair the mean of its two (one of
  0, 1/4, 1/2, 3/4, 1, the pentanomial outcomes, as the arena's SPRT counts them); the mean
  pair score ``s`` and its interval are mapped to Elo by ``-400 log10(1/s - 1)``, the inverse
  of the arena's ``expected_score``.

A score of 0 or 1 has no finite Elo: the pair scores get one pseudo-pair at 1/2 (so "every
pair won" has an estimate below the limit and an interval of some width), and an interval end
beyond 0 or 1 is moved in to a quarter of one pair's weight (``1 / (4 (n + 1))``), a large but
finite Elo. That interval (:func:`elo_estimate`) is the arena's SPRT's effect size.

The verdict of ``tonk play A B --duplicate`` (:func:`pair_test`) is not read off that normal
interval: at 5 to 40 pairs, or on a skewed pair shape, it said "better" of two equal bots in up
to 12% of comparisons, not 5% (issue #38). It is a bet against "A and B are equal" instead:
stake a fraction ``f`` of one's wealth on A at each pair, so that wealth is multiplied by
``1 + (f / s) (x - s)`` for a pair scoring ``x`` against a mean ``s``; with ``s`` the true mean,
the wealth's expectation stays 1 whatever the pairs' shape (the bet is fair), so by Markov's
inequality it reaches 40 with probability at most 1/40, at every number of pairs (Ville's
inequality: even looking again after playing more). The verdict averages four stakes
(``FRACTIONS``) on A and four on B, and says "A is better" when the bets on A at ``s = 1/2``
reach 40 (B likewise): a false verdict at most 2.5% + 2.5% of the time, for any pair shape and
any number of pairs (bench/sprt_checks.py duplicate: exact rates). Its interval is the set of
mean scores ``s`` neither side's bets reach 40 against, so the verdict is "better" exactly when
the interval leaves 0 Elo out. The price of holding at every shape and every look: about twice
the pairs of the normal interval for the same difference. It also says how many more pairs it
expects to need: the pairs at which the bets would reach 40 if the pairs went on as so far.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "FRACTIONS",
    "Z95",
    "Comparison",
    "EloEstimate",
    "PairTest",
    "compare_pairs",
    "elo_estimate",
    "elo_of_score",
    "log_wealth",
    "pair_score",
    "pair_test",
]

#: Pair scores, the pentanomial outcomes (A's mean match score over the two seats).
OUTCOMES = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Two-sided 95% quantile of the normal distribution.
Z95 = 1.959963984540054


@dataclass(frozen=True)
class EloEstimate:
    """A's Elo over B: the estimate and its 95% interval, from ``pairs`` pair scores."""

    pairs: int
    elo: float
    low: float
    high: float

    @property
    def margin(self) -> float:
        """Half the interval's width (the interval is not symmetric about ``elo``)."""
        return (self.high - self.low) / 2.0

    def to_json(self) -> dict[str, float | int]:
        return {"pairs": self.pairs, "elo": round(self.elo, 1), "low": round(self.low, 1),
                "high": round(self.high, 1)}  # fmt: skip

    def text(self, a: str = "A", b: str = "B") -> str:
        """``A - B = +31 +/- 22 Elo [+9, +53]``: how every command states an estimate."""
        return f"{a} - {b} = {self.elo:+.0f} +/- {self.margin:.0f} Elo [{self.low:+.0f}, {self.high:+.0f}]"


def elo_of_score(score: float) -> float:
    """The Elo difference at which the stronger side's expected score is ``score`` (0 < score < 1)."""
    return -400.0 * math.log10(1.0 / score - 1.0)


def pair_score(a_chips: Sequence[int], b_chips: Sequence[int]) -> float:
    """A's pair score from A's and B's final chips in the pair's two matches."""
    return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in zip(a_chips, b_chips, strict=True)) / 2


def _mean_sd(xs: Sequence[float]) -> tuple[float, float]:
    mean = sum(xs) / len(xs)
    if len(xs) < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


def elo_estimate(counts: Sequence[int], outcomes: Sequence[float] = OUTCOMES) -> EloEstimate | None:
    """The Elo estimate from ``counts[i]`` pairs scoring ``outcomes[i]``, or None before any pair."""
    n = sum(counts)
    if n == 0:
        return None
    # One pseudo-pair at 1/2 (a split): without it, every pair won would give a score of 1
    # with no spread at all, an infinite Elo "known exactly".
    scores = [0.5] + [x for x, c in zip(outcomes, counts, strict=True) for _ in range(c)]
    mean, sd = _mean_sd(scores)
    half = Z95 * sd / math.sqrt(len(scores))
    edge = 1.0 / (4.0 * len(scores))  # keeps an interval end at 0 or 1 finite

    def elo(s: float) -> float:
        return elo_of_score(min(1.0 - edge, max(edge, s))) + 0.0  # + 0.0: no "-0"

    return EloEstimate(n, elo(mean), elo(mean - half), elo(mean + half))


#: The stakes of the verdict's bets, as fractions of the largest that cannot lose everything at
#: once: Tonk's duplicate differences of 20 to 100 Elo grow wealth fastest at about 0.1 to 0.8.
FRACTIONS = (0.1, 0.2, 0.4, 0.8)
#: The wealth one side's bets must reach: 1 / (alpha / 2), alpha = 5% for both sides together.
TARGET = 40.0
#: More pairs than this are not projected ("more than ...").
_FAR = 100_000


def log_wealth(counts: Sequence[float], s: float, side: int, outcomes: Sequence[float] = OUTCOMES) -> float:
    """The log of the mean wealth of the bets that A's mean pair score is above ``s`` (``side``
    +1) or below it (-1), after ``counts[i]`` pairs scoring ``outcomes[i]`` (0 < s < 1)."""
    logs = []
    for f in FRACTIONS:
        stake = f / s if side > 0 else -f / (1.0 - s)
        logs.append(sum(c * math.log1p(stake * (x - s)) for x, c in zip(outcomes, counts, strict=True) if c))
    top = max(logs)
    return top + math.log(sum(math.exp(v - top) for v in logs) / len(logs))


def _mean(counts: Sequence[float]) -> float:
    return sum(x * c for x, c in zip(OUTCOMES, counts, strict=True)) / sum(counts)


def _end(counts: Sequence[int], side: int, edge: float) -> float:
    """The interval's low end (``side`` +1: where the bets on A stop reaching the target) or
    high end (-1). Each side's wealth is monotone in ``s``, so bisection finds it."""
    mean = min(1.0 - edge, max(edge, _mean(counts)))
    far = edge if side > 0 else 1.0 - edge
    if log_wealth(counts, far, side) < math.log(TARGET):
        return far
    inside, outside = mean, far  # the target is not reached at the mean (Jensen), is at ``far``
    for _ in range(60):
        mid = (inside + outside) / 2.0
        if log_wealth(counts, mid, side) >= math.log(TARGET):
            outside = mid
        else:
            inside = mid
    return inside


@dataclass(frozen=True)
class PairTest:
    """The verdict on A against B from pair counts, with its interval and the pairs it expects
    to need."""

    pairs: int
    elo: EloEstimate  # the interval is the test's (see the module's docstring)
    better: str | None  # "A", "B", or None (not distinguishable yet)
    needed: int | None  # pairs in all at which it expects a verdict (None: no difference seen)

    @property
    def verdict(self) -> str:
        if self.better is not None:
            return f"{self.better} is better"
        head = f"not distinguishable at {self.pairs} deals"
        if self.needed is None:
            return f"{head}: no difference seen, so no number of deals can be promised"
        more = self.needed - self.pairs
        if self.needed > _FAR:
            return f"{head}: more than {_FAR - self.pairs:,} more deals if the pairs go on as so far"
        return f"{head}: about {more:,} more deals if the pairs go on as so far"


def _needed(counts: Sequence[int]) -> int | None:
    """The pairs in all at which the bets on the side ahead would reach the target if every
    further pair were like the pairs so far (counts scaled up), or None when neither side is
    ahead or no stake would grow on such pairs."""
    n = sum(counts)
    mean = _mean(counts)
    if mean == 0.5:
        return None
    side = 1 if mean > 0.5 else -1
    stakes = [side * f / 0.5 for f in FRACTIONS]
    if all(sum(c * math.log1p(k * (x - 0.5)) for x, c in zip(OUTCOMES, counts, strict=True) if c) <= 0
           for k in stakes):  # fmt: skip
        return None

    def reached(total: int) -> bool:
        return log_wealth([c * total / n for c in counts], 0.5, side) >= math.log(TARGET)

    low, high = n, n + 1
    while not reached(high):
        if high > _FAR:
            return high
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if reached(mid) else (mid, high)
    return high


def pair_test(counts: Sequence[int]) -> PairTest:
    """The verdict from ``counts[i]`` pairs scoring ``OUTCOMES[i]`` (at least one pair)."""
    n = sum(counts)
    estimate = elo_estimate(counts)
    if estimate is None:
        raise ValueError("no pairs: nothing to compare")
    edge = 1.0 / (4.0 * (n + 1))
    low, high = _end(counts, 1, edge), _end(counts, -1, edge)
    up, down = (log_wealth(counts, 0.5, side) >= math.log(TARGET) for side in (1, -1))
    better = "A" if up else "B" if down else None
    if better is None:  # the interval holds 1/2 exactly when there is no verdict
        low, high = min(low, 0.5), max(high, 0.5)
    elo_low, elo_high = elo_of_score(low) + 0.0, elo_of_score(high) + 0.0  # + 0.0: no "-0"
    elo = EloEstimate(n, min(elo_high, max(elo_low, estimate.elo)), elo_low, elo_high)
    return PairTest(n, elo, better, None if better else _needed(counts))


@dataclass(frozen=True)
class Comparison:
    """A against B over ``pairs`` duplicate pairs."""

    pairs: int
    hands_per_pair: int  # both matches' hands
    chips_per_100: float  # A's chips minus B's, per 100 hands
    chips_margin: float  # half the 95% interval of that
    counts: list[int]  # pairs per outcome, OUTCOMES order
    test: PairTest

    @property
    def elo(self) -> EloEstimate:
        return self.test.elo

    @property
    def verdict(self) -> str:
        """"A is better", "B is better" or "not distinguishable at N deals: about M more deals
        if the pairs go on as so far" (or why no number can be given)."""
        return self.test.verdict

    def lines(self, a: str = "A", b: str = "B") -> list[str]:
        """The comparison in words, ``a`` and ``b`` naming the two sides."""
        verdict = self.verdict.replace("A is", f"{a} is").replace("B is", f"{b} is")
        lost, q1, split, q3, won = self.counts
        return [
            f"pairs: {self.pairs} deals, each played twice with the seats swapped "
            f"({self.hands_per_pair // 2} hands a match)",
            f"pair scores for {a}: won {won}, 3/4 {q3}, split {split}, 1/4 {q1}, lost {lost}",
            f"chips/100 hands: {a} - {b} = {self.chips_per_100:+.1f} +/- {self.chips_margin:.1f} "
            "(95%, paired by deal)",
            f"{self.elo.text(a, b)}: {verdict}",
            # The two can seem to disagree (issue #40): a few big wins weigh in chips, not in Elo.
            "(chips say by how much a bot finishes ahead, Elo and the verdict how often, "
            "whatever the margin)",
        ]


def compare_pairs(
    a_chips: Sequence[tuple[int, int]], b_chips: Sequence[tuple[int, int]], hands: int
) -> Comparison:
    """A against B from each pair's final chips: ``a_chips[i]`` is A's in deal ``i``'s two
    matches, ``b_chips[i]`` B's in the same two, ``hands`` the hands of one match."""
    if not a_chips or len(a_chips) != len(b_chips):
        raise ValueError(f"need the same number (at least 1) of pairs for A and B, got {len(a_chips)} "
                         f"and {len(b_chips)}")  # fmt: skip
    if hands < 1:
        raise ValueError(f"a match has at least 1 hand, got {hands}")
    diffs = [100.0 * (sum(a) - sum(b)) / (2 * hands) for a, b in zip(a_chips, b_chips, strict=True)]
    mean, sd = _mean_sd(diffs)
    counts = [0] * len(OUTCOMES)
    for a, b in zip(a_chips, b_chips, strict=True):
        counts[OUTCOMES.index(pair_score(a, b))] += 1
    margin = Z95 * sd / math.sqrt(len(diffs))
    return Comparison(len(diffs), 2 * hands, mean, margin, counts, pair_test(counts))
