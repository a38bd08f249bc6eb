"""The intervals an update reports (arena.ratings.intervals.update_core, Covariance) equal the
dense sandwich ``B M B^T`` computed afresh with the same bread and meat: after a full fit, and
after each of several updates, with outsiders and named and unnamed deals, to 1e-6."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from arena.ratings import intervals
from arena.ratings.model import ELO_SCALE, RatedMatch, RatingModel, _pool_pairs


def season(rng: np.random.Generator, bots: list[str], strength: dict[str, float], n: int, start: int,
           sizes: tuple[int, ...]) -> list[RatedMatch]:  # fmt: skip
    """``n`` matches among ``bots``: some as one deal in two rotations, some of their own."""
    out: list[RatedMatch] = []
    m = start
    while len(out) < n:
        size = int(rng.choice(sizes))
        seated = [bots[i] for i in rng.choice(len(bots), size=size, replace=False)]
        luck = rng.gumbel(size=size)
        named = rng.random() < 0.6
        for turn in range(2 if named else 1):
            order = seated[turn:] + seated[:turn]
            util = [ELO_SCALE * strength[b] + luck[(i + turn) % size] for i, b in enumerate(order)]
            deal = f"d{start}-{m - turn}" if named else None
            out.append(RatedMatch(m, tuple(order), tuple(util), deal=deal))
            m += 1
    return out


def dense_covariance(model: RatingModel, q: np.ndarray, meat: np.ndarray) -> np.ndarray:
    """``B M B^T`` in Elo squared, the bread made afresh from ``q`` (intervals.bread)."""
    last = model._last
    assert last is not None
    k = model.data.k
    bread = intervals.bread(model.data.weights[:k, :k], last.pool, last.finite, last.x, last.share, q)
    clusters = model.data.deals
    scale = clusters / (clusters - 1) if clusters > 1 else 1.0
    out: np.ndarray = bread @ meat @ bread.T * scale / ELO_SCALE**2
    return out


def reported(model: RatingModel) -> np.ndarray:
    cov = model._covariance
    assert cov is not None
    f = len(cov.core)
    i, j = np.meshgrid(np.arange(f), np.arange(f), indexing="ij")
    out: np.ndarray = cov.cov(i.ravel(), j.ravel()).reshape(f, f)
    return out


def assert_equal(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * float(np.abs(want).max()))


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(3, 8),
    outsiders=st.integers(0, 2),
    rounds=st.integers(1, 3),
    sizes=st.sampled_from([(2,), (2, 3), (3,)]),
)
def test_updated_intervals_equal_the_dense_sandwich(
    seed: int, k: int, outsiders: int, rounds: int, sizes: tuple[int, ...]
) -> None:
    rng = np.random.default_rng(seed)
    pool = [f"p{i}" for i in range(k)]
    extra = [f"o{i}" for i in range(outsiders)]
    strength = {b: float(rng.normal(0.0, 60.0)) for b in pool + extra}
    results = season(rng, pool, strength, 30 * k, 0, sizes)
    m = len(results)
    for o in extra:  # a few heads-up matches against the pool, won and lost: fitted, not in it
        for turn, (won, foe) in enumerate([(1.0, pool[0]), (-1.0, pool[1]), (1.0, pool[2 % k])]):
            results.append(RatedMatch(m, (o, foe), (won, -won), deal=None if turn else f"x{o}"))
            m += 1
    model = RatingModel(min_matches=15)
    model.add(results)
    model.fit(pairwise=False)
    last = model._last
    assert last is not None
    # Every pool bot in the pool, the outsiders fitted against it (a rare season is one-sided).
    assume(int(last.pool.sum()) == k and int((last.finite & ~last.pool).sum()) == outsiders)
    position = np.where(last.finite, np.cumsum(last.finite) - 1, -1)
    f = int(last.finite.sum())
    q = intervals.pool_q(model.data.weights[: model.data.k, : model.data.k], last.pool, last.x)
    meat = intervals.meat(model.data.blocks, last.x, position, last.pool, f)
    assert_equal(reported(model), dense_covariance(model, q, meat))
    for r in range(rounds):
        before = model._last
        assert before is not None
        new = season(rng, pool + extra, strength, int(rng.integers(1, 12)), 10_000 * (r + 1), sizes)
        model.add(new)
        assert model.cheap_update(pairwise=False) is not None
        after = model._last
        assert after is not None
        blocks = model.data.blocks[before.blocks :]
        q = intervals.add_pairs(q, *_pool_pairs(blocks, after.pool, before.x))
        meat = meat + intervals.meat(blocks, after.x, position, after.pool, f)
        assert_equal(reported(model), dense_covariance(model, q, meat))
        np.testing.assert_allclose(after.q, q, rtol=1e-9, atol=1e-12)


def test_an_update_moves_the_intervals_of_the_bots_it_touches() -> None:
    # Not a test that cannot fail: a hundred new matches of one pair must narrow those two
    # bots' intervals (the core gains their information) and leave a bystander's nearly alone.
    rng = np.random.default_rng(5)
    pool = [f"p{i}" for i in range(5)]
    strength = {b: 40.0 * i for i, b in enumerate(pool)}
    model = RatingModel()
    model.add(season(rng, pool, strength, 200, 0, (2,)))
    model.fit(pairwise=False)
    sd0 = model._covariance.sd() if model._covariance is not None else None
    model.add(season(rng, pool[:2], strength, 100, 10_000, (2,)))
    model.cheap_update(pairwise=False)
    assert sd0 is not None and model._covariance is not None
    sd1 = model._covariance.sd()
    codes = [model.data.codes[b] for b in pool]
    assert sd1[codes[0]] < 0.95 * sd0[codes[0]] and sd1[codes[1]] < 0.95 * sd0[codes[1]]
    assert abs(sd1[codes[4]] - sd0[codes[4]]) < 0.1 * sd0[codes[4]]


def test_the_cores_product_with_a_mostly_zero_meat_is_the_dense_product() -> None:
    # Both branches: blocks whose columns touch few rows, and a dense block among them.
    rng = np.random.default_rng(9)
    n = 700
    dense = rng.normal(size=(n, n))
    sparse = np.zeros((n, n))
    i = rng.integers(0, n, 3000)
    j = (i + rng.integers(1, 20, len(i))) % n
    sparse[i, j] = sparse[j, i] = rng.normal(size=len(i))
    sparse[:, 600:] = rng.normal(size=(n, 100))
    got = intervals._times_sparse(dense, sparse, block=64)
    np.testing.assert_allclose(got, dense @ sparse, rtol=1e-12, atol=1e-9)
