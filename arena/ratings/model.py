"""The official Tonk Arena rating: a Bradley-Terry fit on the Elo scale, anchored on fixed
reference bots (the house bots) within the established pool, so that a newcomer, a one-sided
record or another bot's versions cannot move anyone else.

This module is the rating's face: what goes in (:class:`RatedMatch`, checked here once), what
comes out (:class:`Rating`, :class:`RatingTable`), the errors, and :class:`RatingModel`, which
keeps the matches and takes each fit through the modules that do the work, in this order::

    add ──▶ RatingData ──▶ find_pool, shares ──▶ estimate ────▶ meat, bread ────▶ report
            (data.py:      (pool.py: who sets    (solve.py:      (intervals.py:    (here: ranks,
             sums, blocks)  the scale, how much)  the ratings)    their spread)     provisional)

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
    pool is fitted by plain maximum likelihood on the pairs among its members. Its members
    in ``reference`` (the house bots: fixed players, as rating lists anchor on a fixed
    engine) have the weighted mean ``anchor`` (1500), so no other bot's games or versions are
    in the zero (issue #38: they dragged it 23-56 Elo; bench/rating_checks.py anchor). With
    no reference member in the pool, the rule before: its weighted mean is ``anchor``
    (1500): **1500 is the average of the established pool**, every
    member counting the same once it has played ``min_matches + 60`` matches and has both
    scored and conceded 2 points (comparisons won and lost, a pair weighted as in the fit);
    before that its share grows linearly from nothing at ``min_matches`` matches and at ½
    point, so that a newcomer's crossing of ``min_matches`` or a hopeless bot's one draw does
    not move the zero (arena/ratings/pool.py; bench/stat_checks.py anchor); while no member
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
    The pool's intervals are those of ``R_i`` minus the zero. The quantile is Student's t on
    the bot's independent deals less one (its matches over the store's matches per deal;
    ``intervals.t_quantile``): the normal quantile under-covered at 20 deals per bot (93%,
    92% with card luck; bench/rating_checks.py coverage). LOS is the probability that a bot
    is stronger than the next one down the table (normal approximation, covariances
    included); it is None next to a one-sided bound.

Provisional
    What a reader takes ``?`` for: a bot that has not played enough to have a rating yet.
    A bot is provisional, with the first reason that applies: ``"one-sided"`` (its record
    against the pool is all wins or all losses: a bound, not a rating) or ``"few-matches"``
    (fewer than ``min_matches``). How sure a rating is, is its interval's job: a width rule
    marked every bot of a 4-bot demo ``?`` after 100 matches (issue #38), where Tonk's luck
    keeps intervals 400 Elo wide. ``max_width`` (off by default) brings back
    ``"wide-interval"`` for a caller that wants it.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from arena.ratings import intervals
from arena.ratings.data import Block, BoolArray, FloatArray, IntArray, RatingData, pair_columns, sigmoid
from arena.ratings.pool import find_pool, shares
from arena.ratings.solve import ConvergenceError, Met, estimate

__all__ = [
    "ELO_SCALE",
    "Basis",
    "DuplicateMatchError",
    "OptionError",
    "Options",
    "RatedMatch",
    "RatedMatchError",
    "Rating",
    "RatingModel",
    "RatingTable",
    "RatingsError",
    "Reason",
    "fit",
    "history",
    "options",
    "provisional_reason",
]

#: Natural-log units per Elo point: P = 1 / (1 + exp(-ELO_SCALE * (R_i - R_j))).
ELO_SCALE = math.log(10.0) / 400.0

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
    score rate), for every ordered pair that met. ``pool`` lists the established pool;
    ``reference`` the members whose mean is the anchor (the fit's reference bots in the pool,
    or the whole pool when none is: see "The established pool, and the scale"); ``unrated``
    the bots with no result against the pool.
    """

    ratings: list[Rating] = field(default_factory=list)
    los: list[float | None] = field(default_factory=list)
    pairwise: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    pool: list[str] = field(default_factory=list)
    unrated: list[str] = field(default_factory=list)
    reference: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Options:
    """A fit's options, checked (:func:`options`)."""

    anchor: float
    level: float
    min_matches: int
    max_width: float | None


