"""Matchmaking for information: which bots sit at the ladder's next table, and why.

Each pick starts from one *focal* bot, chosen by the first rule that applies:

1. ``"minimum share"``: a bot below ``min_share`` x the mean number of matches (the fewest
   first), so no active bot starves whatever the other rules want;
2. ``"placement"``: a bot whose standard error is still ``placement_sd`` or more (a newcomer,
   the fewest matches first): the placement burst, until its interval is narrow enough;
3. the top of the board, with probability ``top_weight`` while it is unresolved: the two bots
   whose side of the top-``top_n`` line is least certain (the lowest lower bound inside, the
   highest upper bound outside, as in LUCB for best-arm identification), played against each
   other: ``"top 10: uncertain pair #10 and #12"``;
4. otherwise the whole board: a bot drawn with probability proportional to its rating's
   variance: ``"uncertain pair #341 and #350"``.

The other seats go to the bots that most reduce the table's rating variance with the focal
one (one comparison's Fisher information ``ELO_SCALE**2 p (1 - p)`` at the current ratings, so
near neighbours of a well-rated bot are worth most), drawn from its ``neighbours`` nearest on
the board plus a few from anywhere (``explore``), which keeps the graph of results well
connected: pairing only neighbours makes a chain whose ends drift apart.

Every pick respects each bot's capacity (``free``), never seats two bots of one owner unless
``allow_same_owner``, and leaves out bots already at ``max_share`` x the mean (unless nobody
else could fill the table). Cost: one pass over the pool and one sort, O(n log n) per pick.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arena.ratings.model import ELO_SCALE, RatingsError

__all__ = ["Candidate", "MatchmakingError", "MatchmakingSettings", "Pick", "choose_table"]

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
    #: The share of picks given to that line while it is unresolved.
    top_weight: float = 0.25
    #: Confidence (normal quantile) for "resolved": every bound on one side of the line.
    top_z: float = 2.5
    #: Every active bot keeps at least min_share x the mean number of matches ...
    min_share: float = 0.5
    #: ... and none gets more than max_share x the mean (x max(mean, 1), for the first matches).
    max_share: float = 5.0
    #: Never two bots of one owner at a table unless this is set.
    allow_same_owner: bool = False
    #: Opponents are drawn from this many bots either side of the focal one on the board ...
    neighbours: int = 12
    #: ... plus this many from anywhere on it.
    explore: int = 2

    def __post_init__(self) -> None:
        checks = (
            ("placement_sd", self.placement_sd > 0),
            ("top_n", isinstance(self.top_n, int) and self.top_n >= 1),
            ("top_weight", 0 <= self.top_weight <= 1),
            ("top_z", self.top_z >= 0 and math.isfinite(self.top_z)),
            ("min_share", 0 <= self.min_share <= 1),
            ("max_share", self.max_share >= 1),
            ("neighbours", isinstance(self.neighbours, int) and self.neighbours >= 1),
            ("explore", isinstance(self.explore, int) and self.explore >= 0),
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


def _var(c: Candidate) -> float:
    sd = min(c.sd, UNRATED_SD)
    return sd * sd


def _reduction(var: float, info: float) -> float:
    """How much one comparison with Fisher information ``info`` shrinks a variance ``var``."""
    return var * var * info / (1.0 + var * info)


def _info(a: float, b: float) -> float:
    """Fisher information (Elo^-2) of one comparison between ratings a and b."""
    d = max(-4000.0, min(4000.0, a - b))  # far beyond any board: p is 0 or 1 either way
    p = 1.0 / (1.0 + math.exp(-ELO_SCALE * d))
    return ELO_SCALE * ELO_SCALE * p * (1.0 - p)


def _owners(pool: Sequence[Candidate], idx: Sequence[int]) -> int:
    return len({pool[i].owner_id for i in idx})


def choose_table(
    pool: Sequence[Candidate],
    seats: int,
    rng: random.Random,
    settings: MatchmakingSettings = _DEFAULT,
) -> Pick | None:
    """The next table of ``seats`` bots from ``pool`` (every active bot, busy ones included:
    they count for the board and the shares), or None if no valid table exists. Deterministic
    for a given state of ``rng``."""
    if isinstance(seats, bool) or not isinstance(seats, int) or seats < 2:
        raise MatchmakingError(f"a table has at least 2 seats, not {seats!r}")
    n = len(pool)
    if len({c.bot_id for c in pool}) != n:
        seen: set[int] = set()
        for c in pool:
            if c.bot_id in seen:
                raise MatchmakingError(f"bot {c.bot_id!r} is in the pool twice")
            seen.add(c.bot_id)
    same_ok = settings.allow_same_owner
    avail = [i for i in range(n) if pool[i].free > 0]

    def feasible(idx: Sequence[int]) -> bool:
        return len(idx) >= seats and (same_ok or _owners(pool, idx) >= seats)

    if not feasible(avail):
        return None
    mean = sum(c.matches for c in pool) / n
    limit = settings.max_share * max(mean, 1.0)
    open_ = [i for i in avail if pool[i].matches + 1 <= limit]
    if not feasible(open_):
        open_ = avail
    order = sorted(range(n), key=lambda i: (-pool[i].elo, pool[i].bot_id))
    pos = [0] * n
    for p, i in enumerate(order):
        pos[i] = p

    focal, partner, reason = _focal(pool, open_, order, pos, mean, rng, settings)
    table = [focal] if partner is None else [focal, partner]
    _fill(pool, table, seats, open_, avail, order, pos, rng, settings)
    if reason is None:
        best = max(table[1:], key=lambda j: _confusion(pool[focal], pool[j]))
        reason = f"uncertain pair #{pos[focal] + 1} and #{pos[best] + 1}"
    return Pick(tuple(pool[i].bot_id for i in table), reason)


def _confusion(a: Candidate, b: Candidate) -> float:
    """How likely the board orders a and b wrongly (normal approximation, independence)."""
    spread = math.sqrt(_var(a) + _var(b))
    if spread == 0:
        return 0.0
    return 0.5 * math.erfc(abs(a.elo - b.elo) / spread / math.sqrt(2.0))


def _focal(
    pool: Sequence[Candidate],
    open_: list[int],
    order: list[int],
    pos: list[int],
    mean: float,
    rng: random.Random,
    s: MatchmakingSettings,
) -> tuple[int, int | None, str | None]:
    """The focal bot, maybe its partner, and the reason (None: "uncertain pair", once seated)."""
    floor = s.min_share * mean
    starving = [i for i in open_ if pool[i].matches < floor]
    if starving:
        least = min(pool[i].matches for i in starving)
        focal = rng.choice([i for i in starving if pool[i].matches == least])
        # A newcomer starts below the floor: its matches are its placement.
        return focal, None, "placement" if pool[focal].sd >= s.placement_sd else "minimum share"
    placing = [i for i in open_ if pool[i].sd >= s.placement_sd]
    if placing:
        least = min(pool[i].matches for i in placing)
        return rng.choice([i for i in placing if pool[i].matches == least]), None, "placement"
    if s.top_weight > 0 and len(pool) > s.top_n and rng.random() < s.top_weight:
        pair = _top_pair(pool, open_, pos, s)
        if pair is not None:
            h, low = pair
            why = f"top {s.top_n}: uncertain pair #{pos[h] + 1} and #{pos[low] + 1}"
            return h, low, why
    weights = [_var(pool[i]) for i in open_]
    if sum(weights) <= 0:
        return rng.choice(open_), None, None
    return rng.choices(open_, weights)[0], None, None


def _top_pair(
    pool: Sequence[Candidate], open_: list[int], pos: list[int], s: MatchmakingSettings
) -> tuple[int, int] | None:
    """LUCB's pair for the top-``top_n`` line: the open bot inside with the lowest lower bound
    and the open bot outside with the highest upper bound, if their intervals overlap."""
    inside = [i for i in open_ if pos[i] < s.top_n]
    outside = [i for i in open_ if pos[i] >= s.top_n]
    if not inside or not outside:
        return None
    z = s.top_z
    h = min(inside, key=lambda i: pool[i].elo - z * min(pool[i].sd, UNRATED_SD))
    lcb = pool[h].elo - z * min(pool[h].sd, UNRATED_SD)
    ranked = sorted(outside, key=lambda i: -(pool[i].elo + z * min(pool[i].sd, UNRATED_SD)))
    for low in ranked:
        if pool[low].elo + z * min(pool[low].sd, UNRATED_SD) <= lcb:
            return None  # resolved: every bound outside is below every bound inside
        if s.allow_same_owner or pool[low].owner_id != pool[h].owner_id:
            return h, low
    return None


def _fill(
    pool: Sequence[Candidate],
    table: list[int],
    seats: int,
    open_: list[int],
    avail: list[int],
    order: list[int],
    pos: list[int],
    rng: random.Random,
    s: MatchmakingSettings,
) -> None:
    """Seat the rest: the focal bot's most informative opponents among its neighbours on the
    board and a few from anywhere, then (rarely) anyone who fits."""
    focal = pool[table[0]]
    owners = {pool[i].owner_id for i in table}
    chosen = set(table)
    is_open = set(open_)
    p = pos[table[0]]
    near = [order[q] for q in range(max(0, p - s.neighbours), min(len(order), p + s.neighbours + 1))]
    pool_of = [i for i in near if i in is_open]
    if s.explore:
        pool_of += rng.sample(open_, min(s.explore, len(open_)))
    v = _var(focal)
    scored: list[tuple[float, int]] = []
    for j in dict.fromkeys(pool_of):  # de-duplicated, order kept
        if j in chosen:
            continue
        c = pool[j]
        info = _info(focal.elo, c.elo)
        gain = _reduction(v, info) + _reduction(_var(c), info)
        scored.append((gain * (0.5 + rng.random()), j))  # jitter: vary the opponents
    scored.sort(reverse=True)
    rest = [j for _, j in scored]
    groups: tuple[Callable[[], list[int]], ...] = (
        lambda: rest,
        lambda: _shuffled(open_, rng),  # the fallbacks cost O(n): only built when needed
        lambda: _shuffled(avail, rng),
    )
    for group in groups:
        for j in group():
            if len(table) == seats:
                return
            if j in chosen or (not s.allow_same_owner and pool[j].owner_id in owners):
                continue
            table.append(j)
            chosen.add(j)
            owners.add(pool[j].owner_id)
    if len(table) != seats:  # choose_table checked feasibility first
        raise AssertionError(f"could not fill a table of {seats}")


def _shuffled(idx: list[int], rng: random.Random) -> list[int]:
    out = list(idx)
    rng.shuffle(out)
    return out
