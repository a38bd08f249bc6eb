"""The rating fit's data: matches reduced to what the model needs, kept compact.

A match at an ``n``-seat table is ``n`` bot codes (int32) and the result of each of its
``n (n - 1) / 2`` seat pairs (int8: 2, 1 or 0 for a win, draw or loss of the pair's first
seat, by final score). Two summaries are kept up to date as matches arrive:

- the pairwise sufficient statistics ``points[a, b]`` and ``weights[a, b]`` (each pair of a
  match weighs ``1/(n-1)``, so every seat weighs 1 whatever the table size): the point
  estimate needs nothing else, however many matches there are;
- the blocks of matches themselves, because the interval is clustered by deal: the
  sandwich's "meat" (arena/ratings/intervals.py) sums, over deals, the outer product of the
  deal's score vector (the sum of its matches'), which depends on the ratings and so is
  recomputed at each full fit. In duplicate play the matches of one deal share every card,
  so they are one independent unit, not several; a match given no deal is its own.

At 10 million matches this is about 300 MB, against gigabytes for MatchResult objects;
``RatingModel.add_table`` (arena/ratings/model.py) takes arrays directly for that reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


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
    deal: IntArray | None = None  # (m,) deal codes; None: every match is a deal of its own


@dataclass
class RatingData:
    """Every match added so far, as blocks plus the pairwise sums (dense, bots x bots)."""

    names: list[str] = field(default_factory=list)
    codes: dict[str, int] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)
    points: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    weights: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    matches: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: Row sums of ``points`` and ``weights``, kept as they change: a bot's record against
    #: everyone, without reading a bots x bots row block each update.
    scored: FloatArray = field(default_factory=lambda: np.zeros(0))
    played: FloatArray = field(default_factory=lambda: np.zeros(0))
    total: int = 0
    deal_codes: dict[object, int] = field(default_factory=dict)
    named: int = 0  # matches given a deal
    #: Deals loaded in bulk (:meth:`bulk_deals`): keys ``(a, b)`` of two int64s, sorted, a
    #: deal's code its position. Millions of them would take gigabytes as dict entries.
    bulk: tuple[IntArray, IntArray] = field(
        default_factory=lambda: (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    )

    @property
    def deals(self) -> int:
        """Independent units so far: the named deals, plus every match given none."""
        return len(self.bulk[0]) + len(self.deal_codes) + self.total - self.named

    def deal_of(self, keys: list[object]) -> IntArray:
        """Codes for deal keys (any hashable), new ones numbered as they come."""
        out = np.empty(len(keys), dtype=np.int64)
        for i, key in enumerate(keys):
            code = self.deal_codes.get(key)
            if code is None:
                code = self._bulk_code(key)
            if code is None:
                code = self.deal_codes[key] = len(self.bulk[0]) + len(self.deal_codes)
            out[i] = code
        return out

    def bulk_deals(self, a: IntArray, b: IntArray) -> IntArray:
        """Codes for deal keys ``(a[i], b[i])`` (int64 pairs) on a model with no deal yet,
        vectorised: the first load of a big store."""
        if self.deal_codes or len(self.bulk[0]):
            raise ValueError("deals are loaded in bulk only into an empty model")
        order = np.lexsort((b, a))
        sa, sb = a[order], b[order]
        first = np.r_[True, (sa[1:] != sa[:-1]) | (sb[1:] != sb[:-1])] if len(sa) else np.zeros(0, dtype=bool)
        codes = np.empty(len(a), dtype=np.int64)
        codes[order] = np.cumsum(first) - 1
        self.bulk = (sa[first], sb[first])
        return codes

    def _bulk_code(self, key: object) -> int | None:
        """A bulk-loaded deal's code, for a key ``(a, b)`` of two ints (b as stored: a
        signed 64-bit value, an unsigned one taken modulo 2**64)."""
        keys_a, keys_b = self.bulk
        if not len(keys_a) or not isinstance(key, tuple) or len(key) != 2:
            return None
        a, b = key
        if not (isinstance(a, int) and isinstance(b, int)) or not -(2**63) <= a < 2**63:
            return None
        b = (b + 2**63) % 2**64 - 2**63  # as the store's signed column holds it
        lo, hi = np.searchsorted(keys_a, a, "left"), np.searchsorted(keys_a, a, "right")
        at = lo + int(np.searchsorted(keys_b[lo:hi], b))
        return int(at) if at < hi and int(keys_b[at]) == b else None

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
        for attr in ("scored", "played"):
            sums = np.zeros(new)
            sums[:cap] = getattr(self, attr)
            setattr(self, attr, sums)

    def add(self, n: int, idx: IntArray, scores: FloatArray, deal: IntArray | None = None) -> Block:
        """Add ``m`` matches at ``n`` seats: ``idx`` (m, n) bot codes, ``scores`` (m, n),
        ``deal`` (m,) codes from :meth:`deal_of`, -1 for a match that is a deal of its own."""
        u, v = pair_columns(n)
        results = (1 + np.sign(scores[:, u] - scores[:, v])).astype(np.int8)
        if deal is not None and (deal < 0).all():
            deal = None
        block = Block(n, idx.astype(np.int32), results, deal)
        self.named += 0 if deal is None else int((deal >= 0).sum())
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
            np.add.at(self.scored, a, got)
            np.add.at(self.scored, b, w - got)
            np.add.at(self.played, a, w)
            np.add.at(self.played, b, w)
            self.blocks.append(block)
            self.total += len(idx)
            return block
        # Counts per cell: of comparisons, and of points doubled (2/1/0), both integers, so
        # exact; over the bots present (k x k), not the capacity (3 x cap x cap int64 was
        # 6.4 GB at 10,000 bots).
        k = int(idx.max()) + 1 if idx.size else 0
        pair_count = np.zeros(k * k)
        point_count = np.zeros(k * k)
        for col in range(len(u)):
            cells = idx[:, u[col]].astype(np.int64) * k + idx[:, v[col]]
            pair_count += np.bincount(cells, minlength=k * k)
            point_count += np.bincount(cells, results[:, col].astype(np.float64), minlength=k * k)
            del cells
        w2 = (w * pair_count).reshape(k, k)
        p2 = (0.5 * w * point_count).reshape(k, k)
        del pair_count, point_count
        # A pair's cell holds one orientation; the other side gets weight minus points.
        got = p2 + (w2 - p2).T
        self.points[:k, :k] += got
        self.scored[:k] += got.sum(axis=1)
        del got, p2
        both = w2 + w2.T
        self.weights[:k, :k] += both
        self.played[:k] += both.sum(axis=1)
        del both, w2
        self.matches += np.bincount(idx.ravel(), minlength=cap)
        self.blocks.append(block)
        self.total += len(idx)
        return block
