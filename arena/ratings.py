"""The official Tonk Arena rating: a batch Bradley-Terry fit on the Elo scale.

Model
    ``P(i beats j) = 1 / (1 + 10 ** ((R_j - R_i) / 400))``. A match becomes pairwise results
    by final score: every pair of seats scores 1, ½ or 0 by comparing the two final match
    scores (equal scores are a draw), and each pair is weighted ``1/(n-1)`` at an ``n``-seat
    table, so every seat carries the same total weight, 1, whatever the table size. The
    ratings maximise the weighted log-likelihood of all rated matches at once, so they do not
    depend on the order the matches finished in (only on floating-point summation order).

Prior
    Every bot plays ``prior_games`` (default 2) virtual draws against a virtual player rated
    ``anchor``. That is a weak prior (about ±250 Elo, one standard deviation, for the default)
    that keeps an unbeaten bot, a bot that lost everything and groups of bots that never met
    each other finite and identified. It weighs as much as two even games, so a bot's own
    matches soon outweigh it.

Anchoring
    After the fit the ratings are shifted so that their mean over the bots in the fit is
    exactly ``anchor`` (default 1500). Only differences are estimated; the intervals are those
    of ``R_i - mean(R)``, and adding a bot can move everybody's level but not their gaps.

Intervals
    Clustered by match. ``method="sandwich"`` (default) is the cluster-robust sandwich
    ``H⁻¹ (Σ_m U_m U_mᵀ + P) H⁻¹``, with ``U_m`` a match's contribution to the score, ``H`` the
    observed information including the prior's and ``P`` the prior's own information, which
    stands in as pseudo-data so that directions the matches cannot pin down (the offset
    between groups that never met) get the prior's width instead of none. ``method=
    "bootstrap"`` resamples whole matches (percentile intervals, LOS as the fraction of
    replicates in which the higher bot stays ahead). LOS is the probability that a bot is
    stronger than the next one down the table.

Provisional
    A bot is provisional if it played fewer than ``min_matches`` rated matches, if its interval
    is wider than ``max_width`` Elo, or if it won (or lost) every comparison it had: then its
    rating is set by the prior alone and a resampling interval cannot tell how far it is out.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = [
    "ELO_SCALE",
    "ConvergenceError",
    "DuplicateMatchError",
    "MatchResult",
    "MatchResultError",
    "Method",
    "OptionError",
    "Rating",
    "RatingTable",
    "RatingsError",
    "fit",
    "history",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Natural-log units per Elo point: P = 1 / (1 + exp(-ELO_SCALE * (R_i - R_j))).
ELO_SCALE = math.log(10.0) / 400.0
_MAX_NEWTON = 200
# Newton converges quadratically: once a step is this small (natural units) the next one is
# at rounding level, so the result no longer depends on where the iteration started.
_NEWTON_TOL = 1e-10

Method = Literal["sandwich", "bootstrap"]


class RatingsError(ValueError):
    """Base of every error the rating system raises for bad input."""


class MatchResultError(RatingsError):
    """A malformed match: fewer than 2 seats, bots and scores of different lengths, a bot
    seated twice, a score that is not a finite number, or something that is not a match."""


class DuplicateMatchError(RatingsError):
    """The same ``match_id`` given twice, which would count one match twice."""


class OptionError(RatingsError):
    """A fit option out of range, such as an unknown ``method`` or ``prior_games <= 0``."""


class ConvergenceError(RuntimeError):
    """The Newton iteration did not converge (the objective is strictly concave, so this
    means a bug or non-finite data, not bad luck)."""


@dataclass(frozen=True)
class MatchResult:
    """One rated match: the bots in seat order and their final match scores (chips)."""

    match_id: str | int
    bots: tuple[str, ...]
    scores: tuple[float, ...]

    def __post_init__(self) -> None:
        # Validated here, once, so ``fit`` can trust every MatchResult it is given.
        where = f"match {self.match_id!r}"
        if isinstance(self.match_id, bool) or not isinstance(self.match_id, str | int):
            raise MatchResultError(f"{where} has an id that is neither a string nor an int")
        if isinstance(self.bots, str) or isinstance(self.scores, str):
            raise MatchResultError(
                f"{where} has bots {self.bots!r} and scores "
                f"{self.scores!r}; both must be sequences, not strings"
            )
        try:
            bots, scores = tuple(self.bots), tuple(self.scores)
        except TypeError:
            raise MatchResultError(
                f"{where} has bots {self.bots!r} and scores {self.scores!r}; both must be sequences"
            ) from None
        object.__setattr__(self, "bots", bots)
        object.__setattr__(self, "scores", scores)
        if len(bots) < 2:
            raise MatchResultError(
                f"{where} has {len(bots)} seat(s) {bots!r}; a rated match needs at least 2"
            )
        if len(scores) != len(bots):
            raise MatchResultError(
                f"{where} has {len(bots)} bots {bots!r} but {len(scores)} scores {scores!r}"
            )
        for bot in bots:
            if not isinstance(bot, str):
                raise MatchResultError(f"{where} has bot id {bot!r}; bot ids are strings")
        if len(set(bots)) != len(bots):
            raise MatchResultError(f"{where} seats the same bot twice: {bots!r}")
        for score in scores:
            if not _is_finite_real(score):
                raise MatchResultError(
                    f"{where} has score {score!r} in {scores!r}; scores are finite numbers"
                )


def _is_finite_real(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int too big for a float
        return False


@dataclass(frozen=True)
class Rating:
    """One bot's rating with its interval (at the fit's ``level``, 95% by default)."""

    bot: str
    elo: float
    low: float
    high: float
    #: Rated matches the bot played.
    matches: int
    provisional: bool


@dataclass(frozen=True)
class RatingTable:
    """The result of a fit.

    ``ratings`` is sorted best first (ratings within 1e-6 Elo by bot id). ``los[i]`` is the likelihood of
    superiority of ``ratings[i]`` over ``ratings[i + 1]``. ``pairwise[(a, b)]`` is
    ``(points of a against b, weight)``: the weighted pairwise score and the weighted number
    of comparisons (``points / weight`` is a's score rate), for every ordered pair that met.
    """

    ratings: list[Rating] = field(default_factory=list)
    los: list[float] = field(default_factory=list)
    pairwise: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Options:
    method: Method
    anchor: float
    prior_games: float
    level: float
    samples: int
    seed: int
    min_matches: int
    max_width: float


def _options(
    method: str,
    anchor: float,
    prior_games: float,
    level: float,
    samples: int,
    seed: int,
    min_matches: int,
    max_width: float,
) -> _Options:
    if method not in ("sandwich", "bootstrap"):
        raise OptionError(f"method {method!r} is not 'sandwich' or 'bootstrap'")
    if not math.isfinite(anchor):
        raise OptionError(f"anchor {anchor!r} is not a finite number")
    if not (math.isfinite(prior_games) and prior_games > 0):
        # Without the prior an unbeaten bot has no finite maximum.
        raise OptionError(f"prior_games {prior_games!r} must be a positive number")
    if not 0 < level < 1:
        raise OptionError(f"level {level!r} must be between 0 and 1")
    if method == "bootstrap" and samples < 2:
        raise OptionError(f"samples {samples!r} must be at least 2 for the bootstrap")
    if min_matches < 0:
        raise OptionError(f"min_matches {min_matches!r} must not be negative")
    if not max_width > 0:
        raise OptionError(f"max_width {max_width!r} must be positive")
    return _Options(
        "bootstrap" if method == "bootstrap" else "sandwich",
        float(anchor),
        float(prior_games),
        float(level),
        int(samples),
        int(seed),
        int(min_matches),
        float(max_width),
    )


# --- Parsing ----------------------------------------------------------------------------------


@dataclass
class _Group:
    """All matches at one table size ``n``, with their pairwise comparisons."""

    idx: IntArray  # (m, n) bot index per seat
    rows: IntArray  # (m,) match number, in input order
    pa: IntArray  # (m, n(n-1)/2) first bot of each seat pair
    pb: IntArray  # (m, n(n-1)/2) second bot
    ps: FloatArray  # (m, n(n-1)/2) pa's result against pb: 1, 0.5 or 0
    cells: IntArray  # pa * k + pb, flat: where each pair lands in a k*k matrix
    weight: float  # 1/(n-1)
    incidence: FloatArray  # (pairs, n): +1 at a pair's first seat, -1 at its second


@dataclass
class _Data:
    names: list[str]  # bot ids, sorted; a bot's index is its position
    groups: list[_Group]
    match_ids: list[str | int]
    matches: IntArray  # rated matches per bot


class _Accumulator:
    """Matches parsed so far, so ``history`` parses each match once however many fits."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}  # first-appearance code per bot
        self._ids: list[str | int] = []
        self._seen: set[str | int] = set()
        self._blocks: dict[int, list[tuple[IntArray, FloatArray, IntArray]]] = {}

    def add(self, results: Iterable[MatchResult]) -> None:
        sizes: list[int] = []
        bots: list[str] = []
        scores: list[float] = []
        start = len(self._ids)
        ids: list[str | int] = []
        for result in results:
            if not isinstance(result, MatchResult):
                raise MatchResultError(f"expected a MatchResult, got {result!r}")
            ids.append(result.match_id)
            sizes.append(len(result.bots))
            bots.extend(result.bots)
            scores.extend(result.scores)
        self._check_ids(ids)
        if not ids:
            return
        codes = self._codes
        for bot in dict.fromkeys(bots):  # C-speed dedupe, then code only the new bots
            if bot not in codes:
                codes[bot] = len(codes)
        code = np.fromiter(map(codes.__getitem__, bots), dtype=np.int64, count=len(bots))
        score = np.asarray(scores, dtype=np.float64)
        size = np.asarray(sizes, dtype=np.int64)
        offset = np.concatenate(([0], np.cumsum(size)[:-1]))
        for n in np.unique(size).tolist():
            rows = np.flatnonzero(size == n)
            seats = offset[rows, None] + np.arange(n)
            self._blocks.setdefault(n, []).append((code[seats], score[seats], rows + start))

    def _check_ids(self, ids: list[str | int]) -> None:
        batch = set(ids)
        if len(batch) != len(ids) or not self._seen.isdisjoint(batch):
            seen = set(self._seen)
            for match_id in ids:  # slow path, only to name the culprit
                if match_id in seen:
                    raise DuplicateMatchError(f"match id {match_id!r} is given more than once")
                seen.add(match_id)
        self._seen |= batch
        self._ids.extend(ids)

    def data(self) -> _Data:
        names = sorted(self._codes)
        # Relabel to sorted bot ids so the result does not depend on who appeared first.
        relabel = np.empty(len(names), dtype=np.int64)
        relabel[[self._codes[name] for name in names]] = np.arange(len(names))
        groups = []
        matches = np.zeros(len(names), dtype=np.int64)
        for n in sorted(self._blocks):
            blocks = self._blocks[n]
            idx = relabel[np.concatenate([b[0] for b in blocks])]
            score = np.concatenate([b[1] for b in blocks])
            rows = np.concatenate([b[2] for b in blocks])
            u, v = np.triu_indices(n, 1)
            incidence = np.zeros((len(u), n))
            incidence[np.arange(len(u)), u] = 1.0
            incidence[np.arange(len(u)), v] = -1.0
            # C order throughout: the hot loops ravel these, and a copy there costs a lot.
            pa = np.ascontiguousarray(idx[:, u])
            pb = np.ascontiguousarray(idx[:, v])
            ps = np.ascontiguousarray(0.5 * (1.0 + np.sign(score[:, u] - score[:, v])))
            cells = (pa * len(names) + pb).ravel()
            groups.append(_Group(idx, rows, pa, pb, ps, cells, 1.0 / (n - 1), incidence))
            matches += np.bincount(idx.ravel(), minlength=len(names))
        return _Data(names, groups, list(self._ids), matches)


# --- Fitting ----------------------------------------------------------------------------------


def _aggregate(data: _Data, counts: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
    """Points ``P[a, b]`` of a against b and weights ``W[a, b]`` (symmetric), optionally with
    each match counted ``counts[match]`` times (the bootstrap)."""
    k = len(data.names)
    p_up = np.zeros(k * k)
    w_up = np.zeros(k * k)
    for g in data.groups:
        w: FloatArray
        if counts is None:
            w = np.full(g.cells.shape, g.weight)
        else:
            w = np.repeat(counts[g.rows] * g.weight, g.pa.shape[1])
        p_up += np.bincount(g.cells, w * g.ps.ravel(), minlength=k * k)
        w_up += np.bincount(g.cells, w, minlength=k * k)
    p_up2, w_up2 = p_up.reshape(k, k), w_up.reshape(k, k)
    # A pair's cell only holds one orientation; the other side gets weight minus points.
    return p_up2 + (w_up2 - p_up2).T, w_up2 + w_up2.T


def _log_sigmoid(z: FloatArray) -> FloatArray:
    return -np.logaddexp(0.0, -z)


def _sigmoid(z: FloatArray) -> FloatArray:
    return np.exp(_log_sigmoid(z))


def _objective(points: FloatArray, prior: float, x: FloatArray) -> float:
    diff = x[:, None] - x[None, :]
    data = float(np.sum(points * _log_sigmoid(diff)))
    return data + prior * 0.5 * float(np.sum(_log_sigmoid(x) + _log_sigmoid(-x)))


def _information(weights: FloatArray, prior: float, x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Expected-win matrix ``W * p`` and the information (minus the Hessian) at ``x``."""
    p = _sigmoid(x[:, None] - x[None, :])
    curv = weights * p * (1.0 - p)
    s = _sigmoid(x)
    info = -curv
    info[np.diag_indices_from(info)] = curv.sum(axis=1) + prior * s * (1.0 - s)
    return weights * p, info


def _solve(points: FloatArray, weights: FloatArray, prior: float, x0: FloatArray) -> FloatArray:
    """Maximise the penalised log-likelihood by damped Newton (natural-log units, virtual
    player at 0). The objective is strictly concave, so this finds the unique maximum."""
    x = x0.copy()
    f = _objective(points, prior, x)
    for _ in range(_MAX_NEWTON):
        expected, info = _information(weights, prior, x)
        s = _sigmoid(x)
        grad = (points - expected).sum(axis=1) + prior * (0.5 - s)
        step = np.linalg.solve(info, grad)
        size = float(np.max(np.abs(step))) if len(step) else 0.0
        if size < 1e-6:
            # Near the maximum the full step is safe, and comparing objectives that differ
            # by less than rounding would only stall the line search.
            x = x + step
            if size < _NEWTON_TOL:
                return x
            f = _objective(points, prior, x)
            continue
        t = 1.0
        while True:
            trial = x + t * step
            f_trial = _objective(points, prior, trial)
            if f_trial >= f or t < 1e-10:
                break
            t *= 0.5
        x, f = trial, f_trial
    raise ConvergenceError(f"Newton did not converge in {_MAX_NEWTON} iterations ({len(x)} bots)")


def _sandwich(data: _Data, weights: FloatArray, prior: float, x: FloatArray) -> FloatArray:
    """Cluster-robust covariance of ``x`` (natural units), clustered by match."""
    k = len(x)
    meat = np.zeros(k * k)
    n_matches = 0
    for g in data.groups:
        # Per-pair residual, then each seat's share of its match's score vector.
        resid = g.weight * (g.ps - _sigmoid(x[g.pa] - x[g.pb]))
        seat = resid @ g.incidence
        cells = (g.idx[:, :, None] * k + g.idx[:, None, :]).ravel()
        meat += np.bincount(cells, (seat[:, :, None] * seat[:, None, :]).ravel(), minlength=k * k)
        n_matches += len(g.rows)
    meat2 = meat.reshape(k, k)
    if n_matches > 1:
        meat2 *= n_matches / (n_matches - 1)  # the usual small-sample correction
    s = _sigmoid(x)
    meat2[np.diag_indices(k)] += prior * s * (1.0 - s)
    _, info = _information(weights, prior, x)
    bread = np.linalg.inv(info)
    cov = bread @ meat2 @ bread
    return 0.5 * (cov + cov.T)


def _centre(x: FloatArray) -> FloatArray:
    centred: FloatArray = x - x.mean(axis=-1, keepdims=True)
    return centred


def _fit_data(data: _Data, opts: _Options) -> RatingTable:
    k = len(data.names)
    if k == 0:
        return RatingTable()
    points, weights = _aggregate(data)
    x = _solve(points, weights, opts.prior_games, np.zeros(k))
    elo = opts.anchor + _centre(x) / ELO_SCALE

    if opts.method == "sandwich":
        cov = _sandwich(data, weights, opts.prior_games, x) / ELO_SCALE**2
        centring = np.eye(k) - 1.0 / k
        var = np.maximum(np.diag(centring @ cov @ centring), 0.0)
        z = NormalDist().inv_cdf(0.5 + opts.level / 2)
        low, high = elo - z * np.sqrt(var), elo + z * np.sqrt(var)
        replicates = None
    else:
        replicates = _bootstrap(data, opts, x)
        tail = (1.0 - opts.level) / 2
        low, high = np.quantile(replicates, [tail, 1.0 - tail], axis=0)
        cov = np.zeros((k, k))

    # Ratings equal but for rounding (identical records) rank by bot id, not by rounding noise.
    order = sorted(range(k), key=lambda i: (-round(float(elo[i]), 6), data.names[i]))
    scored = points.sum(axis=1)
    played = weights.sum(axis=1)
    ratings = []
    for i in order:
        one_sided = bool(scored[i] == 0.0 or scored[i] == played[i])
        provisional = (
            int(data.matches[i]) < opts.min_matches or float(high[i] - low[i]) > opts.max_width or one_sided
        )
        ratings.append(
            Rating(
                data.names[i], float(elo[i]), float(low[i]), float(high[i]), int(data.matches[i]), provisional
            )
        )

    los = []
    for i, j in itertools.pairwise(order):
        if replicates is not None:
            gap = replicates[:, i] - replicates[:, j]
            los.append(float(np.mean(gap > 0) + 0.5 * np.mean(gap == 0)))
        else:
            sd = math.sqrt(max(cov[i, i] + cov[j, j] - 2.0 * cov[i, j], 0.0))
            diff = float(elo[i] - elo[j])
            los.append(NormalDist().cdf(diff / sd) if sd > 0 else 0.5 if diff == 0 else 1.0)

    a, b = np.nonzero(weights)
    pairwise = {
        (data.names[i], data.names[j]): (float(points[i, j]), float(weights[i, j]))
        for i, j in zip(a.tolist(), b.tolist(), strict=True)
    }
    return RatingTable(ratings, los, pairwise)


def _bootstrap(data: _Data, opts: _Options, x: FloatArray) -> FloatArray:
    """Anchored Elo of each bot in each of ``opts.samples`` resamplings of whole matches."""
    n = len(data.match_ids)
    # Draw in match-id order, so which match gets which count does not depend on input order.
    keys = [(type(i).__name__, i) for i in data.match_ids]  # ints and strs sort apart
    by_id = np.array(sorted(range(n), key=keys.__getitem__), dtype=np.int64)
    rng = np.random.default_rng(opts.seed)
    out = np.empty((opts.samples, len(x)))
    counts = np.empty(n)
    for r in range(opts.samples):
        counts[by_id] = np.bincount(rng.integers(0, n, size=n), minlength=n)
        points, weights = _aggregate(data, counts)
        out[r] = _solve(points, weights, opts.prior_games, x)
    return opts.anchor + _centre(out) / ELO_SCALE


# --- Public API -------------------------------------------------------------------------------


def fit(
    results: Iterable[MatchResult],
    *,
    method: Method = "sandwich",
    anchor: float = 1500.0,
    prior_games: float = 2.0,
    level: float = 0.95,
    samples: int = 200,
    seed: int = 0,
    min_matches: int = 20,
    max_width: float = 200.0,
) -> RatingTable:
    """Fit the ratings of every bot in ``results``.

    ``method`` picks the interval: the cluster-robust ``"sandwich"`` or a ``"bootstrap"`` over
    matches with ``samples`` replicates drawn from ``seed``. ``anchor`` is the mean rating,
    ``prior_games`` the number of virtual draws each bot plays against a virtual ``anchor``
    player, ``level`` the interval's coverage. A bot is provisional with fewer than
    ``min_matches`` matches, an interval wider than ``max_width`` Elo, or a one-sided record.

    Raises :class:`MatchResultError`, :class:`DuplicateMatchError` or :class:`OptionError`.
    """
    opts = _options(method, anchor, prior_games, level, samples, seed, min_matches, max_width)
    acc = _Accumulator()
    acc.add(results)
    return _fit_data(acc.data(), opts)


def history(
    tournaments: Iterable[tuple[str, Iterable[MatchResult]]],
    *,
    method: Method = "sandwich",
    anchor: float = 1500.0,
    prior_games: float = 2.0,
    level: float = 0.95,
    samples: int = 200,
    seed: int = 0,
    min_matches: int = 20,
    max_width: float = 200.0,
) -> list[tuple[str, RatingTable]]:
    """The ratings after each tournament, in the order given: entry ``t`` is ``fit`` over the
    matches of tournaments ``0..t`` (options as for :func:`fit`). Match ids must be unique
    across tournaments."""
    opts = _options(method, anchor, prior_games, level, samples, seed, min_matches, max_width)
    acc = _Accumulator()
    out: list[tuple[str, RatingTable]] = []
    for name, results in tournaments:
        acc.add(results)
        out.append((name, _fit_data(acc.data(), opts)))
    return out
