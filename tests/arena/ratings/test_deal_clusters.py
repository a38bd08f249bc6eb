"""Rating intervals clustered by deal (arena.ratings.intervals.meat): the matches of one duplicate
deal share every card, so the deal, not the match, is the independent unit (issue #26)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.ratings.data import RatingData, sigmoid
from arena.ratings.intervals import meat
from arena.ratings.model import ELO_SCALE, RatedMatch, RatedMatchError, fit


def naive_meat(seasons: list[tuple[list[int], list[float], int | None]], x: np.ndarray) -> np.ndarray:
    """sum over deals of U_d U_d^T, match by match, every bot in the pool."""
    k = len(x)
    score: dict[object, np.ndarray] = {}
    for m, (bots, scores, deal) in enumerate(seasons):
        n = len(bots)
        u = np.zeros(k)
        for i, j in itertools.combinations(range(n), 2):
            result = 1.0 if scores[i] > scores[j] else 0.5 if scores[i] == scores[j] else 0.0
            r = (result - sigmoid(np.array([x[bots[i]] - x[bots[j]]]))[0]) / (n - 1)
            u[bots[i]] += r
            u[bots[j]] -= r
        key = ("match", m) if deal is None else ("deal", deal)
        score[key] = score.get(key, np.zeros(k)) + u
    return sum((np.outer(v, v) for v in score.values()), np.zeros((k, k)))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), deals=st.integers(1, 6), unnamed=st.booleans())
def test_the_meat_sums_each_deals_score(seed: int, deals: int, unnamed: bool) -> None:
    rng = np.random.default_rng(seed)
    k = 5
    season: list[tuple[list[int], list[float], int | None]] = []
    for _ in range(int(rng.integers(5, 30))):
        n = int(rng.integers(2, 5))
        bots = rng.permutation(k)[:n].tolist()
        deal = None if unnamed and rng.random() < 0.3 else int(rng.integers(0, deals))
        season.append((bots, rng.integers(-3, 4, n).astype(float).tolist(), deal))
    data = RatingData()
    data.code_of([f"b{i}" for i in range(k)])
    for bots, scores, deal in season:  # one match per block, as live updates add them
        code = np.array([-1 if deal is None else int(data.deal_of([deal])[0])])
        data.add(len(bots), np.array([bots]), np.array([scores]), code)
    x = rng.normal(0, 0.5, k)
    got = meat(data.blocks, x, np.arange(k), np.ones(k, dtype=bool), k)
    np.testing.assert_allclose(got, naive_meat(season, x), atol=1e-12)
    assert data.deals == len({d for *_, d in season if d is not None}) + sum(d is None for *_, d in season)


def card_luck_season(rng: np.random.Generator, deals: int) -> list[RatedMatch]:
    """Three bots at one table, each deal in its three rotations; the cards decide a lot."""
    true = np.array([-50.0, 0.0, 50.0])
    out = []
    for d in range(deals):
        cards = rng.normal(0.0, 3.0, 3)
        for r in range(3):
            seats = [(s + r) % 3 for s in range(3)]
            util = ELO_SCALE * true[seats] + cards + rng.gumbel(size=3)
            out.append(RatedMatch(f"{d}/{r}", tuple(f"b{i}" for i in seats), tuple(util.tolist()), d))
    return out


def test_duplicate_card_luck_cancels_inside_a_deal() -> None:
    # Clustered by match, the card luck that duplicate play cancels counts as noise: the
    # intervals come out far too wide (bench/stat_checks.py intervals: SE/SD 1.5 by match,
    # 1.0 by deal). Clustered by deal, they are narrower.
    season = card_luck_season(np.random.default_rng(3), 60)
    by_deal = {r.bot: r for r in fit(season).ratings}
    by_match = {r.bot: r for r in fit([RatedMatch(m.match_id, m.bots, m.scores) for m in season]).ratings}
    for bot, row in by_deal.items():
        assert row.elo == pytest.approx(by_match[bot].elo)  # the estimate does not change
        assert row.low is not None and row.high is not None
        other = by_match[bot]
        assert other.low is not None and other.high is not None
        assert row.high - row.low < 0.85 * (other.high - other.low)


def test_one_match_per_deal_is_the_same_as_no_deal() -> None:
    season = card_luck_season(np.random.default_rng(4), 30)
    alone = [RatedMatch(m.match_id, m.bots, m.scores, f"own-{m.match_id}") for m in season]
    plain = [RatedMatch(m.match_id, m.bots, m.scores) for m in season]
    for a, b in zip(fit(alone).ratings, fit(plain).ratings, strict=True):
        assert (a.bot, a.matches, a.basis) == (b.bot, b.matches, b.basis)
        assert (a.elo, a.low, a.high) == pytest.approx((b.elo, b.low, b.high), abs=1e-9)


def test_a_deal_that_is_not_a_key_is_refused() -> None:
    with pytest.raises(RatedMatchError, match=r"deal \[1, 2\]"):
        RatedMatch(1, ("a", "b"), (1, 0), [1, 2])  # type: ignore[arg-type]