def options(anchor: float, level: float, min_matches: int, max_width: float | None) -> Options:
    """The options checked: OptionError for one out of range (the people's fit's too,
    arena/ratings/people.py)."""
    if not (isinstance(anchor, numbers.Real) and math.isfinite(anchor)):
        raise OptionError(f"anchor {anchor!r} is not a finite number")
    if not (isinstance(level, numbers.Real) and 0 < level < 1):
        raise OptionError(f"level {level!r} must be between 0 and 1")
    if type(min_matches) is not int or min_matches < 0:
        raise OptionError(f"min_matches {min_matches!r} must be a non-negative integer")
    if max_width is not None and not (isinstance(max_width, numbers.Real) and max_width > 0):
        raise OptionError(f"max_width {max_width!r} must be positive (or None: no width rule)")
    return Options(float(anchor), float(level), min_matches, None if max_width is None else float(max_width))


def provisional_reason(basis: Basis, matches: int, low: float | None, high: float | None,
                       opts: Options) -> Reason | None:
    """Why a rating is provisional (None: it is not): a one-sided bound, then too few
    matches, then (with ``max_width``) an interval wider than that. The people's too."""
    if basis == "one-sided":
        return "one-sided"
    if matches < opts.min_matches:
        return "few-matches"
    if opts.max_width is not None and low is not None and high is not None and high - low > opts.max_width:
        return "wide-interval"
    return None


@dataclass
class _Fit:
    """What a full fit leaves for incremental updates between full fits."""

    pool: BoolArray  # over bot codes
    x: FloatArray  # natural units, 0 for bots without a finite estimate
    finite: BoolArray  # pool members and outsiders with a two-sided record
    blocks: int  # blocks already in ``core``
    q: FloatArray  # the pool's (L + 1/k)^-1 (intervals.pool_q), kept up to date for new pairs
    core: FloatArray  # the sandwich's core P M P (intervals.core_of), kept up to date alike
    share: FloatArray  # the pool members' shares of the scale's zero
    met: Met  # the pool's pairs that met, with their sums


