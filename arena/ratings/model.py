"""The official Tonk Arena rating: a Bradley-Terry fit on the Elo scale, anchored on the
established pool so that a newcomer or a one-sided record cannot move anyone else.

Model
    ``P(i beats j) = 1 / (1 + 10 ** ((R_j - R_i) / 400))``. A match becomes pairwise results
    by final score: every pair of seats scores 1, ½ or 0 by comparing the two final match
    scores (equal scores are a draw), and each pair is weighted ``1/(n-1)`` at an ``n``-seat
    table, so every seat carries the same total weight, 1, whatever the table size. Matches
    reduce to pairwise sums (arena/ratings/data.py), so the fit does not depend on the order the
    matches finished in (only on floating-point summation order).

The established pool, and the scale
    The *pool* is the largest group of bots that each played at least ``min_matches`` rated
    matches and whose results are two-sided within the group: every member both scored
    against and conceded to the others, directly or round a chain (a strongly connected
    group, which is exactly when the maximum-likelihood fit is finite without a prior). The
    pool is fitted by plain maximum likelihood on the pairs among its members, and its
    weighted mean is ``anchor`` (1500): **1500 is the average of the established pool**, every
    member counting the same once it has played ``min_matches + 60`` matches and has both
    scored and conceded 2 points (comparisons won and lost, a pair weighted as in the fit);
    before that its share grows linearly from nothing at ``min_matches`` matches and at ½
    point, so that a newcomer's crossing of ``min_matches`` or a hopeless bot's one draw does
    not move the zero (:func:`_centre_weights`; bench/stat_checks.py anchor); while no member
    counts yet, the plain mean. If no two bots qualify, the largest two-sided group of any bots
    is the pool (or, failing that, the bot with the most matches alone).

Everyone else
    Each bot outside the pool is fitted alone against the pool, on its pairs with pool members,
    the pool's ratings held fixed: so it moves nobody. If that record is one-sided (it won, or
    lost, every comparison) it has no finite estimate; it gets a one-sided bound instead: the
    rating at which a record as one-sided would happen with probability ``1 - level``
    (``low`` only, "above", for a clean sweep; ``high`` only, "below", for no points). Its
    ``elo`` is that bound, for sorting. A bot with no pairs against the pool is not rated.

Intervals
    A cluster-robust sandwich (clustered by deal: the matches dealt the same cards, which in
    duplicate play are one independent unit; a match given no deal is its own) over the stacked
    estimating equations: the
    pool's and each outsider's, so an outsider's interval includes the pool's own uncertainty.
    The pool's intervals are those of ``R_i`` minus the zero. LOS is the probability that a bot
    is stronger than the next one down the table (normal approximation, covariances
    included); it is None next to a one-sided bound.

Provisional
    A bot is provisional, with the first reason that applies: ``"one-sided"`` (its record
    against the pool is all wins or all losses), ``"few-matches"`` (fewer than
    ``min_matches``), ``"wide-interval"`` (wider than ``max_width`` Elo).
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Literal

import numpy as np
import numpy.typing as npt

from arena.ratings.data import BoolArray, FloatArray, IntArray, RatingData, meat, sigmoid

__all__ = [
    "ELO_SCALE",
    "Basis",
    "ConvergenceError",
    "DuplicateMatchError",
    "OptionError",
    "RatedMatch",
    "RatedMatchError",
    "Rating",
    "RatingModel",
    "RatingTable",
    "RatingsError",
    "Reason",
    "fit",
    "history",
]

#: Natural-log units per Elo point: P = 1 / (1 + exp(-ELO_SCALE * (R_i - R_j))).
ELO_SCALE = math.log(10.0) / 400.0
_MAX_NEWTON = 200
# Newton converges quadratically: once a step is this small (natural units) the next one is
# at rounding level, so the result no longer depends on where the iteration started.
_NEWTON_TOL = 1e-10

#: How a rating was obtained: a pool member, fitted against the pool, or a one-sided bound.
Basis = Literal["pool", "fitted", "one-sided"]
#: Why a rating is provisional.
Reason = Literal["one-sided", "few-matches", "wide-interval"]


class RatingsError(ValueError):
    """Base of every error the rating system raises for bad input."""


class RatedMatchError(RatingsError):
    """A malformed match: fewer than 2 seats, bots and scores of different lengths, a bot
    seated twice, a score that is not a finite number, or something that is not a match."""


class DuplicateMatchError(RatingsError):
    """The same ``match_id`` given twice, which would count one match twice."""


class OptionError(RatingsError):
    """A fit option out of range, such as ``level=1`` or a negative ``min_matches``."""


class ConvergenceError(RuntimeError):
    """The Newton iteration did not converge (the objective is strictly concave, so this
    means a bug or non-finite data, not bad luck)."""


@dataclass(frozen=True)
class RatedMatch:
    """One rated match: the bots in seat order and their final match scores (chips), and the
    deal it was dealt from (any key; matches with equal keys are one cluster of the interval;
    None: a deal of its own)."""

    match_id: str | int
    bots: tuple[str, ...]
    scores: tuple[float, ...]
    deal: str | int | tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        # Validated here, once, so ``fit`` can trust every RatedMatch it is given.
        where = f"match {self.match_id!r}"
        if isinstance(self.match_id, bool) or not isinstance(self.match_id, str | int):
            raise RatedMatchError(f"{where} has an id that is neither a string nor an int")
        if isinstance(self.bots, str) or isinstance(self.scores, str):
            raise RatedMatchError(
                f"{where} has bots {self.bots!r} and scores "
                f"{self.scores!r}; both must be sequences, not strings"
            )
        try:
            bots, scores = tuple(self.bots), tuple(self.scores)
        except TypeError:
            raise RatedMatchError(
                f"{where} has bots {self.bots!r} and scores {self.scores!r}; both must be sequences"
            ) from None
        object.__setattr__(self, "bots", bots)
        object.__setattr__(self, "scores", scores)
        if len(bots) < 2:
            raise RatedMatchError(
                f"{where} has {len(bots)} seat(s) {bots!r}; a rated match needs at least 2"
            )
        if len(scores) != len(bots):
            raise RatedMatchError(
                f"{where} has {len(bots)} bots {bots!r} but {len(scores)} scores {scores!r}"
            )
        for bot in bots:
            if not isinstance(bot, str):
                raise RatedMatchError(f"{where} has bot id {bot!r}; bot ids are strings")
        if len(set(bots)) != len(bots):
            raise RatedMatchError(f"{where} seats the same bot twice: {bots!r}")
        for score in scores:
            if not _is_finite_real(score):
                raise RatedMatchError(
                    f"{where} has score {score!r} in {scores!r}; scores are finite numbers"
                )
        if not (self.deal is None or isinstance(self.deal, str | int | tuple)) or isinstance(self.deal, bool):
            raise RatedMatchError(f"{where} has deal {self.deal!r}; a deal is a string, int or tuple")


def _is_finite_real(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int too big for a float
        return False


@dataclass(frozen=True)
class Rating:
    """One bot's rating with its interval (at the fit's ``level``, 95% by default).

    ``low``/``high`` are None on the open side of a one-sided bound (``basis="one-sided"``):
    ``low`` only means "at least low", ``high`` only "at most high"; ``elo`` is then the bound."""

    bot: str
    elo: float
    low: float | None
    high: float | None
    #: Rated matches the bot played.
    matches: int
    provisional: bool
    basis: Basis = "pool"
    reason: Reason | None = None


@dataclass(frozen=True)
class RatingTable:
    """The result of a fit.

    ``ratings`` is sorted best first (ratings within 1e-6 Elo by bot id), the one-sided bounds
    after every estimate (by bound). ``los[i]`` is the
    likelihood of superiority of ``ratings[i]`` over ``ratings[i + 1]`` (None next to a
    one-sided bound). ``pairwise[(a, b)]`` is ``(points of a against b, weight)``: the model's
    weighted pairwise score and weighted number of comparisons (``points / weight`` is a's
    score rate), for every ordered pair that met. ``pool`` lists the established pool (whose
    mean is the anchor); ``unrated`` the bots with no result against it.
    """

    ratings: list[Rating] = field(default_factory=list)
    los: list[float | None] = field(default_factory=list)
    pairwise: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    pool: list[str] = field(default_factory=list)
    unrated: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Options:
    anchor: float
    level: float
    min_matches: int
    max_width: float


def _options(anchor: float, level: float, min_matches: int, max_width: float) -> _Options:
    if not (isinstance(anchor, numbers.Real) and math.isfinite(anchor)):
        raise OptionError(f"anchor {anchor!r} is not a finite number")
    if not (isinstance(level, numbers.Real) and 0 < level < 1):
        raise OptionError(f"level {level!r} must be between 0 and 1")
    if type(min_matches) is not int or min_matches < 0:
        raise OptionError(f"min_matches {min_matches!r} must be a non-negative integer")
    if not (isinstance(max_width, numbers.Real) and max_width > 0):
        raise OptionError(f"max_width {max_width!r} must be positive")
    return _Options(float(anchor), float(level), min_matches, float(max_width))


# --- The pool ---------------------------------------------------------------------------------


def _reach(scored: BoolArray, start: int, members: BoolArray) -> BoolArray:
    """Bots in ``members`` reachable from ``start`` along ``scored[a, b]`` (a scored against b)."""
    seen = np.zeros(len(members), dtype=bool)
    seen[start] = True
    frontier = seen.copy()
    while frontier.any():
        nxt = scored[frontier].any(axis=0) & members & ~seen
        seen |= nxt
        frontier = nxt
    return seen


def _largest_two_sided(
    scored: BoolArray, members: BoolArray, matches: IntArray, names: list[str]
) -> BoolArray:
    """The largest strongly connected group of ``members`` (ties: more matches, then the
    first bot id), found by peeling components off in order of matches played."""
    left = members.copy()
    best = np.zeros(len(members), dtype=bool)
    best_key: tuple[int, int, str] | None = None
    order = sorted(np.flatnonzero(members).tolist(), key=lambda i: (-int(matches[i]), names[i]))
    for root in order:
        if not left[root]:
            continue
        if best_key is not None and int(left.sum()) < best_key[0]:
            break
        group = _reach(scored, root, left) & _reach(scored.T, root, left)
        key = (int(group.sum()), int(matches[group].sum()), names[root])
        if best_key is None or (key[0], key[1]) > (best_key[0], best_key[1]):
            best, best_key = group, key
        left &= ~group
    return best


def _pool(data: RatingData, min_matches: int) -> BoolArray:
    k = data.k
    points, weights = data.points[:k, :k], data.weights[:k, :k]
    scored = points > 0  # draws count both ways: points are half the weight then
    matches = data.matches[:k]
    pool = _largest_two_sided(scored, matches >= min_matches, matches, data.names)
    if pool.sum() < 2:
        pool = _largest_two_sided(scored, weights.sum(axis=1) > 0, matches, data.names)
    return pool


# --- Fitting ----------------------------------------------------------------------------------


def _pool_objective(points: FloatArray, x: FloatArray) -> float:
    return float(np.sum(points * -np.logaddexp(0.0, -(x[:, None] - x[None, :]))))


def _fit_pool(points: FloatArray, weights: FloatArray, x0: FloatArray) -> FloatArray:
    """Maximum likelihood over the pool's pairs, mean 0 (natural units), by damped Newton. The
    pool is strongly connected, so the maximum is finite and unique up to the mean."""
    k = len(x0)
    x = x0 - x0.mean() if k else x0
    if k < 2:
        return np.zeros(k)
    f = _pool_objective(points, x)
    for _ in range(_MAX_NEWTON):
        p = sigmoid(x[:, None] - x[None, :])
        grad = (points - weights * p).sum(axis=1)
        lap = _laplacian(weights * p * (1.0 - p))
        step = np.linalg.solve(lap + 1.0 / k, grad)  # + 1/k: fixes the free mean
        size = float(np.max(np.abs(step)))
        if size < 1e-6:
            x = x + step
            if size < _NEWTON_TOL:
                centred: FloatArray = x - x.mean()
                return centred
            f = _pool_objective(points, x)
            continue
        t = 1.0
        while True:
            trial = x + t * step
            f_trial = _pool_objective(points, trial)
            if f_trial >= f or t < 1e-10:
                break
            t *= 0.5
        x, f = trial, f_trial
    raise ConvergenceError(f"Newton did not converge in {_MAX_NEWTON} iterations ({k} bots in the pool)")


def _laplacian(curv: FloatArray) -> FloatArray:
    lap = -curv
    lap[np.diag_indices_from(lap)] = curv.sum(axis=1) - np.diag(curv)
    return lap


def _fit_outsiders(points: FloatArray, weights: FloatArray, pool_x: FloatArray) -> FloatArray:
    """Each outsider's own maximum likelihood against the fixed pool (rows: outsiders with a
    two-sided record against the pool; columns: pool members)."""
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


def _one_sided_bound(weights: FloatArray, pool_x: FloatArray, won: bool, alpha: float) -> float:
    """The rating at which a record this one-sided has probability ``alpha`` (natural units):
    a lower bound for a clean sweep, an upper one for a record without a point."""
    sign = 1.0 if won else -1.0

    def log_prob(x: float) -> float:  # log P(every comparison goes the record's way)
        return float(np.sum(weights * -np.logaddexp(0.0, -sign * (x - pool_x))))

    lo, hi = float(pool_x.min()) - 50.0, float(pool_x.max()) + 50.0
    target = math.log(alpha)
    for _ in range(200):  # log_prob is monotone: bisection
        mid = 0.5 * (lo + hi)
        if (log_prob(mid) < target) == won:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@dataclass
class _Fit:
    """What a full fit leaves for incremental updates between full fits."""

    pool: BoolArray  # over bot codes
    x: FloatArray  # natural units, 0 for bots without a finite estimate
    finite: BoolArray  # pool members and outsiders with a two-sided record
    meat: FloatArray  # over np.flatnonzero(finite), at the x of the last full fit
    blocks: int  # blocks already in ``meat``
    bread: FloatArray  # the stacked equations' inverse information at the last full fit


class RatingModel:
    """Matches added over time and the ratings fitted from them.

    :meth:`fit` is the full fit. :meth:`update` is the cheap one between full fits: the new
    matches' pairwise sums are in, the pool's membership and the old matches' share of the
    interval's meat and its bread (the inverse information) are kept from the last full fit,
    and the ratings take one Newton step with that inverse. The ratings match a full fit to
    a small fraction of an Elo point; the intervals are off by about the share of matches
    added since the last full fit (1% after 1% more matches).
    """

    def __init__(
        self,
        *,
        anchor: float = 1500.0,
        level: float = 0.95,
        min_matches: int = 20,
        max_width: float = 200.0,
    ) -> None:
        self.opts = _options(anchor, level, min_matches, max_width)
        self.data = RatingData()
        self._ids: set[str | int] = set()
        self._last: _Fit | None = None
        # The last report's Elo and covariance rows (B M, natural units), kept so that LOS
        # over any order of bots (:meth:`los`) costs no more products.
        self._elo: FloatArray = np.zeros(0)
        self._bm: FloatArray = np.zeros((0, 0))

    @property
    def total(self) -> int:
        """Matches added."""
        return self.data.total

    def __contains__(self, match_id: object) -> bool:
        """Whether a match with this id was added (by :meth:`add`)."""
        return match_id in self._ids

    def add(self, results: Iterable[RatedMatch]) -> None:
        """Add matches; raises RatedMatchError or DuplicateMatchError (adding none of them)."""
        by_size: dict[int, tuple[list[str], list[float], list[object]]] = {}
        ids: list[str | int] = []
        for result in results:
            if not isinstance(result, RatedMatch):
                raise RatedMatchError(f"expected a RatedMatch, got {result!r}")
            ids.append(result.match_id)
            bots, scores, deals = by_size.setdefault(len(result.bots), ([], [], []))
            bots.extend(result.bots)
            scores.extend(float(s) for s in result.scores)
            deals.append(result.deal)
        self._check_ids(ids)
        for n in sorted(by_size):
            bots, scores, deals = by_size[n]
            idx = self.data.code_of(bots).reshape(-1, n)
            named = [d for d in deals if d is not None]
            codes = np.full(len(deals), -1, dtype=np.int64)
            if named:
                codes[[i for i, d in enumerate(deals) if d is not None]] = self.data.deal_of(named)
            self.data.add(n, idx, np.asarray(scores, dtype=np.float64).reshape(-1, n), codes)

    def add_table(self, bots: Sequence[str], seats: npt.ArrayLike, scores: npt.ArrayLike) -> None:
        """Add matches given as arrays (no match ids, so no duplicate check): ``seats[m, s]``
        indexes ``bots`` for seat ``s`` of match ``m``, ``scores[m, s]`` is that seat's score."""
        seat_arr = np.asarray(seats)
        score_arr = np.asarray(scores, dtype=np.float64)
        if seat_arr.ndim != 2 or seat_arr.shape != score_arr.shape or not 2 <= seat_arr.shape[1] <= 64:
            raise RatedMatchError(
                f"seats {seat_arr.shape} and scores {score_arr.shape} must be equal (matches, seats) arrays"
            )
        if not np.issubdtype(seat_arr.dtype, np.integer) or (
            seat_arr.size and (seat_arr.min() < 0 or seat_arr.max() >= len(bots))
        ):
            raise RatedMatchError(f"seats must index the {len(bots)} bots given")
        if not np.isfinite(score_arr).all():
            raise RatedMatchError("scores must be finite numbers")
        ordered = np.sort(seat_arr, axis=1)
        if (ordered[:, 1:] == ordered[:, :-1]).any():
            raise RatedMatchError("a match seats the same bot twice")
        codes = self.data.code_of(list(bots))
        self.data.add(seat_arr.shape[1], codes[seat_arr], score_arr)

    def _check_ids(self, ids: list[str | int]) -> None:
        batch = set(ids)
        if len(batch) != len(ids) or not self._ids.isdisjoint(batch):
            seen = set(self._ids)
            for match_id in ids:  # slow path, only to name the culprit
                if match_id in seen:
                    raise DuplicateMatchError(f"match id {match_id!r} is given more than once")
                seen.add(match_id)
        self._ids |= batch

    def fit(self, *, pairwise: bool = True) -> RatingTable:
        """The full fit (``pairwise=False`` skips the pairwise table: a million entries at
        1,000 bots)."""
        data = self.data
        k = data.k
        if k == 0:
            return RatingTable()
        pool = _pool(data, self.opts.min_matches)
        last = self._last
        # Warm start from the last fit when the pool is the same (the maximum is unique).
        same = last is not None and len(last.pool) == k and np.array_equal(last.pool, pool)
        x0 = last.x[pool] if same and last is not None else np.zeros(int(pool.sum()))
        x, finite = self._estimate(pool, x0)
        position = np.where(finite, np.cumsum(finite) - 1, -1)
        m = meat(data.blocks, x, position, pool, int(finite.sum()))
        bread = _bread(data.weights[:k, :k], pool, finite, x, self._shares(pool))
        self._last = _Fit(pool, x, finite, m, len(data.blocks), bread)
        return self._report(pairwise)

    def update(self, *, pairwise: bool = True) -> RatingTable:
        """The cheap refit after adding matches (a full fit if there was none, or if bots that
        need a place in the interval's matrices arrived)."""
        last = self._last
        if last is None:
            return self.fit(pairwise=pairwise)
        k = self.data.k
        pool = np.zeros(k, dtype=bool)
        pool[: len(last.pool)] = last.pool[:k]
        # One Newton step with the last full fit's inverse information: the few matches
        # since then barely change it, and it saves solving a bots x bots system.
        in_pool = last.pool[last.finite]
        pool_inv = last.bread[np.ix_(in_pool, in_pool)]
        x, finite = self._estimate(pool, last.x[last.pool], pool_inv=pool_inv)
        old_finite = np.zeros(k, dtype=bool)
        old_finite[: len(last.finite)] = last.finite[:k]
        if not np.array_equal(finite, old_finite):
            return self.fit(pairwise=pairwise)
        position = np.where(finite, np.cumsum(finite) - 1, -1)
        new = self.data.blocks[last.blocks :]
        m = last.meat + meat(new, x, position, pool, int(finite.sum()))
        self._last = _Fit(pool, x, finite, m, len(self.data.blocks), last.bread)
        return self._report(pairwise)

    def _estimate(
        self, pool: BoolArray, x0: FloatArray, pool_inv: FloatArray | None = None
    ) -> tuple[FloatArray, BoolArray]:
        data = self.data
        k = data.k
        points, weights = data.points[:k, :k], data.weights[:k, :k]
        members = np.flatnonzero(pool)
        pp, pw = points[np.ix_(members, members)], weights[np.ix_(members, members)]
        pool_x = _fit_pool(pp, pw, x0) if pool_inv is None else _newton_step(pp, pw, x0, pool_inv)
        x = np.zeros(k)
        x[members] = pool_x
        outside = np.flatnonzero(~pool)
        op, ow = points[np.ix_(outside, members)], weights[np.ix_(outside, members)]
        scored, played = op.sum(axis=1), ow.sum(axis=1)
        two_sided = (played > 0) & (scored > 0) & (scored < played)
        x[outside[two_sided]] = _fit_outsiders(op[two_sided], ow[two_sided], pool_x)
        finite = pool.copy()
        finite[outside[two_sided]] = True
        x[finite] -= self._shares(pool) @ pool_x  # the scale's zero (every bot moves alike)
        return x, finite

    def _shares(self, pool: BoolArray) -> FloatArray:
        """The pool members' shares of the scale's zero (:func:`_centre_weights`), from their
        records against everyone they met."""
        data = self.data
        k = data.k
        members = np.flatnonzero(pool)
        scored = data.points[members, :k].sum(axis=1)
        conceded = data.weights[members, :k].sum(axis=1) - scored
        return _centre_weights(scored, conceded, data.matches[members], self.opts.min_matches)

    def _report(self, pairwise: bool) -> RatingTable:
        assert self._last is not None
        data, opts, last = self.data, self.opts, self._last
        k = data.k
        points, weights = data.points[:k, :k], data.weights[:k, :k]
        pool, x, finite = last.pool, last.x, last.finite
        # Only the variances and the neighbours' covariances are needed: (B M) row by B row,
        # one bots x bots product instead of the full B M B^T.
        units = data.deals  # the clusters: named deals plus matches given none
        scale = units / (units - 1) if units > 1 else 1.0  # small-sample correction
        bm = last.bread @ (last.meat * (scale / ELO_SCALE**2))

        self._bm = bm

        z = NormalDist().inv_cdf(0.5 + opts.level / 2)
        members = np.flatnonzero(pool)
        rated = np.flatnonzero(finite)
        sd = np.zeros(k)
        sd[rated] = np.sqrt(np.maximum(np.einsum("ij,ij->i", bm, last.bread), 0.0))
        elo = opts.anchor + x / ELO_SCALE
        low: list[float | None] = (elo - z * sd).tolist()
        high: list[float | None] = (elo + z * sd).tolist()
        basis: list[Basis] = ["pool" if pool[i] else "fitted" for i in range(k)]
        unrated: list[str] = []
        shown = set(rated.tolist())
        for i in np.flatnonzero(~finite).tolist():
            w = weights[i, members]
            played, scored = float(w.sum()), float(points[i, members].sum())
            if played == 0:
                unrated.append(data.names[i])
                continue
            won = scored >= played
            bound = opts.anchor + _one_sided_bound(w, x[members], won, 1.0 - opts.level) / ELO_SCALE
            elo[i] = bound
            low[i], high[i] = (bound, None) if won else (None, bound)
            basis[i] = "one-sided"
            shown.add(i)
        # One-sided bounds come after every estimate: a bound is not a rating to rank by.
        order = sorted(shown, key=lambda i: (not finite[i], -round(float(elo[i]), 6), data.names[i]))
        ratings = []
        for i in order:
            lo, hi = low[i], high[i]
            reason: Reason | None = None
            if basis[i] == "one-sided":
                reason = "one-sided"
            elif int(data.matches[i]) < opts.min_matches:
                reason = "few-matches"
            elif lo is not None and hi is not None and hi - lo > opts.max_width:
                reason = "wide-interval"
            ratings.append(
                Rating(data.names[i], float(elo[i]), lo, hi, int(data.matches[i]), reason is not None,
                       basis[i], reason)
            )
        self._elo = elo
        los = self._los(order)
        pairs: dict[tuple[str, str], tuple[float, float]] = {}
        if pairwise:
            a_idx, b_idx = np.nonzero(weights)
            pairs = {
                (data.names[a], data.names[b]): (float(points[a, b]), float(weights[a, b]))
                for a, b in zip(a_idx.tolist(), b_idx.tolist(), strict=True)
            }
        pool_names = sorted(data.names[i] for i in members.tolist())
        return RatingTable(ratings, los, pairs, pool_names, sorted(unrated))

    def los(self, bots: Sequence[str]) -> list[float | None]:
        """The likelihood of superiority of each of ``bots`` over the next one in the order
        given (one fewer than ``bots``), by the last fit or update: as ``RatingTable.los``
        but down any order, such as a table of some of the bots only. None next to a bot
        without a finite estimate (a one-sided bound, or unknown)."""
        return self._los([self.data.codes.get(b, -1) for b in bots])

    def _los(self, order: list[int]) -> list[float | None]:
        last, elo, bm = self._last, self._elo, self._bm
        los: list[float | None] = []
        if last is None:
            return [None] * max(0, len(order) - 1)
        finite = last.finite
        row = np.cumsum(finite) - 1

        def cov(a: int, b: int) -> float:
            return float(bm[a] @ last.bread[b])

        for i, j in itertools.pairwise(order):
            if min(i, j) < 0 or max(i, j) >= len(finite) or not (finite[i] and finite[j]):
                los.append(None)
                continue
            a, b = row[i], row[j]
            spread = math.sqrt(max(cov(a, a) + cov(b, b) - cov(a, b) - cov(b, a), 0.0))
            diff = float(elo[i] - elo[j])
            los.append(NormalDist().cdf(diff / spread) if spread > 0 else 0.5 if diff == 0 else 1.0)
        return los


