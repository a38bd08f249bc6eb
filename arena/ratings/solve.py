"""The point estimate: the Bradley-Terry maximum likelihood, in natural units (Elo times
``ELO_SCALE``), from the pairwise sums alone (arena/ratings/model.py, "Model" and
"Everyone else").

:func:`estimate` is the whole of it, in three steps: the pool on its own pairs by damped
Newton (mean 0; the pool is strongly connected, so the maximum is finite and unique up to the
mean), each outsider with a two-sided record alone against the pool held fixed (so it moves
nobody), then every finite estimate shifted by the pool's weighted centre (the scale's zero,
arena/ratings/pool.py). An update between full fits iterates Newton steps with an inverse
information from nearby (the last fit's, brought up to date for the new pairs) instead of
solving a bots x bots system at each step: it converges to the same maximum, geometrically,
because that inverse is close to the true one.

Nothing here knows about matches, deals or intervals: the solve reads ``points`` and
``weights`` (bots x bots) and the pool, and returns ``x`` and which bots have a finite one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arena.ratings.data import BoolArray, FloatArray, IntArray, sigmoid

_MAX_NEWTON = 200
#: Steps an update may take with an inverse from nearby before it gives up (a full fit then).
_MAX_NEARBY = 50
# Newton converges quadratically: once a step is this small (natural units) the next one is
# at rounding level, so the result no longer depends on where the iteration started.
_NEWTON_TOL = 1e-10
# Steps from a nearby fit converge linearly (each shrinks the error ~30-fold at 10,000 bots):
# stopped at 1e-8 natural units, 2e-6 Elo, two steps short of the full fit's tolerance and
# five orders below the board's tenth of an Elo.
_NEARBY_TOL = 1e-8
# A full fit's steps are solved loosely (conjugate gradients on the pairs, each iteration one
# pass over them) until one moves no estimate by _Q_NEAR (natural units), where the inverse
# information is taken; dense solves instead where those crawl: past a step's iteration cap
# (_rough_cap), or _MAX_ROUGH steps.
_Q_NEAR = 1e-10
_MAX_ROUGH = 60
# What a conjugate-gradient iteration costs a pair, in the units a dense solve costs per k^3:
# 23 ns a pair against 15-20 ps per k^3 (numpy's LU), measured at 3,000 and 5,000 bots.
_PAIR_COST = 1300


class ConvergenceError(RuntimeError):
    """The Newton iteration did not converge (the objective is strictly concave, so this
    means a bug or non-finite data, not bad luck)."""


def estimate(
    points: FloatArray,
    weights: FloatArray,
    pool: BoolArray,
    share: FloatArray,
    x0: FloatArray,
    met: Met,
    nearby: tuple[FloatArray, IntArray] | None = None,
) -> tuple[FloatArray, BoolArray, FloatArray]:
    """Every bot's estimate (natural units, 0 where there is none), which are finite, and the
    pool's inverse information ``Q`` (at the maximum in a full fit; ``nearby``'s in an
    update): the pool's estimates and those of outsiders with a two-sided record against it,
    centred on the pool members weighted by ``share``. ``x0``: the pool's start; ``met``: the
    pool's pairs that met (:class:`Met`: the pool's solve reads those cells only, never the
    members x members blocks); ``nearby``: the pool's inverse information from a fit nearby
    (``Q = (L + 1/k)^-1``, intervals.pool_q), for Newton steps with it instead of the full
    iteration (raises ConvergenceError if they do not converge: the caller fits in full), and
    the rows of the pool whose pairs are new since that fit (where the gradient is)."""
    k = len(pool)
    members = np.flatnonzero(pool)
    if nearby is None:
        pool_x, q = _fit_pool(met.a, met.b, met.points, met.weights, x0)
    else:
        q, new = nearby
        pool_x = _nearby_newton(met.a, met.b, met.points, met.weights, x0, q, new)
    x = np.zeros(k)
    x[members] = pool_x
    outside = np.flatnonzero(~pool)
    op, ow = points[np.ix_(outside, members)], weights[np.ix_(outside, members)]
    scored, played = op.sum(axis=1), ow.sum(axis=1)
    two_sided = (played > 0) & (scored > 0) & (scored < played)
    x[outside[two_sided]] = fit_outsiders(op[two_sided], ow[two_sided], pool_x)
    finite = pool.copy()
    finite[outside[two_sided]] = True
    x[finite] -= share @ pool_x  # the scale's zero (every bot moves alike)
    return x, finite, q


def _pool_objective(
    a: IntArray, b: IntArray, pts: FloatArray, w: FloatArray, x: FloatArray
) -> tuple[float, FloatArray]:
    """The log-likelihood over the pool's pairs that met, each once, and the pairs'
    differences ``x[a] - x[b]`` it was read at. ``b``'s points from ``a`` are the pair's
    weight less ``a``'s, and ``log(1 + e^d) = log(1 + e^-d) + d``: one logarithm a pair."""
    d = x[a] - x[b]
    return float(-(w @ np.logaddexp(0.0, -d)) - ((w - pts) @ d)), d


