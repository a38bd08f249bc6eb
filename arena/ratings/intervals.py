"""The intervals: the uncertainty of the point estimate (arena/ratings/model.py, "Intervals").

A cluster-robust sandwich ``B M B^T`` in natural units, over the stacked estimating equations
of the pool and of each outsider, so that an outsider's interval includes the pool's own
uncertainty:

- the bread ``B`` (:func:`bread`): the inverse information of the finite estimates, at the
  fit's ``x``, read against the scale's zero (the pool's weighted centre);
- the meat ``M`` (:func:`meat`): over the independent units, the deals (a match given no deal
  is one of its own), the outer product of each deal's score; it needs the matches
  themselves, kept in blocks (arena/ratings/data.py), and is summed in chunks;
- :class:`Covariance`: their product, kept as the core ``P M P`` (``P``: the pool's
  pseudo-inverse) and the cheap map ``A`` with ``B = A P`` (the centre, the outsiders' rows),
  so that a standard error or the covariance of two bots (LOS, :func:`los`) costs a few
  lookups. An update brings the core up to date for its new pairs and matches by a low-rank
  term (:func:`update_core`: bots x bots x their rank), where ``B M B^T`` afresh took a
  bots^3 product each tick (97 s of a 10,000-bot tick).

A record with no finite estimate gets a one-sided bound instead (:func:`one_sided_bound`).
The point estimate itself is arena/ratings/solve.py's; nothing here changes it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from arena.ratings.data import Block, BoolArray, FloatArray, IntArray, pair_columns, sigmoid
from arena.ratings.solve import laplacian

#: Matches per chunk when recomputing the meat: bounds the temporary arrays to ~100 MB.
CHUNK = 400_000


def pool_q(weights: FloatArray, pool: BoolArray, x: FloatArray) -> FloatArray:
    """``Q = (L + 1/k)^-1``: the inverse of the pool's information ``L`` (a Laplacian, over
    the pool's members in code order) with the common shift fixed by ``+ 1/k`` in every
    cell. ``Q - 1/k`` is ``L``'s pseudo-inverse. An update keeps ``Q`` up to date for new
    pairs by :func:`add_pairs` instead of inverting again."""
    members = np.flatnonzero(pool)
    km = len(members)
    if not km:
        return np.zeros((0, 0))
    p = sigmoid(x[members][:, None] - x[members][None, :])
    lap = laplacian(weights[np.ix_(members, members)] * p * (1.0 - p))
    q: FloatArray = np.linalg.inv(lap + 1.0 / km).astype(np.float64)
    return q


def add_pairs(q: FloatArray, a: IntArray, b: IntArray, curv: FloatArray) -> FloatArray:
    """``Q`` after the information gains ``curv[j] (e_a - e_b)(e_a - e_b)^T`` for each pair
    ``(a[j], b[j])`` (rows of ``Q``), by the Woodbury identity: ``bots x pairs`` products
    and a ``pairs x pairs`` solve, where inverting again is ``bots^3``."""
    if len(a) == 0:
        return q
    root = np.sqrt(curv)
    qu = (q[:, a] - q[:, b]) * root[None, :]  # Q U, U's columns (e_a - e_b) sqrt(c)
    s = np.eye(len(a)) + (qu[a] - qu[b]) * root[:, None]  # I + U^T Q U
    out: FloatArray = q - qu @ np.linalg.solve(s, qu.T)
    return out


def bread(
    weights: FloatArray,
    pool: BoolArray,
    finite: BoolArray,
    x: FloatArray,
    share: FloatArray,
    q: FloatArray | None = None,
) -> FloatArray:
    """The sandwich's bread (natural units) for the finite estimates, in code order: the
    stacked equations' inverse information ``L^-1``. ``L`` is block lower triangular (the
    pool's equations do not involve outsiders), so ``L^-1`` is explicit; the covariance is
    ``L^-1 M L^-T`` around the meat ``M``. ``q``: the pool's :func:`pool_q` if known."""
    rated = np.flatnonzero(finite)
    in_pool = pool[rated]
    km = int(in_pool.sum())
    if q is None:
        q = pool_q(weights, pool, x)
    pool_inv = q - 1.0 / km if km else np.zeros((0, 0))  # the pseudo-inverse
    rows, own = outsider_rows(weights, pool, finite, x)
    inv = np.zeros((len(rated), len(rated)))
    mi, oi = np.flatnonzero(in_pool), np.flatnonzero(~in_pool)
    inv[np.ix_(mi, mi)] = pool_inv
    inv[np.ix_(oi, mi)] = rows @ pool_inv
    inv[oi, oi] = own
    # Every estimate is read against the pool's weighted centre (``share``, which depends on
    # the records only, not on the estimates), not the plain mean ``pool_inv`` assumes:
    # subtract the centre's own row from every row.
    inv -= (share @ inv[mi])[None, :]
    return inv


