"""Matchmaking for information: which bots sit at the ladder's next table, and why.

Each pick starts from one *focal* bot, chosen by the first rule that applies:

1. ``"minimum share"``: a bot below ``min_share`` x the mean number of matches (the fewest
   first), so no active bot starves whatever the other rules want;
2. ``"placement"``: a bot whose standard error is still ``placement_sd`` or more (a newcomer,
   the fewest matches first): the placement burst, until its interval is narrow enough;
3. the top of the board, while it is unresolved: with probability ``top_weight`` once the
   whole board is ordered (its mean rating variance at most ``ordered_noise`` x the variance
   of its ratings), ``early_top_weight`` before, and before then its bots capped at
   ``early_max_share`` x the mean, so the first matches order the board that most readers
   look at whatever the pool's size: the bot least sure of its side of the top-``top_n`` line (the fewest
   standard errors from the midpoint of #top_n and the next, under ``top_z``), played against
   the open bot nearest the line on the other side (the inside bots are the reference for
   the doubtful ones outside, and the other way round; LUCB's pair needed a doubtful bot on
   both sides and so seated one or two such tables a batch): ``"top 10: uncertain pair #10
   and #12"``;
4. otherwise the whole board: a bot drawn with probability proportional to its rating's
   variance: ``"uncertain pair #341 and #350"``.

The other seats go to the bots that most reduce the table's rating variance with the focal
one (one comparison's Fisher information ``ELO_SCALE**2 p (1 - p)`` at the current ratings):
for a top-line table, among the doubtful bots and the nearest either side of the line (then
the focal bot's ``neighbours`` either side on the board); for any other,
the best of ``explore`` bots drawn from anywhere. That is nearly random pairing, on purpose:
pairing only near neighbours makes a chain whose parts drift apart (in bench/ladder.py it
needed 1.5-1.75x random pairing's matches for the whole board's order), while random opponents
tie every bot to the same scale; keeping the best of a few only avoids the hopeless mismatches.

Every pick respects each bot's capacity (``free``), never seats two bots of one owner unless
``allow_same_owner``, and leaves out bots already at ``max_share`` x the mean (unless nobody
else could fill the table: over the cap rather than no table). :func:`choose_tables` fills
several free tables from one reading of the pool: a few C-level passes over it, the rest
built when a rule first needs it (the top line from the bots within reach of it, the heaps
from the bots below the floor or still placing); :func:`choose_table` is one of them.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import itertools
import math
import operator
import random
from collections.abc import Sequence
from dataclasses import dataclass

from arena.ratings.model import ELO_SCALE, RatingsError

__all__ = ["Candidate", "MatchmakingError", "MatchmakingSettings", "Pick", "choose_table", "choose_tables"]

#: The standard error assumed for an unrated bot (sd = inf): wider than any board's spread,
#: finite so that the information arithmetic stays finite.
UNRATED_SD = 400.0


class MatchmakingError(RatingsError):
    """Bad input to the matchmaker: a malformed candidate, setting, pool or table size."""


@dataclass(frozen=True)
class Candidate:
    """A bot that may be scheduled, as the ladder sees it now."""

    bot_id: int
    owner_id: int
    #: Current rating estimate (Elo scale, anchored at 1500).
    elo: float
    #: Its standard error in Elo ((high - low) / (2 * 1.96) of the board's interval); inf if unrated.
    sd: float
    #: Ladder matches it has played or is scheduled for so far.
    matches: int
    #: Tables it can still join now (capacity); 0 = leave it out of this pick.
    free: int = 1

    def __post_init__(self) -> None:
        if not math.isfinite(self.elo):
            raise MatchmakingError(f"bot {self.bot_id!r} has rating {self.elo!r}; ratings are finite")
        if not self.sd >= 0:  # also refuses NaN
            raise MatchmakingError(f"bot {self.bot_id!r} has sd {self.sd!r}; sd is >= 0 (inf if unrated)")
        if self.matches < 0 or self.free < 0:
            raise MatchmakingError(
                f"bot {self.bot_id!r} has matches {self.matches!r} and free {self.free!r}; both are >= 0"
            )


@dataclass(frozen=True)
class MatchmakingSettings:
    #: A bot is placing (gets the burst) until its standard error is below this (Elo).
    placement_sd: float = 100.0
    #: How much of the board's top matters most: the line between #top_n and #top_n + 1.
    top_n: int = 10
    #: The chance a pick (no bot starving or placing) goes to that line while it is
    #: unresolved, once the board as a whole is ordered; max_share bounds what its few bots
    #: can take, so 1 is safe.
    top_weight: float = 1.0
    #: The same chance before then ...
    early_top_weight: float = 1.0
    #: ... and its bots' cap before then (x the mean, as max_share): what the top line takes
    #: from ordering the whole board, which most readers look at first, then scales with its
    #: few bots, not with the pool (at 200 bots 20 bots at 5x took a quarter of the seats).
    early_max_share: float = 2.0
    #: The board is ordered once its mean rating variance is at most this x its ratings'
    #: variance (rank correlation with the truth about sqrt(1 - this)).
    ordered_noise: float = 0.05
    #: Confidence (normal quantile) for "resolved": every bound on one side of the line.
    top_z: float = 2.5
    #: Every active bot keeps at least min_share x the mean number of matches ...
    min_share: float = 0.5
    #: ... and none gets more than max_share x the mean (x max(mean, 1), for the first matches).
    max_share: float = 5.0
    #: Never two bots of one owner at a table unless this is set.
    allow_same_owner: bool = False
    #: A top-line table fills its other seats from this many bots either side of the pair ...
    neighbours: int = 4
    #: ... other tables from this many bots drawn anywhere, the most informative kept: nearly
    #: random pairing, which keeps the whole board's graph of results well connected.
    explore: int = 3

    def __post_init__(self) -> None:
        checks = (
            ("placement_sd", self.placement_sd > 0),
            ("top_n", isinstance(self.top_n, int) and self.top_n >= 1),
            ("top_weight", 0 <= self.top_weight <= 1),
            ("early_top_weight", 0 <= self.early_top_weight <= 1),
            ("early_max_share", self.early_max_share >= 1),
            ("ordered_noise", 0 <= self.ordered_noise <= 1),
            ("top_z", self.top_z >= 0 and math.isfinite(self.top_z)),
            ("min_share", 0 <= self.min_share <= 1),
            ("max_share", self.max_share >= 1),
            ("neighbours", isinstance(self.neighbours, int) and self.neighbours >= 0),
            (
                "explore",
                isinstance(self.explore, int) and self.explore >= 0 and self.explore + self.neighbours >= 1,
            ),
        )
        for name, ok in checks:
            if not ok:
                raise MatchmakingError(f"matchmaking setting {name}={getattr(self, name)!r} is out of range")


@dataclass(frozen=True)
class Pick:
    """One table: the bots (len == seats; the focal bot first) and why they were chosen."""

    bot_ids: tuple[int, ...]
    #: Short, shown on pages: "placement", "minimum share", "uncertain pair #4 and #5", ...
    reason: str


_DEFAULT = MatchmakingSettings()
_BOT_ID = operator.attrgetter("bot_id")
_ELO = operator.attrgetter("elo")
_SD = operator.attrgetter("sd")
_MATCHES = operator.attrgetter("matches")
_FREE = operator.attrgetter("free")
#: Draws of the focal bot by variance before falling back to a pass over the pool.
_DRAWS = 16


def _info(a: float, b: float) -> float:
    """Fisher information (Elo^-2) of one comparison between ratings a and b."""
    d = a - b
    if abs(d) > 4000.0:  # far beyond any board (and math.exp's range): no information
        return 0.0
    p = 1.0 / (1.0 + math.exp(-ELO_SCALE * d))
    return ELO_SCALE * ELO_SCALE * p * (1.0 - p)


def choose_table(
    pool: Sequence[Candidate],
    seats: int,
    rng: random.Random,
    settings: MatchmakingSettings = _DEFAULT,
) -> Pick | None:
    """The next table of ``seats`` bots from ``pool`` (every active bot, busy ones included:
    they count for the board and the shares), or None if no valid table exists. Deterministic
    for a given state of ``rng``."""
    picks = choose_tables(pool, seats, rng, 1, settings)
    return picks[0] if picks else None


def choose_tables(
    pool: Sequence[Candidate],
    seats: int,
    rng: random.Random,
    count: int,
    settings: MatchmakingSettings = _DEFAULT,
) -> list[Pick]:
    """Up to ``count`` tables at once (the ladder's free tables), each chosen as
    :func:`choose_table` would with the earlier ones scheduled (their bots' matches counted,
    their free slots taken); fewer when no valid table remains. The pool is read once for the
    whole batch (see _Planner)."""
    if isinstance(seats, bool) or not isinstance(seats, int) or seats < 2:
        raise MatchmakingError(f"a table has at least 2 seats, not {seats!r}")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise MatchmakingError(f"the number of tables must be a non-negative integer, not {count!r}")
    planner = _Planner(pool, seats, rng, settings)
    picks: list[Pick] = []
    while len(picks) < count and planner.feasible():
        picks.append(planner.pick())
    return picks


class _Planner:
    """The pool read once, and what the picks so far have changed (matches, free slots)."""

    def __init__(
        self, pool: Sequence[Candidate], seats: int, rng: random.Random, s: MatchmakingSettings
    ) -> None:
        # Only a few C-level passes over the pool here (map, set, max): a heads-up pick at
        # 1,000 bots stays well under a millisecond. What only some picks need (the board's
        # order, the top line, the heaps, the variances) is built on first use.
        n = len(pool)
        if len(set(map(_BOT_ID, pool))) != n:
            seen: set[int] = set()
            for bot in map(_BOT_ID, pool):
                if bot in seen:
                    raise MatchmakingError(f"bot {bot!r} is in the pool twice")
                seen.add(bot)
        self.pool, self.seats, self.rng, self.s, self.n = pool, seats, rng, s, n
        self.matches: list[int] = list(map(_MATCHES, pool))
        self.free: list[int] = list(map(_FREE, pool))
        self.total = sum(self.matches)
        self.elo: list[float] = list(map(_ELO, pool))
        self.raw_sd: list[float] = list(map(_SD, pool))
        top_sd = max(self.raw_sd) if n else 0.0
        self.placing_now = top_sd >= s.placement_sd
        self.free_bots = n - self.free.count(0)
        self.offset = rng.randrange(n) if n else 0  # ties among the fewest matches: a random start
        self.bound = 0.0  # by_matches holds the free bots with fewer matches than this
        self.ranks_asked = 0

    @functools.cached_property
    def sd(self) -> list[float]:
        if max(self.raw_sd) < UNRATED_SD:
            return self.raw_sd
        return [x if x < UNRATED_SD else UNRATED_SD for x in self.raw_sd]

    @functools.cached_property
    def var(self) -> list[float]:
        return list(map(operator.mul, self.sd, self.sd))

    @functools.cached_property
    def order(self) -> list[int]:
        """The board, best first (ties by position in the pool)."""
        return sorted(range(self.n), key=self.elo.__getitem__, reverse=True)

    @functools.cached_property
    def pos(self) -> list[int]:
        """Each bot's place on the board (0 = first): the inverse of ``order``."""
        pos = [0] * self.n
        for place, i in enumerate(self.order):
            pos[i] = place
        return pos

    def rank(self, i: int) -> int:
        """The bot's place on the board, 1 = first: counted for the first few (a single pick
        needs two), then from the sorted board."""
        self.ranks_asked += 1
        if "pos" in self.__dict__ or self.ranks_asked > 8:
            return self.pos[i] + 1
        e, elo = self.elo[i], self.elo
        return sum(map(e.__lt__, elo)) + elo[:i].count(e) + 1  # ties: in pool order, as sorted

    def owner(self, i: int) -> int:
        return self.pool[i].owner_id

    def entry(self, i: int) -> tuple[int, int, int]:
        return self.matches[i], (i - self.offset) % self.n, i

    @functools.cached_property
    def by_matches(self) -> list[tuple[int, int, int]]:
        """Fewest matches first (ties from a random offset): the free bots below ``bound``,
        1 above the floor when built (rebuilt once the floor passes it)."""
        self.bound = self.floor() + 1.0
        low = itertools.compress(range(self.n), map(self.bound.__gt__, self.matches))
        heap = [self.entry(i) for i in low if self.free[i] > 0]
        heapq.heapify(heap)
        return heap

    @functools.cached_property
    def placing(self) -> list[tuple[int, int, int]]:
        """The same, for the bots still placing."""
        bar = self.s.placement_sd
        wide = itertools.compress(range(self.n), map(bar.__le__, self.raw_sd)) if self.placing_now else ()
        heap = [self.entry(i) for i in wide if self.free[i] > 0]
        heapq.heapify(heap)
        return heap

    @functools.cached_property
    def cum(self) -> list[float]:
        return list(itertools.accumulate(self.var))

    @functools.cached_property
    def ordered(self) -> bool:
        """Whether the board as a whole is ordered: its ratings' mean variance at most
        ``ordered_noise`` x their spread's (the truth's rank correlation with it is then about
        sqrt(1 - ordered_noise)); before that the top line gets ``early_top_weight``."""
        n, elo = self.n, self.elo
        mean = sum(elo) / n
        spread: float = sum(map(operator.mul, elo, elo)) / n - mean * mean
        noise: float = sum(self.var) / n
        return noise <= self.s.ordered_noise * spread

    @functools.cached_property
    def contenders(self) -> tuple[list[int], list[int], list[int]]:
        """The top line (midway between #top_n and the next): the bots whose side of it is
        still in doubt at ``top_z`` standard errors, the least certain first; and the bots
        either side nearest the line first (inside: the top_n; outside: those within reach)."""
        top_n, z, elo, sd = self.s.top_n, self.s.top_z, self.elo, self.sd
        if self.n <= top_n:
            return [], [], []
        best = sorted(elo, reverse=True)
        line = 0.5 * (best[top_n - 1] + best[top_n])
        # Only a bot within z of the widest interval can be in doubt: one C-level pass.
        reach = min(line - z * max(sd), best[top_n])
        near = list(itertools.compress(range(self.n), map(reach.__le__, elo)))
        key = elo.__getitem__
        inside = sorted((i for i in near if elo[i] > line), key=key)[-top_n:]
        outside = sorted((i for i in near if elo[i] <= line), key=key, reverse=True)

        def doubt(i: int) -> float:  # standard errors between the bot and the line
            return abs(elo[i] - line) / sd[i] if sd[i] > 0 else math.inf

        doubts = {i: doubt(i) for i in near}
        return sorted((i for i in near if doubts[i] < z), key=doubts.__getitem__), inside, outside

    def floor(self) -> float:
        return self.s.min_share * self.total / self.n

    def feasible(self) -> bool:
        """At least ``seats`` bots with a free slot, of as many owners (unless allowed)."""
        need = self.seats
        if self.free_bots < need:
            return False
        if self.s.allow_same_owner:
            return True
        owners: set[int] = set()
        for bot in itertools.compress(self.pool, self.free):  # stops at the first few, usually
            owners.add(bot.owner_id)
            if len(owners) >= need:
                return True
        return False

    def limit(self) -> float:
        return self.s.max_share * max(self.total / self.n, 1.0) if self.n else 0.0

    def is_open(self, i: int, limit: float) -> bool:
        return self.free[i] > 0 and self.matches[i] + 1 <= limit

    def pick(self) -> Pick:
        limit = self.limit()
        focal, partner, reason = self.focal(limit)
        table = [focal] if partner is None else [focal, partner]
        self.fill(table, limit, near=partner is not None)
        if reason is None:
            best = max(table[1:], key=lambda j: self.confusion(focal, j))
            reason = f"uncertain pair #{self.rank(focal)} and #{self.rank(best)}"
        for i in table:
            self.matches[i] += 1
            self.total += 1
            self.free[i] -= 1
            if self.free[i] == 0:
                self.free_bots -= 1
            else:
                if "by_matches" in self.__dict__ and self.matches[i] < self.bound:  # built: keep it current
                    heapq.heappush(self.by_matches, self.entry(i))
                if "placing" in self.__dict__ and self.raw_sd[i] >= self.s.placement_sd:
                    heapq.heappush(self.placing, self.entry(i))
        return Pick(tuple(self.pool[i].bot_id for i in table), reason)

    def confusion(self, a: int, b: int) -> float:
        """How likely the board orders a and b wrongly (normal approximation, independence)."""
        spread = math.sqrt(self.var[a] + self.var[b])
        if spread == 0:
            return 0.0
        return 0.5 * math.erfc(abs(self.elo[a] - self.elo[b]) / spread / math.sqrt(2.0))

    def least(self, heap: list[tuple[int, int, int]], limit: float) -> int | None:
        """The open bot with the fewest matches in ``heap`` (stale entries dropped)."""
        while heap:
            m, _, i = heap[0]
            if m != self.matches[i] or self.free[i] <= 0:
                heapq.heappop(heap)  # stale, or busy for the rest of this call
                continue
            return i if m + 1 <= limit else None
        return None

    def focal(self, limit: float) -> tuple[int, int | None, str | None]:
        """The focal bot, maybe its partner, and the reason (None: "uncertain pair", once seated)."""
        s = self.s
        floor = self.floor()
        if min(self.matches) < floor:  # someone may starve: look closer
            if floor >= self.bound:
                self.__dict__.pop("by_matches", None)  # built for a lower floor
            least = self.least(self.by_matches, limit)
            if least is not None and self.matches[least] < floor:
                # A newcomer starts below the floor: its matches are its placement.
                wide = self.raw_sd[least] >= s.placement_sd
                return least, None, "placement" if wide else "minimum share"
        placing = self.least(self.placing, limit) if self.placing_now else None
        if placing is not None:
            return placing, None, "placement"
        early = s.early_top_weight < s.top_weight or s.early_max_share < s.max_share
        ordered = not early or self.ordered
        weight = s.top_weight if ordered else s.early_top_weight
        if weight > 0 and self.rng.random() < weight:
            top_limit = limit if ordered else min(limit, limit * s.early_max_share / s.max_share)
            pair = self.top_pair(top_limit)
            if pair is not None:
                first, second = sorted((self.rank(pair[0]), self.rank(pair[1])))
                return pair[0], pair[1], f"top {s.top_n}: uncertain pair #{first} and #{second}"
        return self.by_variance(limit), None, None

    def top_pair(self, limit: float) -> tuple[int, int] | None:
        """The open bot whose side of the top line is least certain, against the open bot
        nearest the line on its other side (a direct comparison across the line: the inside
        bots are the reference for those in doubt outside, and the other way round)."""
        doubtful, inside, outside = self.contenders
        for focal in doubtful:
            if not self.is_open(focal, limit):
                continue
            owner = None if self.s.allow_same_owner else self.owner(focal)
            across = outside if focal in inside else inside
            partner = next((i for i in across if self.is_open(i, limit) and self.owner(i) != owner), None)
            if partner is not None:
                return focal, partner
        return None

    def by_variance(self, limit: float) -> int:
        """A bot drawn with probability proportional to its rating's variance, among the open
        ones (the free ones, if every free bot is at the cap)."""
        total = self.cum[-1]
        if total > 0:
            for _ in range(_DRAWS):
                i = bisect.bisect_right(self.cum, self.rng.random() * total)
                if i < self.n and self.is_open(i, limit):
                    return i
        candidates = [i for i in range(self.n) if self.is_open(i, limit)]
        if not candidates:
            candidates = [i for i in range(self.n) if self.free[i] > 0]
        weights = [self.var[i] for i in candidates]
        if sum(weights) <= 0:
            return self.rng.choice(candidates)
        return self.rng.choices(candidates, weights)[0]

    def fill(self, table: list[int], limit: float, *, near: bool) -> None:
        """Seat the rest: for a top-line table the focal bot's most informative neighbours on
        the board; otherwise each seat the most informative of ``explore`` bots drawn from
        anywhere; then (rarely) anyone who fits."""
        s = self.s
        if near and len(table) < self.seats:
            doubtful, inside, outside = self.contenders
            self.seat(table, self.ranked(table, doubtful + inside[:3] + outside[:3], limit))
        if (near or not s.explore) and len(table) < self.seats:
            p = self.pos[table[0]]
            window = self.order[max(0, p - s.neighbours) : p + s.neighbours + 1]
            self.seat(table, self.ranked(table, window, limit))
        if s.explore:
            for _ in range(4 * self.seats):  # a few rounds: some draws are busy or taken
                if len(table) == self.seats:
                    break
                drawn = self.rng.sample(range(self.n), min(s.explore, self.n))
                self.seat(table, self.ranked(table, drawn, limit)[:1])
        if len(table) < self.seats:
            # The fallbacks cost O(n), so they run only when needed: anyone open, then anyone
            # free (over the cap rather than no table).
            self.seat(table, [j for j in self.shuffled() if self.is_open(j, limit)])
            self.seat(table, [j for j in self.shuffled() if self.free[j] > 0])
        if len(table) != self.seats:  # feasible() was checked first
            raise AssertionError(f"could not fill a table of {self.seats}")

    def ranked(self, table: list[int], candidates: list[int], limit: float) -> list[int]:
        """The open candidates that may join ``table``, the most informative with its focal
        bot first (jittered, so the same few are not always chosen)."""
        focal = table[0]
        v, e = self.var[focal], self.elo[focal]
        owners = () if self.s.allow_same_owner else {self.owner(i) for i in table}
        free, matches, elo, var, rng = self.free, self.matches, self.elo, self.var, self.rng
        scored: list[tuple[float, int]] = []
        for j in dict.fromkeys(candidates):  # de-duplicated, order kept
            if j in table or free[j] <= 0 or matches[j] + 1 > limit or self.owner(j) in owners:
                continue
            info = _info(e, elo[j])
            w = var[j]
            gain = v * v * info / (1.0 + v * info) + w * w * info / (1.0 + w * info)
            scored.append((gain * (0.5 + rng.random()), j))
        scored.sort(reverse=True)
        return [j for _, j in scored]

    def seat(self, table: list[int], candidates: list[int]) -> None:
        """Seat candidates in order while seats are empty, one bot per owner (unless allowed)."""
        same_ok = self.s.allow_same_owner
        owners = {self.owner(i) for i in table}
        for j in candidates:
            if len(table) == self.seats:
                return
            if j in table or (not same_ok and self.owner(j) in owners):
                continue
            table.append(j)
            owners.add(self.owner(j))

    def shuffled(self) -> list[int]:
        out = list(range(self.n))
        self.rng.shuffle(out)
        return out
