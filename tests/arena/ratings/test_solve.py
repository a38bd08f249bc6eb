"""The pool's full solve (arena/ratings/solve.py ``_fit_pool``): loose conjugate-gradient
steps where they converge, dense solves where they crawl, and either way the maximum itself
(a zero gradient) and the inverse information at it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from arena.ratings import solve
from arena.ratings.solve import Met, _finish, _fit_pool, pair_curvature, pair_laplacian


def pairs_of(k: int, edges: np.ndarray, rng: np.random.Generator, strength: np.ndarray) -> Met:
    """Heads-up results over ``edges`` (rows ``a < b``), a few per pair, won by the model."""
    a, b = edges[:, 0].astype(np.int64), edges[:, 1].astype(np.int64)
    games = rng.integers(3, 9, len(a)).astype(float)
    p = 1.0 / (1.0 + np.exp(strength[b] - strength[a]))
    won = rng.binomial(games.astype(np.int64), p).astype(float)
    won = np.clip(won, 0.5, games - 0.5)  # no pair all one way: every bot keeps a finite maximum
    order = np.argsort(a * k + b)
    a, b = a[order], b[order]
    return Met(a * k + b, a, b, won[order], games[order])


def random_graph(k: int, rng: np.random.Generator) -> np.ndarray:
    pairs = {tuple(sorted(rng.choice(k, 2, replace=False))) for _ in range(12 * k)}
    return np.array(sorted(pairs))


def chain(k: int) -> np.ndarray:
    """Each bot meets only its neighbours: the worst-conditioned connected pool there is."""
    return np.array([(i, i + 1) for i in range(k - 1)])


@pytest.mark.parametrize(("shape", "cap", "dense"), [("random", None, False), ("chain", 1000, False),
                                                    ("chain", 20, True)])  # fmt: skip
def test_the_full_solve_finds_the_maximum_and_its_inverse_information(
    shape: str, cap: int | None, dense: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cap``: a loose step's iterations at most, where not the solve's own (a chain of 400
    needs about 400 iterations; at 400 bots a dense solve costs less, so the solve's own cap
    would take the dense steps)."""
    k = 400
    rng = np.random.default_rng(5)
    strength = rng.normal(0.0, 1.2, k)
    met = pairs_of(k, random_graph(k, rng) if shape == "random" else chain(k), rng, strength)
    solves: list[Any] = []
    real_solve = np.linalg.solve
    monkeypatch.setattr(solve.np.linalg, "solve", lambda *args: solves.append(1) or real_solve(*args))
    if cap is not None:
        monkeypatch.setattr(solve, "_rough_cap", lambda k, pairs: cap)

    x, q = _fit_pool(met.a, met.b, met.points, met.weights, np.zeros(k))

    # Where conjugate gradients converge within the cap no dense solve is made; past it, the
    # steps are dense solves.
    assert bool(solves) is dense
    p = 1.0 / (1.0 + np.exp(x[met.b] - x[met.a]))
    res = met.points - met.weights * p
    grad = np.bincount(met.a, res, minlength=k) - np.bincount(met.b, res, minlength=k)
    assert np.max(np.abs(grad)) < 1e-8 and abs(x.mean()) < 1e-12
    lap = pair_laplacian(met.a, met.b, pair_curvature(met.a, met.b, met.weights, x), k) + 1.0 / k
    np.testing.assert_allclose(q @ lap, np.eye(k), atol=1e-8)
    # The same maximum from a warm start (a refit's: the last fit's, a few tenths off).
    again, _ = _fit_pool(met.a, met.b, met.points, met.weights, x + rng.normal(0.0, 0.3, k))
    np.testing.assert_allclose(again, x, atol=1e-9)


def test_the_finish_takes_the_inverse_again_until_a_step_moves_nothing() -> None:
    """Loose steps can stop short of where their size says (a residual a tenth of the
    gradient's leaves more than a tenth of the step on an ill-conditioned pool): from 1e-4 off
    the maximum, the exact steps take ``Q`` afresh until one moves nothing, and end on the
    maximum with ``Q`` there."""
    k = 300
    rng = np.random.default_rng(8)
    met = pairs_of(k, chain(k), rng, rng.normal(0.0, 1.0, k))
    x, q = _fit_pool(met.a, met.b, met.points, met.weights, np.zeros(k))
    off = rng.normal(0.0, 1e-4, k)
    again, q_again = _finish(met.a, met.b, met.points, met.weights, x + off - off.mean())
    np.testing.assert_allclose(again, x, atol=1e-10)
    np.testing.assert_allclose(q_again, q, rtol=1e-8, atol=1e-10)