def outsider_rows(
    weights: FloatArray, pool: BoolArray, finite: BoolArray, x: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The finite outsiders' rows of the stacked equations' inverse, apart from the pool's
    inverse they multiply: each outsider's curvature against every pool member over its own
    (``K``, outsiders x members) and one over its own (``D``): its row of ``L^-1`` is
    ``[K P, D]`` for the pool's pseudo-inverse ``P``."""
    rated = np.flatnonzero(finite)
    members, outsiders = rated[pool[rated]], rated[~pool[rated]]
    p_om = sigmoid(x[outsiders][:, None] - x[members][None, :])
    curv = weights[np.ix_(outsiders, members)] * p_om * (1.0 - p_om)
    own = curv.sum(axis=1)
    rows: FloatArray = curv / own[:, None]
    return rows, 1.0 / own


def meat(
    blocks: list[Block], x: FloatArray, position: IntArray, partner: BoolArray, size: int
) -> FloatArray:
    """``sum over deals of U_d U_d^T`` for the bots with ``position >= 0`` (their row in the
    result, ``size`` x ``size``). ``U_d`` is the deal's score, the sum of its matches' ``U_m``:
    a seat's pair residuals ``w (result - P(win))``, counting only pairs whose other bot is a
    ``partner`` (the rating pool: the model's estimating equations use those pairs only).
    ``x`` in natural units."""
    out = np.zeros((size + 1) * (size + 1))
    off = np.zeros((size + 1) * (size + 1))  # the i < j terms, added once more transposed
    row = np.where(position >= 0, position, size)  # everyone else lands in a dropped row
    k = len(x)
    pairs = sum(len(b.idx) * b.n * (b.n - 1) // 2 for b in blocks)
    # P(a beats b) looked up, not recomputed per pair of every match (10x fewer exp calls in
    # a full fit), unless there are fewer pairs than bots x bots (an update's few matches).
    table = sigmoid(x[:, None] - x[None, :]).ravel() if pairs > k * k else None
    grouped: list[tuple[IntArray, IntArray, FloatArray]] = []  # (deal, row, score) of named deals
    for block in blocks:
        n = block.n
        for start in range(0, len(block.idx), CHUNK):
            idx = block.idx[start : start + CHUNK].astype(np.int64)
            seat = _seat_scores(n, idx, block.results[start : start + CHUNK], x, position, partner, table)
            rows = row[idx]
            if block.deal is not None:  # matches of named deals are summed per deal below
                deal = block.deal[start : start + CHUNK]
                named = deal >= 0
                keep = named[:, None] & (rows < size)
                grouped.append((np.broadcast_to(deal[:, None], rows.shape)[keep], rows[keep], seat[keep]))
                rows, seat = rows[~named], seat[~named]
            for i in range(n):
                for j in range(i, n):
                    cells = rows[:, i] * (size + 1) + rows[:, j]
                    prod = seat[:, i] * seat[:, j]
                    into = out if i == j else off
                    if len(cells) * 8 < len(into):  # a few matches: touch only their cells
                        np.add.at(into, cells, prod)
                    else:
                        into += np.bincount(cells, prod, minlength=(size + 1) ** 2)
    total = (out + off).reshape(size + 1, size + 1)
    total += off.reshape(size + 1, size + 1).T
    result: FloatArray = total[:size, :size]
    if grouped:
        result = result + _deal_meat(grouped, size)
    return result


def _deal_meat(grouped: list[tuple[IntArray, IntArray, FloatArray]], size: int) -> FloatArray:
    """``sum over deals of U_d U_d^T`` from (deal, row, score) entries: each deal's scores are
    summed per bot, then every pair of bots within a deal adds its product."""
    deal = np.concatenate([g[0] for g in grouped])
    rows = np.concatenate([g[1] for g in grouped])
    out = np.zeros(size * size)
    for cells, prod in _deal_products(deal, rows, np.concatenate([g[2] for g in grouped]), size):
        if len(cells) * 8 < len(out):  # a few deals (an update's): touch only their cells
            np.add.at(out, cells, prod)
        else:
            out += np.bincount(cells, prod, minlength=size * size)
    return out.reshape(size, size)


def _deal_products(
    deal: IntArray, rows: IntArray, seat_score: FloatArray, size: int
) -> Iterator[tuple[IntArray, FloatArray]]:
    """The cells (``row * size + col``) and products of ``sum over deals of U_d U_d^T`` from
    (deal >= 0, row, score) entries, in chunks of ~4M products to bound the temporaries."""
    keys, where = np.unique(deal * size + rows, return_inverse=True)
    score = np.bincount(where, seat_score)
    deal_of, row_of = keys // size, keys % size
    # Entries are sorted by deal: each deal is a run; pair every entry with its run.
    starts = np.flatnonzero(np.r_[True, deal_of[1:] != deal_of[:-1]])
    sizes = np.diff(np.r_[starts, len(keys)])
    first = 0
    while first < len(starts):
        cost = np.cumsum(sizes[first:] ** 2)
        last = first + max(1, int(np.searchsorted(cost, 4_000_000)))
        s, g = starts[first:last], sizes[first:last]
        entry = np.arange(s[0], s[-1] + g[-1])
        run_start = np.repeat(s, g)
        run_size = np.repeat(g, g)
        i = np.repeat(entry, run_size)
        offset = np.arange(len(i)) - np.repeat(np.cumsum(run_size) - run_size, run_size)
        j = np.repeat(run_start, run_size) + offset
        yield row_of[i] * size + row_of[j], score[i] * score[j]
        first = last


def meat_entries(
    blocks: list[Block], x: FloatArray, position: IntArray, partner: BoolArray, size: int
) -> tuple[IntArray, IntArray, FloatArray]:
    """:func:`meat` of a few matches (an update's) as its nonzero cells ``(row, col, value)``,
    both triangles, so that adding them costs the cells and not ``size`` x ``size``."""
    deal_parts: list[IntArray] = []
    row_parts: list[IntArray] = []
    score_parts: list[FloatArray] = []
    own = -1  # matches given no deal: each a deal of its own, numbered down from -1
    for block in blocks:
        n = block.n
        seat = _seat_scores(block.n, block.idx.astype(np.int64), block.results, x, position, partner)
        rows = np.where(position >= 0, position, size)[block.idx.astype(np.int64)]
        deal = block.deal if block.deal is not None else np.full(len(rows), -1, dtype=np.int64)
        unnamed = deal < 0
        deal = deal.copy()
        deal[unnamed] = own - np.arange(int(unnamed.sum()))
        own -= int(unnamed.sum())
        keep = rows < size
        deal_parts.append(np.broadcast_to(deal[:, None], (len(rows), n))[keep])
        row_parts.append(rows[keep])
        score_parts.append(seat[keep])
    if not deal_parts or not sum(len(r) for r in row_parts):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    deal = np.concatenate(deal_parts)
    deal = deal - int(deal.min())  # non-negative codes for the grouping
    products = _deal_products(deal, np.concatenate(row_parts), np.concatenate(score_parts), size)
    cells, prod = zip(*products, strict=True)
    keys, where = np.unique(np.concatenate(cells), return_inverse=True)
    values: FloatArray = np.bincount(where, np.concatenate(prod)).astype(np.float64)
    return keys // size, keys % size, values


def _seat_scores(
    n: int,
    idx: IntArray,
    results: npt.NDArray[np.int8],
    x: FloatArray,
    position: IntArray,
    partner: BoolArray,
    table: FloatArray | None = None,
) -> FloatArray:
    """Each seat's score ``U_m`` (see :func:`meat`): P(a beats b) read from ``table`` (the
    bots x bots sigmoids, raveled) if given, else computed per pair (a few matches)."""
    u, v = pair_columns(n)
    w = 1.0 / (n - 1)
    use = position >= 0
    k = len(x)
    seat = np.zeros(idx.shape)
    for col in range(len(u)):
        a, b = idx[:, u[col]], idx[:, v[col]]
        p_ab = table[a * k + b] if table is not None else sigmoid(x[a] - x[b])
        r = w * (0.5 * results[:, col] - p_ab)
        seat[:, u[col]] += r * (partner[b] & use[a])
        seat[:, v[col]] -= r * (partner[a] & use[b])
    return seat


def core_of(pool_inv: FloatArray, meat: FloatArray, member: BoolArray) -> FloatArray:
    """The sandwich's core ``P M P`` (natural units; rows and columns: the finite estimates in
    code order, ``member`` marking the pool's): ``P`` is the pool's pseudo-inverse on the
    members' rows and the identity on the outsiders'. The covariance is ``A (P M P) A^T``
    with ``A`` cheap (:class:`Covariance`), so an update can bring the core up to date by
    low-rank terms (:func:`update_core`) where ``B M B^T`` took a bots^3 product."""
    if member.all():  # no outsider: no rows or columns to pick out
        whole: FloatArray = _times_sparse(pool_inv, meat) @ pool_inv
        return whole
    mi, oi = np.flatnonzero(member), np.flatnonzero(~member)
    left = np.empty_like(meat)
    left[mi] = _times_sparse(pool_inv, meat[mi])
    left[oi] = meat[oi]
    core = np.empty_like(meat)
    core[:, mi] = left[:, mi] @ pool_inv
    core[:, oi] = left[:, oi]
    return core


def _times_sparse(dense: FloatArray, sparse: FloatArray, block: int = 512) -> FloatArray:
    """``dense @ sparse`` for a ``sparse`` of mostly zeros (the meat: bots meet their
    neighbours, 1% of the cells at 10,000 bots): each block of columns multiplies only the
    rows with a nonzero there, bots x (those rows) x block where the product took bots^3."""
    starts = range(0, sparse.shape[1], block)
    rows = [np.flatnonzero(sparse[:, lo : lo + block].any(axis=1)) for lo in starts]
    if 2 * sum(len(r) for r in rows) > len(sparse) * len(rows):
        # Most blocks touch most rows (every bot met bots of every block: a random pairing):
        # one product, which beats the blocks' gathers and strided writes (30.8 s against
        # 36.5 s at 10,000 bots, 13% of the cells nonzero).
        whole: FloatArray = dense @ sparse
        return whole
    out = np.empty((dense.shape[0], sparse.shape[1]))
    for lo, used in zip(starts, rows, strict=True):
        cols = sparse[:, lo : lo + block]
        if 2 * len(used) > len(sparse):
            out[:, lo : lo + block] = dense @ cols
        else:
            out[:, lo : lo + block] = dense[:, used] @ cols[used]
    return out


def update_core(
    core: FloatArray,
    q: FloatArray,
    q_new: FloatArray,
    member: BoolArray,
    pairs: tuple[IntArray, IntArray, FloatArray],
    delta: tuple[IntArray, IntArray, FloatArray],
) -> FloatArray:
    """The core (:func:`core_of`) after the pool gains the information of ``pairs`` (rows of
    ``q``, as :func:`add_pairs`: ``q`` before, ``q_new`` after) and the meat gains ``delta``
    (:func:`meat_entries`), exactly, by one update of rank ``2 pairs + cells' rows``.

    With ``P' = P - X W^T`` (Woodbury: ``W = P U``, ``X = W S^-1``) and ``W = P U`` read
    through the old core (``P M W = core U``), ``P' M P' = core - X G^T - G X^T + X H X^T``
    for ``G = core U`` and ``H = U^T core U``; the new meat adds ``F delta F^T`` with ``F`` the
    new ``P'``'s columns at its cells. Bots x bots x (that rank) work, never bots^3."""
    size = len(core)
    mi = np.flatnonzero(member)
    km = len(mi)
    a, b, curv = pairs
    cols: list[FloatArray] = []
    h = d = np.zeros((0, 0))  # the middle's blocks: -H's at the top left, delta's at the bottom right
    if len(a):
        root = np.sqrt(curv)
        qu = (q[:, a] - q[:, b]) * root[None, :]  # P U (U's columns are orthogonal to 1)
        s = np.eye(len(a)) + (qu[a] - qu[b]) * root[:, None]
        x = np.zeros((size, len(a)))
        x[mi] = np.linalg.solve(s, qu.T).T
        g = (core[:, mi[a]] - core[:, mi[b]]) * root[None, :]
        h = (g[mi[a]] - g[mi[b]]) * root[:, None]
        cols += [x, g]
    rows, cells_col, values = delta
    touched, where = np.unique(np.concatenate([rows, cells_col]), return_inverse=True)
    if len(touched):
        d = np.zeros((len(touched), len(touched)))
        np.add.at(d, (where[: len(rows)], where[len(rows) :]), values)
        f = np.zeros((size, len(touched)))
        pool_row = np.cumsum(member) - 1
        inside = member[touched]
        f[np.ix_(mi, np.flatnonzero(inside))] = q_new[:, pool_row[touched[inside]]] - 1.0 / km
        f[touched[~inside], np.flatnonzero(~inside)] = 1.0
        cols.append(f)
    if not cols:
        return core
    left = np.hstack(cols)
    mid = np.zeros((left.shape[1], left.shape[1]))
    p = len(a)
    if p:
        mid[:p, :p] = h
        mid[:p, p : 2 * p] = mid[p : 2 * p, :p] = -np.eye(p)
    mid[2 * p :, 2 * p :] = d  # empty without touched cells
    out: FloatArray = core + left @ (mid @ left.T)
    return out


@dataclass(frozen=True)
class Covariance:
    """The finite estimates' covariance ``B M B^T`` (rows and columns: the finite bots in
    code order), kept as the core ``P M P`` (:func:`core_of`) and the cheap map around it:
    ``B = A P`` with ``A``'s rows ``e_i - s`` for a pool member (``s``: the members' shares
    of the scale's zero) and ``[K_o, D_o e_o] - s`` for an outsider (:func:`outsider_rows`).
    An entry costs a few lookups, never a bots x bots product."""

    core: FloatArray
    scale: float
    ah: FloatArray  # A_s (core s): each row's product with the centre
    sigma: float  # s core s
    outsider: IntArray  # position -> row of ``y`` (-1: a member)
    y: FloatArray  # the outsiders' rows of A_s core
    z: FloatArray  # their products with the outsiders' rows of A_s

    @classmethod
    def of(
        cls,
        core: FloatArray,
        member: BoolArray,
        share: FloatArray,
        rows: FloatArray,
        own: FloatArray,
        clusters: int,
        unit: float,
    ) -> Covariance:
        """From the core, which rows are pool members, the members' shares, the outsiders'
        rows (:func:`outsider_rows`), over ``clusters`` independent units, in units of
        ``unit`` natural units each (``ELO_SCALE``: Elo)."""
        scale = clusters / (clusters - 1) if clusters > 1 else 1.0  # small-sample correction
        mi, oi = np.flatnonzero(member), np.flatnonzero(~member)
        # Products with the whole core, never a copy of its member rows or columns (800 MB
        # each at 10,000 bots): the centre and the outsiders' rows spread over every row.
        centre = np.zeros(len(core))
        centre[mi] = share
        h = core @ centre
        spread = np.zeros((len(oi), len(core)))
        spread[:, mi] = rows
        spread[np.arange(len(oi)), oi] = own
        y = spread @ core
        z = y @ spread.T
        ah = h.copy()
        ah[oi] = spread @ h
        outsider = np.full(len(core), -1, dtype=np.int64)
        outsider[oi] = np.arange(len(oi))
        return cls(core, scale / unit**2, ah, float(share @ h[mi]), outsider, y, z)

    def cov(self, i: IntArray, j: IntArray) -> FloatArray:
        """The covariances of the estimates at rows ``i`` and ``j``, pairwise."""
        oi, oj = self.outsider[i], self.outsider[j]
        base = self.core[i, j]
        one = (oi >= 0) & (oj < 0)
        base[one] = self.y[oi[one], j[one]]
        other = (oi < 0) & (oj >= 0)
        base[other] = self.y[oj[other], i[other]]
        both = (oi >= 0) & (oj >= 0)
        base[both] = self.z[oi[both], oj[both]]
        out: FloatArray = self.scale * (base - self.ah[i] - self.ah[j] + self.sigma)
        return out

    def sd(self) -> FloatArray:
        """Every finite estimate's standard error (only the diagonal is computed)."""
        every = np.arange(len(self.core))
        out: FloatArray = np.sqrt(np.maximum(self.cov(every, every), 0.0))
        return out


def effective_clusters(matches: IntArray, clusters: int, total: int) -> FloatArray:
    """Each bot's independent units (deals), estimated as its matches over the store's
    matches per deal: exact when every deal seats its bots in every match (duplicate
    rotations) or is one match (independent play). The sums it reads are kept up to date
    as matches arrive, so a full fit and an update agree."""
    per_deal = total / clusters if clusters else 1.0
    out: FloatArray = matches / max(per_deal, 1.0)
    return out


def t_quantile(p: float, df: FloatArray) -> FloatArray:
    """Student's t quantile at ``p`` (> 1/2) for each of ``df`` (clamped to >= 1).

    Why t and not the normal quantile: a clustered standard error is estimated from the
    bot's few independent deals, so it varies from season to season, and the normal
    quantile then under-covers: 93% at 20 deals per bot, and 92% with card luck or a
    bot x deal effect (issue #38; bench/rating_checks.py coverage), where t on the bot's
    deals less one reaches 95%. The Cornish-Fisher series in ``1/df`` (Abramowitz and
    Stegun 26.7.5) is within 0.1% from 3 degrees of freedom on; below that, the exact
    quantile by bisection of the distribution function."""
    z = NormalDist().inv_cdf(p)
    nu = np.maximum(np.asarray(df, dtype=np.float64), 1.0)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    out: FloatArray = z + g1 / nu + g2 / nu**2 + g3 / nu**3 + g4 / nu**4
    small = nu < 3.0
    if small.any():  # interpolated in 1/df on exact values, computed once per level
        grid, exact = _small_df_table(p)
        out[small] = np.interp(1.0 / nu[small], grid, exact)
    return out


@functools.cache
def _small_df_table(p: float) -> tuple[FloatArray, FloatArray]:
    """Exact quantiles at ``p`` on a grid of ``1/df`` from 1/3 to 1 (df from 3 down to 1):
    a few milliseconds each, so a board of many young bots interpolates instead."""
    grid = np.linspace(1.0 / 3.0, 1.0, 121)
    return grid, np.array([_exact_t_quantile(p, 1.0 / g) for g in grid.tolist()])


def _exact_t_quantile(p: float, nu: float) -> float:
    lo, hi = 0.0, 1e4
    for _ in range(100):  # the upper tail is monotone: bisection
        mid = 0.5 * (lo + hi)
        below = 1.0 - 0.5 * _incomplete_beta(nu / (nu + mid * mid), nu / 2, 0.5)  # P(T <= mid)
        lo, hi = (mid, hi) if below < p else (lo, mid)
    return 0.5 * (lo + hi)


def _incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)`` (Lentz's continued fraction)."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    if x > (a + 1.0) / (a + b + 2.0):  # the fraction converges fast on this side only
        return 1.0 - _incomplete_beta(1.0 - x, b, a)
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front) / a
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 300):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front * f


