"""The rating fit's data: matches reduced to what the model needs, kept compact.

A match at an ``n``-seat table is ``n`` bot codes (int32) and the result of each of its
``n (n - 1) / 2`` seat pairs (int8: 2, 1 or 0 for a win, draw or loss of the pair's first
seat, by final score). Two summaries are kept up to date as matches arrive:

- the pairwise sufficient statistics ``points[a, b]`` and ``weights[a, b]`` (each pair of a
  match weighs ``1/(n-1)``, so every seat weighs 1 whatever the table size): the point
  estimate needs nothing else, however many matches there are;
- the blocks of matches themselves, because the interval is clustered by match: the
  sandwich's "meat" sums each match's score vector's outer product, which depends on the
  ratings and so is recomputed (in chunks, never as a matches x bots array) at each full fit.

At 10 million matches this is about 300 MB, against gigabytes for MatchResult objects;
:meth:`RatingData.add_table` takes arrays directly for that reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Matches per chunk when recomputing the meat: bounds the temporary arrays to ~100 MB.
CHUNK = 400_000


def pair_columns(n: int) -> tuple[IntArray, IntArray]:
    u, v = np.triu_indices(n, 1)
    return u.astype(np.int64), v.astype(np.int64)


def sigmoid(z: FloatArray) -> FloatArray:
    out: FloatArray = np.exp(-np.logaddexp(0.0, -z))
    return out


@dataclass
class Block:
    """Matches at one table size: bot codes by seat and pair results (2/1/0)."""

    n: int
    idx: npt.NDArray[np.int32]  # (m, n)
    results: npt.NDArray[np.int8]  # (m, n(n-1)/2), pairs in pair_columns(n) order


@dataclass
class RatingData:
    """Every match added so far, as blocks plus the pairwise sums (dense, bots x bots)."""

    names: list[str] = field(default_factory=list)
    codes: dict[str, int] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)
    points: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    weights: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    matches: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    total: int = 0

    @property
    def k(self) -> int:
        return len(self.names)

    def code_of(self, names: list[str]) -> IntArray:
        for name in names:
            if name not in self.codes:
                self.codes[name] = len(self.names)
                self.names.append(name)
        self._grow()
        return np.fromiter((self.codes[n] for n in names), dtype=np.int64, count=len(names))

    def _grow(self) -> None:
        k, cap = len(self.names), len(self.matches)
        if k <= cap:
            return
        new = max(k, 2 * cap, 8)
        for attr in ("points", "weights"):
            grown = np.zeros((new, new))
            grown[:cap, :cap] = getattr(self, attr)
            setattr(self, attr, grown)
        matches = np.zeros(new, dtype=np.int64)
        matches[:cap] = self.matches
        self.matches = matches

    def add(self, n: int, idx: IntArray, scores: FloatArray) -> Block:
        """Add ``m`` matches at ``n`` seats: ``idx`` (m, n) bot codes, ``scores`` (m, n)."""
        u, v = pair_columns(n)
        results = (1 + np.sign(scores[:, u] - scores[:, v])).astype(np.int8)
        block = Block(n, idx.astype(np.int32), results)
        cap = len(self.matches)
        w = 1.0 / (n - 1)
        if len(idx) * len(u) < cap:  # a few matches (a live update): touch only their cells
            a, b = idx[:, u].ravel(), idx[:, v].ravel()
            got = 0.5 * w * results.ravel()
            np.add.at(self.points, (a, b), got)
            np.add.at(self.points, (b, a), w - got)
            np.add.at(self.weights, (a, b), w)
            np.add.at(self.weights, (b, a), w)
            np.add.at(self.matches, idx.ravel(), 1)
            self.blocks.append(block)
            self.total += len(idx)
            return block
        # One integer count per (cell, result): cheaper than weighted sums, and exact.
        counts = np.zeros(3 * cap * cap, dtype=np.int64)
        for col in range(len(u)):
            cells = (idx[:, u[col]] * cap + idx[:, v[col]]) * 3 + results[:, col]
            counts += np.bincount(cells, minlength=3 * cap * cap)
        by_result = counts.reshape(cap, cap, 3)
        p2 = w * (0.5 * by_result[:, :, 1] + by_result[:, :, 2])
        w2 = w * by_result.sum(axis=2).astype(np.float64)
        # A pair's cell holds one orientation; the other side gets weight minus points.
        self.points += p2 + (w2 - p2).T
        self.weights += w2 + w2.T
        self.matches += np.bincount(idx.ravel(), minlength=cap)
        self.blocks.append(block)
        self.total += len(idx)
        return block


def meat(
    blocks: list[Block], x: FloatArray, position: IntArray, partner: BoolArray, size: int
) -> FloatArray:
    """``sum over matches of U_m U_m^T`` for the bots with ``position >= 0`` (their row in the
    result, ``size`` x ``size``). ``U_m`` is the match's score: a seat's pair residuals
    ``w (result - P(win))``, counting only pairs whose other bot is a ``partner`` (the rating
    pool: the model's estimating equations use those pairs only). ``x`` in natural units."""
    out = np.zeros((size + 1) * (size + 1))
    off = np.zeros((size + 1) * (size + 1))  # the i < j terms, added once more transposed
    row = np.where(position >= 0, position, size)  # everyone else lands in a dropped row
    use = position >= 0
    k = len(x)
    # P(a beats b) looked up, not recomputed per pair of every match: 10x fewer exp calls.
    prob = sigmoid(x[:, None] - x[None, :]).ravel()
    for block in blocks:
        n = block.n
        u, v = pair_columns(n)
        w = 1.0 / (n - 1)
        for start in range(0, len(block.idx), CHUNK):
            idx = block.idx[start : start + CHUNK].astype(np.int64)
            res = block.results[start : start + CHUNK]
            seat = np.zeros(idx.shape)
            for col in range(len(u)):
                a, b = idx[:, u[col]], idx[:, v[col]]
                r = w * (0.5 * res[:, col] - prob[a * k + b])
                seat[:, u[col]] += r * (partner[b] & use[a])
                seat[:, v[col]] -= r * (partner[a] & use[b])
            rows = row[idx]
            for i in range(n):
                for j in range(i, n):
                    cells = rows[:, i] * (size + 1) + rows[:, j]
                    prod = seat[:, i] * seat[:, j]
                    add = np.bincount(cells, prod, minlength=(size + 1) ** 2)
                    if i == j:
                        out += add
                    else:
                        off += add
    total = (out + off).reshape(size + 1, size + 1)
    total += off.reshape(size + 1, size + 1).T
    return total[:size, :size]
