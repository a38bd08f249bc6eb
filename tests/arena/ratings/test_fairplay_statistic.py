"""The fair-play check's statistic (issue #38): a permutation martingale over the rotations of
each deal, exact for an honest bot whatever the shape of its chips, that still flags a bot
remembering only a quarter of its deals within 200 deals."""

from __future__ import annotations

import itertools
import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.ratings import fairplay
from arena.ratings.fairplay import PairedDeal

chips = st.floats(-400, 400, allow_nan=False).map(lambda x: round(x, 2))
rotations = st.lists(chips, min_size=2, max_size=3)


def orders(values: list[float]) -> list[PairedDeal]:
    """The deal with each of its rotations played first (the rest in order)."""
    return [PairedDeal(x, tuple(values[:j] + values[j + 1 :])) for j, x in enumerate(values)]


@settings(max_examples=150, deadline=None)
@given(st.lists(rotations, min_size=1, max_size=4))
def test_the_wealth_is_a_martingale_over_every_order_the_rotations_could_have_had(
    deals: list[list[float]],
) -> None:
    """An honest bot's rotations are exchangeable: given its scores, any rotation is as likely
    to have been the first. Averaged over every such choice, deal by deal, the wealth is
    exactly 1 at every look: the property Ville's inequality turns into a lifetime bound,
    with no assumption on the shape of the chips."""
    for n in range(1, len(deals) + 1):
        lives = list(itertools.product(*(orders(values) for values in deals[:n])))
        mean = math.fsum(math.exp(fairplay.log_wealth(life)[-1]) for life in lives) / len(lives)
        assert mean == pytest.approx(1.0, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(rotations)
def test_a_deals_permuted_differences_average_zero(values: list[float]) -> None:
    deal = PairedDeal(values[0], tuple(values[1:]))
    permuted = deal.permuted()
    assert permuted[0] == pytest.approx(deal.difference)
    assert math.fsum(permuted) == pytest.approx(0.0, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(rotations, chips), min_size=1, max_size=30), st.floats(0.01, 100))
def test_a_bots_level_and_the_chips_unit_change_nothing(
    deals: list[tuple[list[float], float]], unit: float
) -> None:
    """The same points added to every rotation of a deal (a bot stronger than its table, a
    deal good for every seat) and chips counted in another unit leave every look's wealth."""
    plain = [PairedDeal(v[0], tuple(v[1:])) for v, _ in deals]
    moved = [PairedDeal(unit * (v[0] + c), tuple(unit * (x + c) for x in v[1:])) for v, c in deals]
    assert fairplay.log_wealth(moved) == pytest.approx(fairplay.log_wealth(plain), abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(chips, chips, st.floats(0.1, 100))
def test_a_heads_up_deals_score_is_its_clipped_difference(a: float, b: float, scale: float) -> None:
    """Heads-up a difference could only have been itself or its negative: the score is the
    difference clipped at the scale, rising with it and odd."""
    (low, high) = sorted((a, b))
    score = fairplay.deal_score(PairedDeal(0.0, (high,)), scale)
    assert score == pytest.approx(max(-1.0, min(1.0, high / scale)))
    assert fairplay.deal_score(PairedDeal(0.0, (low,)), scale) <= score
    assert fairplay.deal_score(PairedDeal(0.0, (-high,)), scale) == pytest.approx(-score)


def test_one_lucky_deal_moves_the_verdict_no_more_than_a_usual_one() -> None:
    """The score is bounded: a deal a thousand times the usual spread counts as one at the clip."""
    usual = fairplay.heads_up([10.0, -10.0] * 10 + [10.0])
    lucky = fairplay.heads_up([10.0, -10.0] * 10 + [10_000.0])
    assert fairplay.log_wealth(lucky)[-1] == pytest.approx(fairplay.log_wealth(usual)[-1])
    assert all(-1.0 <= s <= 1.0 for s in fairplay.scores(fairplay.heads_up([5.0, -3.0, 1e6, -1e6, 0.0])))


def four_seat_lognormal_life(seed: int, deals: int) -> list[PairedDeal]:
    """An honest bot at 4-seat deals whose chips are lognormal (rare big wins): its first
    rotation against the mean of three later ones is skewed to losses."""
    rng = random.Random(seed)
    out = []
    for _ in range(deals):
        values = [rng.lognormvariate(0.0, 1.0) for _ in range(4)]
        out.append(PairedDeal(values[0], tuple(values[1:])))
    return out


def test_a_skewed_honest_bot_is_not_flagged() -> None:
    """Seed 1706 is a life the check before issue #38 flagged at deal 50 (the paired t's mixture
    martingale: 0.22% of such lives by 2,000 deals); the permutation check is not fooled."""
    life = four_seat_lognormal_life(1706, 300)
    assert fairplay.first_flag(life) is None
    check = fairplay.paired_check(life)
    assert not check.flagged and check.p_value is not None and check.p_value > 0.05
    differences = [deal.difference for deal in life[:50]]
    t = statistics.fmean(differences) / (statistics.stdev(differences) / math.sqrt(50))
    assert t > 3.4  # what fooled the t statistic: no big win in the first rotation yet


# Net later-minus-first differences (chips per 100 hands) of bench/fairplay.py's memory cheater
# against greedy in the first 100 real heads-up deals of 16 hands bench/fairplay_stats.py plays
# (seed 38), net of the reference: where it uses no memory it plays greedy, as the reference does: 0.
MEMORY_DEALS: list[float] = [
    12.5, 12.5, 6.25, 12.5, 43.75, 18.75, -25, 12.5, 37.5, 56.25, 31.25, 12.5, 12.5, 56.25, 12.5, 12.5,
    50, 43.75, 12.5, 37.5, 43.75, 6.25, 56.25, 25, 25, -6.25, 18.75, -12.5, 12.5, 25, 31.25, 12.5,
    -6.25, 18.75, -12.5, 75, -18.75, 6.25, -37.5, 62.5, -25, 18.75, 100, 18.75, 18.75, 6.25, 87.5,
    6.25, 56.25, 25, 37.5, 37.5, 68.75, 50, 43.75, 25, -12.5, 75, 50, 50, 6.25, 31.25, 56.25, 43.75,
    68.75, 18.75, -25, 18.75, 12.5, 68.75, 56.25, 75, 18.75, 43.75, 12.5, 12.5, 12.5, 62.5, 6.25, 37.5,
    31.25, 6.25, -12.5, 6.25, 18.75, 12.5, 31.25, 18.75, 25, -12.5, 43.75, 18.75, -12.5, 75, 0, 31.25,
    -12.5, -6.25, -18.75, 50,
]


def quarter_memory_life(seed: int, deals: int) -> list[PairedDeal]:
    rng = random.Random(seed)
    return fairplay.heads_up([rng.choice(MEMORY_DEALS) if rng.random() < 0.25 else 0.0 for _ in range(deals)])


def test_a_bot_remembering_a_quarter_of_its_deals_is_flagged_within_200() -> None:
    """The issue's goal, on 50 seeded lives (bench/fairplay_stats.py measures it on 10,000):
    at least 90% flagged within 200 deals, each at the first look whose check flags it."""
    flagged = 0
    for seed in range(50):
        life = quarter_memory_life(seed, 200)
        at = fairplay.first_flag(life)
        if at is None:
            continue
        flagged += 1
        assert at >= fairplay.MIN_DEALS and fairplay.paired_check(life[:at]).flagged
        assert at == fairplay.MIN_DEALS or not fairplay.paired_check(life[: at - 1]).flagged
    assert flagged >= 45, flagged