class RatingModel:
    """Matches added over time and the ratings fitted from them.

    :meth:`fit` is the full fit. :meth:`update` is the cheap one between full fits, its work
    in proportion to the bots and the new matches, never to the matches already in: the new
    matches' pairwise sums are in, the pool's membership and the old matches' share of the
    interval's meat are kept, the pool's inverse information gains the new pairs exactly
    (Woodbury, ``intervals.add_pairs``), the sandwich's core gains both by a low-rank term
    (``intervals.update_core``: equal to ``B M B^T`` afresh, tests/arena/ratings/
    test_interval_updates.py), and the ratings take Newton steps with that inverse, over the
    pairs that met, until they converge: to the full fit's maximum, within 1e-6 Elo. The intervals keep the
    old pairs' curvature and the old matches' residuals at the last full fit's ratings, so
    they drift as ratings move (0.1% of a width after 1% more matches); a full fit, run in the
    background by the live board (arena/ratings/leaderboard.py), resets them.
    """

    def __init__(
        self,
        *,
        anchor: float = 1500.0,
        level: float = 0.95,
        min_matches: int = 20,
        max_width: float | None = None,
        reference: Iterable[str] = (),
    ) -> None:
        self.opts = options(anchor, level, min_matches, max_width)
        self.reference: frozenset[str] = _reference(reference)
        self.data = RatingData()
        self._ids: set[str | int] = set()
        self._bulk_ids: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)  # sorted: add_columns'
        self._last: _Fit | None = None
        # The last report's Elo and covariance, kept so that LOS over any order of bots
        # (:meth:`los`) costs no more products.
        self._elo: FloatArray = np.zeros(0)
        self._covariance: intervals.Covariance | None = None

    @property
    def total(self) -> int:
        """Matches added."""
        return self.data.total

    def set_reference(self, bots: Iterable[str]) -> None:
        """The bots whose mean is the anchor from the next fit or update on (the house bots'
        versions: arena/ratings/leaderboard.py). An update reads them as a full fit does."""
        self.reference = _reference(bots)

    def _reference_mask(self, k: int) -> BoolArray:
        names = self.data.names
        return np.fromiter((names[i] in self.reference for i in range(k)), dtype=bool, count=k)

    def __contains__(self, match_id: object) -> bool:
        """Whether a match with this id was added (by :meth:`add` or :meth:`add_columns`)."""
        if match_id in self._ids:
            return True
        if not isinstance(match_id, int) or isinstance(match_id, bool) or not len(self._bulk_ids):
            return False
        if not -(2**63) <= match_id < 2**63:
            return False
        at = int(np.searchsorted(self._bulk_ids, match_id))
        return at < len(self._bulk_ids) and int(self._bulk_ids[at]) == match_id

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

    def add_columns(
        self,
        match_ids: npt.ArrayLike,
        sizes: npt.ArrayLike,
        players: npt.ArrayLike,
        scores: npt.ArrayLike,
        deals: tuple[npt.ArrayLike, npt.ArrayLike],
    ) -> None:
        """Add matches given as columns, with no Python object per match (a big store's
        first load): ``match_ids`` and ``sizes`` (m,) integers, the seats of every match in
        order in ``players`` (the id of the bot, an integer whose decimal string is the
        bot's name) and ``scores`` (``sizes.sum()`` each), ``deals`` two (m,) int64
        columns whose pairs are the deal keys (as ``RatedMatch.deal == (a, b)``). Only into
        a model with no deal yet; checked as :meth:`add` checks, adding nothing on an error."""
        ids = np.asarray(match_ids, dtype=np.int64)
        size = np.asarray(sizes, dtype=np.int64)
        who = np.asarray(players)
        score_arr = np.asarray(scores, dtype=np.float64)
        deal_a, deal_b = (np.asarray(d, dtype=np.int64) for d in deals)
        m = len(ids)
        if size.shape != (m,) or deal_a.shape != (m,) or deal_b.shape != (m,):
            raise RatedMatchError(f"sizes and deals must be columns of {m}, one per match")
        if m and (size.min() < 2 or size.max() > 64):
            raise RatedMatchError("a match has 2 to 64 seats")
        if who.shape != (int(size.sum()),) or score_arr.shape != who.shape:
            raise RatedMatchError(f"players {who.shape} and scores {score_arr.shape} must hold every seat")
        if not np.issubdtype(who.dtype, np.integer) or not np.isfinite(score_arr).all():
            raise RatedMatchError("players must be integer ids and scores finite numbers")
        sorted_ids = np.sort(ids)
        clash = [i for i in self._ids if isinstance(i, int)]
        if (
            (sorted_ids[1:] == sorted_ids[:-1]).any()
            or (len(self._bulk_ids) and np.isin(ids, self._bulk_ids).any())
            or (clash and np.isin(ids, np.asarray(clash, dtype=np.int64)).any())
        ):
            raise DuplicateMatchError("a match id is given more than once")
        first = np.cumsum(size) - size  # each match's first seat
        groups = []
        for n in np.flatnonzero(np.bincount(size)).tolist() if m else []:
            rows = np.flatnonzero(size == n)
            cells = first[rows][:, None] + np.arange(n)[None, :]
            seated = who[cells]
            ordered = np.sort(seated, axis=1)
            if (ordered[:, 1:] == ordered[:, :-1]).any():
                raise RatedMatchError("a match seats the same bot twice")
            groups.append((n, rows, seated, score_arr[cells]))
        codes = self.data.bulk_deals(deal_a, deal_b) if m else np.zeros(0, dtype=np.int64)
        # The ids present, by a table over their range where it is compact (np.unique sorts:
        # 5 s at 20M seats); store ids are.
        low, span = (int(who.min()), int(who.max()) - int(who.min()) + 1) if len(who) else (0, 0)
        if span <= 4 * len(who) + 1_000_000:
            present = np.zeros(span, dtype=bool)
            present[who - low] = True
            uniq = np.flatnonzero(present) + low
        else:
            uniq = np.unique(who)
        names = self.data.code_of([str(int(u)) for u in uniq])
        for n, rows, seated, seat_scores in groups:
            idx = names[np.searchsorted(uniq, seated)]
            self.data.add(n, idx, seat_scores, codes[rows])
        # Sorted and disjoint (checked above): a merge, where union1d hashes (14 s at 10M).
        merged = np.concatenate([self._bulk_ids, sorted_ids])
        self._bulk_ids = np.sort(merged) if len(self._bulk_ids) else sorted_ids

    def _check_ids(self, ids: list[str | int]) -> None:
        ints = [i for i in ids if isinstance(i, int) and not isinstance(i, bool) and -(2**63) <= i < 2**63]
        if ints and len(self._bulk_ids):  # by binary search: isin sorts all 10M (0.5 s a tick)
            wanted = np.asarray(ints, dtype=np.int64)
            at = np.minimum(np.searchsorted(self._bulk_ids, wanted), len(self._bulk_ids) - 1)
            if (self._bulk_ids[at] == wanted).any():
                culprit = next(i for i in ints if i in self)
                raise DuplicateMatchError(f"match id {culprit!r} is given more than once")
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
        pool = find_pool(data, self.opts.min_matches)
        share = shares(data, pool, self.opts.min_matches, self._reference_mask(k))
        last = self._last
        # Warm start from the last fit when the pool is the same (the maximum is unique).
        same = last is not None and len(last.pool) == k and np.array_equal(last.pool, pool)
        x0 = last.x[pool] if same and last is not None else np.zeros(int(pool.sum()))
        met = Met.of(data.points[:k, :k], data.weights[:k, :k], np.flatnonzero(pool))
        x, finite, q = estimate(data.points[:k, :k], data.weights[:k, :k], pool, share, x0, met)
        position = np.where(finite, np.cumsum(finite) - 1, -1)
        m = intervals.meat(data.blocks, x, position, pool, int(finite.sum()))
        core = intervals.core_of(q - 1.0 / len(q) if len(q) else q, m, pool[finite])
        self._last = _Fit(pool, x, finite, len(data.blocks), q, core, share, met)
        return self._report(pairwise)

    def snapshot(self) -> RatingModel:
        """A model of the matches added so far, for a full fit on another thread while this
        one takes more (:meth:`adopt` takes its fit back). The blocks of matches are shared
        (they never change once added); the sums are copied."""
        copy = RatingModel.__new__(RatingModel)
        copy.opts, copy.reference = self.opts, self.reference
        d = self.data
        # Every mutable part copied by name (bulk and the blocks' arrays never change once in).
        copy.data = dataclasses.replace(
            d, names=list(d.names), codes=dict(d.codes), blocks=list(d.blocks), points=d.points.copy(),
            weights=d.weights.copy(), matches=d.matches.copy(), deal_codes=dict(d.deal_codes),
            scored=d.scored.copy(), played=d.played.copy(),
        )
        copy._ids, copy._bulk_ids = set(), self._bulk_ids
        copy._last = self._last  # a warm start: fit() only reads it
        copy._elo, copy._covariance = np.zeros(0), None
        return copy

    def adopt(self, fitted: RatingModel) -> None:
        """Take the full fit of a :meth:`snapshot` of this model as its last fit: the next
        :meth:`update` brings in the matches added since the snapshot was taken."""
        last = fitted._last
        if last is None or last.blocks > len(self.data.blocks) or fitted.data.k > self.data.k:
            raise ValueError("adopt takes the fit of a snapshot of this model")
        self._last = last

    def update(self, *, pairwise: bool = True) -> RatingTable:
        """The cheap refit after adding matches: a full fit if there was none, if bots that
        need a place in the interval's matrices arrived, or if the cheap steps do not
        converge."""
        table = self.cheap_update(pairwise=pairwise)
        return self.fit(pairwise=pairwise) if table is None else table

    def cheap_update(self, *, pairwise: bool = True) -> RatingTable | None:
        """:meth:`update` where it need not fit in full; None (nothing changed) where it
        must, for a caller that fits in full elsewhere (the live board, in the background)."""
        last = self._last
        if last is None:
            return None
        data = self.data
        k = data.k
        pool = np.zeros(k, dtype=bool)
        pool[: len(last.pool)] = last.pool[:k]
        share = shares(data, pool, self.opts.min_matches, self._reference_mask(k))
        new = data.blocks[last.blocks :]
        # The pool's inverse information gains the new pairs' (Woodbury: bots x pairs work),
        # so the steps below converge fast and the intervals see the new information.
        pairs = _pool_pairs(new, pool, last.x)
        q = intervals.add_pairs(last.q, *pairs)
        try:
            points, weights = data.points[:k, :k], data.weights[:k, :k]
            met = last.met.with_pairs(pairs[0], pairs[1], points, weights, np.flatnonzero(pool))
            start = last.x[last.pool]
            touched = np.unique(np.concatenate([pairs[0], pairs[1]]))
            x, finite, _ = estimate(points, weights, pool, share, start, met, nearby=(q, touched))
        except ConvergenceError:
            return None
        old_finite = np.zeros(k, dtype=bool)
        old_finite[: len(last.finite)] = last.finite[:k]
        if not np.array_equal(finite, old_finite):
            return None
        position = np.where(finite, np.cumsum(finite) - 1, -1)
        delta = intervals.meat_entries(new, x, position, pool, int(finite.sum()))
        core = intervals.update_core(last.core, last.q, q, pool[finite], pairs, delta)
        self._last = _Fit(pool, x, finite, len(data.blocks), q, core, share, met)
        return self._report(pairwise)

    def _report(self, pairwise: bool) -> RatingTable:
        assert self._last is not None
        data, opts, last = self.data, self.opts, self._last
        k = data.k
        points, weights = data.points[:k, :k], data.weights[:k, :k]
        pool, x, finite = last.pool, last.x, last.finite
        # Clustered by deal: the named deals plus every match given none.
        rows, own = intervals.outsider_rows(weights, pool, finite, x)
        covariance = intervals.Covariance.of(
            last.core, pool[finite], last.share, rows, own, data.deals, ELO_SCALE
        )
        self._covariance = covariance
        members = np.flatnonzero(pool)
        rated = np.flatnonzero(finite)
        sd = np.zeros(k)
        sd[rated] = covariance.sd()
        # Student's t on the bot's own deals less one, not the normal quantile (see "Intervals").
        clusters = intervals.effective_clusters(data.matches[:k], data.deals, data.total)
        half = intervals.t_quantile(0.5 + opts.level / 2, clusters - 1.0) * sd
        elo = opts.anchor + x / ELO_SCALE
        low: list[float | None] = (elo - half).tolist()
        high: list[float | None] = (elo + half).tolist()
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
            bound = opts.anchor + intervals.one_sided_bound(w, x[members], won, 1.0 - opts.level) / ELO_SCALE
            elo[i] = bound
            low[i], high[i] = (bound, None) if won else (None, bound)
            basis[i] = "one-sided"
            shown.add(i)
        # One-sided bounds come after every estimate: a bound is not a rating to rank by.
        order = sorted(shown, key=lambda i: (not finite[i], -round(float(elo[i]), 6), data.names[i]))
        ratings = []
        for i in order:
            lo, hi = low[i], high[i]
            reason = provisional_reason(basis[i], int(data.matches[i]), lo, hi, opts)
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
        anchored = members[self._reference_mask(k)[members]]
        reference = sorted(data.names[i] for i in (anchored if len(anchored) else members).tolist())
        return RatingTable(ratings, los, pairs, pool_names, sorted(unrated), reference)

    def los(self, bots: Sequence[str]) -> list[float | None]:
        """The likelihood of superiority of each of ``bots`` over the next one in the order
        given (one fewer than ``bots``), by the last fit or update: as ``RatingTable.los``
        but down any order, such as a table of some of the bots only. None next to a bot
        without a finite estimate (a one-sided bound, or unknown)."""
        return self._los([self.data.codes.get(b, -1) for b in bots])

    def _los(self, order: list[int]) -> list[float | None]:
        if self._last is None or self._covariance is None:
            return [None] * max(0, len(order) - 1)
        return intervals.los(order, self._last.finite, self._elo, self._covariance)