def los(order: list[int], finite: BoolArray, elo: FloatArray, covariance: Covariance) -> list[float | None]:
    """The likelihood of superiority of each bot of ``order`` (codes) over the next one, by
    the normal approximation with their covariance: None next to a bot without a finite
    estimate (or a code out of range). Every pair at once: a row product each."""
    if len(order) < 2:
        return []
    codes = np.asarray(order, dtype=np.int64)
    i, j = codes[:-1], codes[1:]
    inside = (np.minimum(i, j) >= 0) & (np.maximum(i, j) < len(finite))
    ok = inside.copy()
    ok[inside] = finite[i[inside]] & finite[j[inside]]
    row = np.cumsum(finite) - 1
    a, b = row[i[ok]], row[j[ok]]
    var = covariance.cov(a, a) + covariance.cov(b, b) - 2.0 * covariance.cov(a, b)
    spread = np.sqrt(np.maximum(var, 0.0))
    diff = elo[i[ok]] - elo[j[ok]]
    normal = NormalDist()
    values = [
        normal.cdf(d / s) if s > 0 else 0.5 if d == 0 else 1.0
        for d, s in zip(diff.tolist(), spread.tolist(), strict=True)
    ]
    out: list[float | None] = [None] * len(ok)
    for at, value in zip(np.flatnonzero(ok).tolist(), values, strict=True):
        out[at] = value
    return out


def one_sided_bound(weights: FloatArray, pool_x: FloatArray, won: bool, alpha: float) -> float:
    """The rating at which a record this one-sided has probability ``alpha`` (natural units):
    a lower bound for a clean sweep, an upper one for a record without a point."""
    sign = 1.0 if won else -1.0
    lo, hi = float(pool_x.min()) - 50.0, float(pool_x.max()) + 50.0
    # Only the bots it met weigh in: a row of a 10,000-bot pool is mostly zeros, and the whole
    # row per step made a first board with one-sided records take minutes (#36).
    met = np.flatnonzero(weights)
    weights, pool_x = weights[met], pool_x[met]

    def log_prob(x: float) -> float:  # log P(every comparison goes the record's way)
        return float(np.sum(weights * -np.logaddexp(0.0, -sign * (x - pool_x))))

    target = math.log(alpha)
    for _ in range(200):  # log_prob is monotone: bisection
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):  # as close as floats get: further steps change nothing
            break
        if (log_prob(mid) < target) == won:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