def _newton_step(points: FloatArray, weights: FloatArray, x: FloatArray, pool_inv: FloatArray) -> FloatArray:
    """One undamped Newton step from ``x`` (near the maximum already: an update's start),
    with ``pool_inv`` the (pseudo-)inverse information from a fit nearby."""
    k = len(x)
    if k < 2:
        return np.zeros(k)
    p = sigmoid(x[:, None] - x[None, :])
    grad = (points - weights * p).sum(axis=1)
    step = pool_inv @ grad
    out: FloatArray = x + step
    centred: FloatArray = out - out.mean()
    return centred


#: Matches past ``min_matches`` over which a pool member's share of the zero grows to full.
RAMP_MATCHES = 60
#: Points (comparisons won, pairs weighted 1/(seats - 1)) a member must have both scored and
#: conceded before it counts in the zero at all, and the points over which it grows to full.
MIN_POINTS, RAMP_POINTS = 0.5, 1.5


def _centre_weights(
    scored: FloatArray, conceded: FloatArray, matches: IntArray, min_matches: int
) -> FloatArray:
    """The pool members' shares of the scale's zero, from each member's own record only:
    every member counts the same once it has played ``min_matches + RAMP_MATCHES`` matches
    and both scored and conceded ``MIN_POINTS + RAMP_POINTS`` points; before that its share
    grows linearly from nothing at ``min_matches`` matches and at ``MIN_POINTS`` points.

    Equal shares, because whatever the zero weighs unequally moves with the members' new
    results: a member weighted unlike the others shifts everyone when its own rating moves,
    and information weights (the previous rule) also jumped when a joining bot's games
    entered the pool (bench/stat_checks.py anchor: 15-18 Elo in a 6-bot pool). The ramps keep
    out who should not count yet: a newcomer that has just crossed ``min_matches``, and a bot
    whose record is barely two-sided (a hopeless bot's first draw, ½ point scored, gives it no
    share), hundreds of Elo from the rest. The points ramp ends low because a pool's own best
    and worst members concede or score few points too, and must already count in full when a
    hopeless bot draws with them. The record, not the fitted ratings, sets the shares, so they
    cannot jump when someone else's results change."""
    if len(matches) == 0:
        return np.zeros(0)
    by_matches = np.clip((matches - min_matches) / RAMP_MATCHES, 0.0, 1.0)
    by_points = np.clip((np.minimum(scored, conceded) - MIN_POINTS) / RAMP_POINTS, 0.0, 1.0)
    share = by_matches * by_points
    total = float(share.sum())
    if total <= 0:  # nobody has started counting (a young arena): the plain mean
        return np.full(len(matches), 1.0 / len(matches))
    out: FloatArray = share / total
    return out