def _reference(bots: Iterable[str]) -> frozenset[str]:
    if isinstance(bots, str):
        raise OptionError(f"reference {bots!r} is one string; give a collection of bot ids")
    out = frozenset(bots)
    for bot in out:
        if not isinstance(bot, str):
            raise OptionError(f"reference bot {bot!r} is not a bot id (a string)")
    return out


def _pool_pairs(blocks: list[Block], pool: BoolArray, x: FloatArray) -> tuple[IntArray, IntArray, FloatArray]:
    """The pairs among pool members in ``blocks``, once each (rows of the pool's matrices),
    with the information each adds at ``x``: weight x p(1 - p), summed over its matches."""
    row = np.cumsum(pool) - 1
    keys: list[IntArray] = []
    gains: list[FloatArray] = []
    km = int(pool.sum())
    for block in blocks:
        u, v = pair_columns(block.n)
        a, b = block.idx[:, u].ravel().astype(np.int64), block.idx[:, v].ravel().astype(np.int64)
        both = (a < len(pool)) & (b < len(pool))
        a, b = a[both], b[both]
        keep = pool[a] & pool[b]
        a, b = a[keep], b[keep]
        p = sigmoid(x[a] - x[b])
        lo, hi = np.minimum(row[a], row[b]), np.maximum(row[a], row[b])
        keys.append(lo * km + hi)
        gains.append(p * (1.0 - p) / (block.n - 1))
    if not keys:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    unique, where = np.unique(np.concatenate(keys), return_inverse=True)
    gain: FloatArray = np.bincount(where, np.concatenate(gains)).astype(np.float64)
    return unique // km, unique % km, gain