def pair_curvature(a: IntArray, b: IntArray, w: FloatArray, x: FloatArray) -> FloatArray:
    """Each met pair's information ``w p (1 - p)`` at ``x``."""
    p = sigmoid(x[a] - x[b])
    curv: FloatArray = w * p * (1.0 - p)
    return curv


def pair_laplacian(a: IntArray, b: IntArray, curv: FloatArray, k: int) -> FloatArray:
    """The k x k information matrix of the met pairs whose curvatures are ``curv`` (a graph
    Laplacian: singular along the common shift, which the callers fix), built from the pairs
    alone: no k x k pass of sigmoids."""
    lap = np.zeros((k, k))
    flat = lap.reshape(-1)
    flat[a * k + b] = -curv
    flat[b * k + a] = -curv
    flat[:: k + 1] = np.bincount(a, curv, minlength=k) + np.bincount(b, curv, minlength=k)
    return lap


def _fit_pool(
    a: IntArray, b: IntArray, pts: FloatArray, w: FloatArray, x0: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Maximum likelihood over the pool's pairs that met (:class:`Met`'s), mean 0 (natural
    units), by damped Newton, and the pool's inverse information there (``Q``, as
    :func:`inverse_information`). The pool is strongly connected, so the maximum is finite
    and unique up to the mean. The gradient, curvature and objective read the met pairs only
    (millions at 10,000 bots, where the k x k cells are a hundred million).

    A step far from the maximum need not be exact: it is solved loosely by conjugate
    gradients on the pairs (:func:`_rough_step`, each iteration one pass over them). Where
    they crawl (a ladder pairs neighbours: a banded graph) or the loose steps stop gaining,
    the steps are dense solves instead. Once a step moves no estimate by :data:`_Q_NEAR`,
    ``Q`` is taken there, which the intervals need anyway, and an exact Newton step with it
    (a product, not a solve) lands on the maximum (:func:`_finish`), ``Q`` within
    ``_Q_NEAR`` of it: the maximum and ``Q`` do not depend on the loose steps."""
    k = len(x0)
    x = x0 - x0.mean() if k else x0
    if k < 2:
        return np.zeros(k), np.ones((k, k))
    f, d = _pool_objective(a, b, pts, w, x)
    rough = 0
    for _ in range(_MAX_NEWTON):
        p = 0.5 + 0.5 * np.tanh(0.5 * d)  # sigmoid(d): one pass, no overflow
        grad = _net(a, b, pts - w * p, k)
        curv = w * p * (1.0 - p)
        if 0 <= rough < _MAX_ROUGH:
            step, reached = _rough_step(a, b, curv, grad)
            rough = rough + 1 if reached else -1
        else:
            lap = pair_laplacian(a, b, curv, k)
            lap += 1.0 / k  # fixes the free mean
            step = np.linalg.solve(lap, grad).astype(np.float64, copy=False)
            del lap
        size = float(np.max(np.abs(step)))
        if size < 1e-6:  # near enough to take it whole: the objective's rounding would hide its gain
            x = x + step
            if size >= _Q_NEAR:
                f, d = _pool_objective(a, b, pts, w, x)
                continue
            return _finish(a, b, pts, w, x)
        t = 1.0
        while True:
            trial = x + t * step
            f_trial, d = _pool_objective(a, b, pts, w, trial)
            if f_trial >= f or t < 1e-10:
                break
            t *= 0.5
        x, f = trial, f_trial
    raise ConvergenceError(f"Newton did not converge in {_MAX_NEWTON} iterations ({k} bots in the pool)")


def _finish(
    a: IntArray, b: IntArray, pts: FloatArray, w: FloatArray, x: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The last exact Newton steps from ``x``, each with ``Q`` taken where it starts (a
    product, not a solve), and the ``Q`` of the last: once a step moves nothing by
    :data:`_Q_NEAR`, the maximum and ``Q`` within that of it. One step, unless loose steps
    stopped short of where their size said (a residual a tenth of the gradient's can leave
    more than a tenth of the step, on an ill-conditioned pool)."""
    k = len(x)
    for _ in range(_MAX_NEARBY):
        q = inverse_information(a, b, w, x)
        p = sigmoid(x[a] - x[b])
        step = q @ _net(a, b, pts - w * p, k)
        step -= step.mean()  # Q's 1/k part only shifts every bot alike
        x = x + step
        if float(np.max(np.abs(step))) < _Q_NEAR:
            centred: FloatArray = x - x.mean()
            return centred, q
    raise ConvergenceError(f"Newton did not settle at its maximum ({k} bots in the pool)")