def _bread(
    weights: FloatArray, pool: BoolArray, finite: BoolArray, x: FloatArray, share: FloatArray
) -> FloatArray:
    """The sandwich's bread (natural units) for the finite estimates, in code order: the
    stacked equations' inverse information ``L^-1``. ``L`` is block lower triangular (the
    pool's equations do not involve outsiders), so ``L^-1`` is explicit; the covariance is
    ``L^-1 M L^-T`` around the meat ``M``."""
    rated = np.flatnonzero(finite)
    in_pool = pool[rated]
    members, outsiders = rated[in_pool], rated[~in_pool]
    p_mm = sigmoid(x[members][:, None] - x[members][None, :])
    lap = _laplacian(weights[np.ix_(members, members)] * p_mm * (1.0 - p_mm))
    km = len(members)
    pool_inv = np.linalg.inv(lap + 1.0 / km) - 1.0 / km if km else np.zeros((0, 0))  # pseudo-inverse
    p_om = sigmoid(x[outsiders][:, None] - x[members][None, :])
    curv = weights[np.ix_(outsiders, members)] * p_om * (1.0 - p_om)
    own = curv.sum(axis=1)
    inv = np.zeros((len(rated), len(rated)))
    mi, oi = np.flatnonzero(in_pool), np.flatnonzero(~in_pool)
    inv[np.ix_(mi, mi)] = pool_inv
    inv[np.ix_(oi, mi)] = (curv @ pool_inv) / own[:, None]
    inv[oi, oi] = 1.0 / own
    # Every estimate is read against the pool's weighted centre (``share``, which depends on
    # the records only, not on the estimates), not the plain mean ``pool_inv`` assumes:
    # subtract the centre's own row from every row.
    inv -= (share @ inv[mi])[None, :]
    return inv