# --- Public API -------------------------------------------------------------------------------


def fit(
    results: Iterable[RatedMatch],
    *,
    anchor: float = 1500.0,
    level: float = 0.95,
    min_matches: int = 20,
    max_width: float | None = None,
    reference: Iterable[str] = (),
) -> RatingTable:
    """Fit the ratings of every bot in ``results``.

    ``anchor`` is the established pool's mean rating, ``level`` the coverage of intervals and
    one-sided bounds, ``min_matches`` both the pool's entry bar and the provisional bar,
    ``max_width`` (None: no such rule) the widest interval that is not provisional,
    ``reference`` the bots whose mean is ``anchor`` (those in the pool; none there: the pool).

    Raises :class:`RatedMatchError`, :class:`DuplicateMatchError` or :class:`OptionError`.
    """
    model = RatingModel(
        anchor=anchor, level=level, min_matches=min_matches, max_width=max_width, reference=reference
    )
    model.add(results)
    return model.fit()


def history(
    tournaments: Iterable[tuple[str, Iterable[RatedMatch]]],
    *,
    anchor: float = 1500.0,
    level: float = 0.95,
    min_matches: int = 20,
    max_width: float | None = None,
    reference: Iterable[str] = (),
) -> list[tuple[str, RatingTable]]:
    """The ratings after each tournament, in the order given: entry ``t`` is ``fit`` over the
    matches of tournaments ``0..t`` (options as for :func:`fit`). Match ids must be unique
    across tournaments."""
    model = RatingModel(
        anchor=anchor, level=level, min_matches=min_matches, max_width=max_width, reference=reference
    )
    out: list[tuple[str, RatingTable]] = []
    for name, results in tournaments:
        model.add(results)
        out.append((name, model.fit()))
    return out