def inverse_information(a: IntArray, b: IntArray, w: FloatArray, x: FloatArray) -> FloatArray:
    """``Q = (L + 1/k)^-1`` at ``x`` (the pool's estimates, in its own order): the inverse of
    the information of the pool's met pairs (with weights ``w``), the common shift fixed by
    ``+ 1/k`` in every cell (intervals.pool_q, from the pairs alone)."""
    k = len(x)
    if not k:
        return np.zeros((0, 0))
    lap = pair_laplacian(a, b, pair_curvature(a, b, w, x), k)
    lap += 1.0 / k
    q: FloatArray = np.linalg.inv(lap).astype(np.float64, copy=False)
    return q


def _net(a: IntArray, b: IntArray, flow: FloatArray, k: int) -> FloatArray:
    """Each bot's sum of ``flow`` over its pairs, taken where it is ``a`` and given where it
    is ``b``."""
    out: FloatArray = np.subtract(np.bincount(a, flow, minlength=k), np.bincount(b, flow, minlength=k),
                                  dtype=np.float64)  # fmt: skip
    return out


def _rough_cap(k: int, pairs: int) -> int:
    """A loose step's iterations at most: about what a dense solve costs (a banded ladder of
    10,000 bots, its 500,000 pairs, can afford the hundreds its graph needs; a random one,
    6.5 million pairs, about 120, where it needs one or two)."""
    return int(min(1000, max(20, k**3 / (_PAIR_COST * max(pairs, 1)))))


def _rough_step(a: IntArray, b: IntArray, curv: FloatArray, grad: FloatArray) -> tuple[FloatArray, bool]:
    """A Newton step solved loosely: ``(L + 1/k) s = grad`` by conjugate gradients on the
    pairs, preconditioned by ``L``'s diagonal, to a residual of a tenth of ``grad``'s, and
    whether it got there within :func:`_rough_cap`'s iterations. ``grad`` sums to 0,
    so ``s`` does too and the ``1/k`` term stays out of the products."""
    k = len(grad)
    diag = np.bincount(a, curv, minlength=k) + np.bincount(b, curv, minlength=k)
    diag = np.maximum(diag, 1e-12)

    def times(v: FloatArray) -> FloatArray:
        return _net(a, b, curv * (v[a] - v[b]), k)

    step = np.zeros(k)
    r = grad.copy()
    z = r / diag
    d = z.copy()
    rz = float(r @ z)
    goal = 0.01 * float(grad @ grad)  # a tenth of grad's norm, squared
    reached = False
    for _ in range(_rough_cap(k, len(a))):
        if float(r @ r) <= goal:
            reached = True
            break
        ad = times(d)
        alpha = rz / float(d @ ad)
        step += alpha * d
        r -= alpha * ad
        z = r / diag
        rz, last = float(r @ z), rz
        d = z + (rz / last) * d
    step -= step.mean()
    return step, reached or float(r @ r) <= goal


