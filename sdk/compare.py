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
finite Elo. The verdict says A (or B) is better only when the whole Elo interval is on one side
of 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Z95", "Comparison", "EloEstimate", "compare_pairs", "elo_estimate", "elo_of_score", "pair_score"]

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


@dataclass(frozen=True)
class Comparison:
    """A against B over ``pairs`` duplicate pairs."""

    pairs: int
    hands_per_pair: int  # both matches' hands
    chips_per_100: float  # A's chips minus B's, per 100 hands
    chips_margin: float  # half the 95% interval of that
    counts: list[int]  # pairs per outcome, OUTCOMES order
    elo: EloEstimate

    @property
    def verdict(self) -> str:
        """"A is better", "B is better" or "not distinguishable at N deals: play more"."""
        if self.elo.low > 0:
            return "A is better"
        if self.elo.high < 0:
            return "B is better"
        return f"not distinguishable at {self.pairs} deals: play more"

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
    estimate = elo_estimate(counts)
    assert estimate is not None  # at least one pair
    return Comparison(len(diffs), 2 * hands, mean, Z95 * sd / math.sqrt(len(diffs)), counts, estimate)