# --- Public API -------------------------------------------------------------------------------


def fit(
    results: Iterable[RatedMatch],
    *,
    anchor: float = 1500.0,
    level: float = 0.95,
    min_matches: int = 20,
    max_width: float = 200.0,
) -> RatingTable:
    """Fit the ratings of every bot in ``results``.

    ``anchor`` is the established pool's mean rating, ``level`` the coverage of intervals and
    one-sided bounds, ``min_matches`` both the pool's entry bar and the provisional bar,
    ``max_width`` the widest interval that is not provisional.

    Raises :class:`RatedMatchError`, :class:`DuplicateMatchError` or :class:`OptionError`.
    """
    model = RatingModel(anchor=anchor, level=level, min_matches=min_matches, max_width=max_width)
    model.add(results)
    return model.fit()


def history(
    tournaments: Iterable[tuple[str, Iterable[RatedMatch]]],
    *,
    anchor: float = 1500.0,
    level: float = 0.95,
    min_matches: int = 20,
    max_width: float = 200.0,
) -> list[tuple[str, RatingTable]]:
    """The ratings after each tournament, in the order given: entry ``t`` is ``fit`` over the
    matches of tournaments ``0..t`` (options as for :func:`fit`). Match ids must be unique
    across tournaments."""
    model = RatingModel(anchor=anchor, level=level, min_matches=min_matches, max_width=max_width)
    out: list[tuple[str, RatingTable]] = []
    for name, results in tournaments:
        model.add(results)
        out.append((name, model.fit()))
    return out