@dataclass(frozen=True)
class Met:
    """Every pair of pool members that met (rows of the pool, once, ``a < b``, sorted by
    ``key = a * km + b``), with the points ``a`` took from ``b`` and their weight: all that
    Newton steps from a nearby fit read. Kept between updates, so a step does not gather
    those cells again from the bots x bots sums (millions of scattered reads at 10,000 bots)."""

    key: IntArray
    a: IntArray
    b: IntArray
    points: FloatArray
    weights: FloatArray

    @classmethod
    def of(cls, points: FloatArray, weights: FloatArray, members: IntArray) -> Met:
        a, b = np.nonzero(weights[np.ix_(members, members)])
        once = a < b
        a, b = a[once].astype(np.int64), b[once].astype(np.int64)
        ca, cb = members[a], members[b]
        return cls(a * len(members) + b, a, b, points[ca, cb], weights[ca, cb])

    def with_pairs(
        self, lo: IntArray, hi: IntArray, points: FloatArray, weights: FloatArray, members: IntArray
    ) -> Met:
        """A copy after matches between the pairs ``(lo, hi)`` (unique, ``lo < hi``, sorted)
        were added to the sums ``points`` and ``weights``: new pairs merged in (one copy, no
        sort), and those pairs' cells, the only ones that changed, read again."""
        if len(lo) == 0:
            return self
        km = len(members)
        wanted = lo * km + hi
        at = np.searchsorted(self.key, wanted)
        fresh = at >= len(self.key)
        fresh[~fresh] = self.key[at[~fresh]] != wanted[~fresh]
        key, a, b, pts, w = self.key, self.a, self.b, self.points, self.weights
        if fresh.any():
            where = at[fresh]
            key = np.insert(key, where, wanted[fresh])
            a, b = np.insert(a, where, lo[fresh]), np.insert(b, where, hi[fresh])
            pts, w = np.insert(pts, where, 0.0), np.insert(w, where, 0.0)
        else:
            pts, w = pts.copy(), w.copy()
        cells = np.searchsorted(key, wanted)
        pts[cells] = points[members[lo], members[hi]]
        w[cells] = weights[members[lo], members[hi]]
        return Met(key, a, b, pts, w)


def _nearby_newton(
    a: IntArray, b: IntArray, pts: FloatArray, w: FloatArray, x: FloatArray, q: FloatArray, new: IntArray
) -> FloatArray:
    """The pool's maximum from ``x`` (near it already: an update's start) by steps with ``q``,
    the inverse information from a fit nearby (``Q``; ``Q - 1/k`` is the pseudo-inverse): each
    step costs a bots x bots product, not a solve, and the error shrinks by the inverse's own
    relative error at each step, so a handful reach the tolerance. The start is the last fit's
    maximum (or an update's, to its tolerance), where the old pairs' gradient is next to
    nothing: the first step takes only the rows of ``new`` (the new pairs' bots), bots x those
    rows, and the next ones take it all, the old pairs' remainder with it."""
    k = len(x)
    if k < 2:
        return np.zeros(k)
    for n in range(_MAX_NEARBY):
        # Each pair once: b's side of the pair is a's negated (points b-a = weight - points a-b).
        with np.errstate(over="ignore"):
            res = pts - w / (1.0 + np.exp(x[b] - x[a]))
        grad = _net(a, b, res, k)
        # (Q - 1/k) g, without a bots x bots copy of Q less 1/k.
        step = q[:, new] @ grad[new] if n == 0 and 4 * len(new) < k else q @ grad
        step -= step.mean()  # the 1/k part only shifts every bot alike, as the centring does
        x = x + step
        x = x - x.mean()
        if float(np.max(np.abs(step))) < _NEARBY_TOL:
            return x
    raise ConvergenceError(f"Newton steps from a nearby fit did not converge ({k} bots in the pool)")


def laplacian(curv: FloatArray) -> FloatArray:
    """The information matrix of pairwise comparisons whose curvatures are ``curv`` (a
    graph Laplacian: singular along the common shift, which the callers fix)."""
    lap = -curv
    lap[np.diag_indices_from(lap)] = curv.sum(axis=1) - np.diag(curv)
    return lap


def fit_outsiders(points: FloatArray, weights: FloatArray, pool_x: FloatArray) -> FloatArray:
    """Each outsider's own maximum likelihood against the fixed pool (rows: outsiders with a
    two-sided record against the pool; columns: pool members). Also a person's against the
    bots held fixed (arena/ratings/people.py)."""
    x = np.zeros(len(points))
    for _ in range(_MAX_NEWTON):
        p = sigmoid(x[:, None] - pool_x[None, :])
        grad = (points - weights * p).sum(axis=1)
        info = (weights * p * (1.0 - p)).sum(axis=1)
        step = np.clip(grad / info, -2.0, 2.0)  # one-dimensional and concave: clipping is enough
        x = x + step
        if len(step) == 0 or float(np.max(np.abs(step))) < _NEWTON_TOL:
            fitted: FloatArray = x
            return fitted
    raise ConvergenceError(f"Newton did not converge for {len(x)} bots fitted against the pool")
