"""The fair-play check: does a bot do better in the later seat rotations of a deal than in the
first one it played?

In duplicate every seat order of a deal is dealt the same cards. The arena sends a bot nothing
about a deal its seats did not see until the whole deal is over (arena/play/deal_end.py), but a bot can
still *remember* what it saw itself: in a heads-up deal, the hand it held the first time is
its opponent's the second time. A bot that uses such memory wins more in the rotations it
plays after the first. An honest bot does not: which rotation comes first says nothing about
the cards, so its results in the first-played and the later rotations have the same
expectation when the match's hands give every seat the deal and the first turn equally often
(``hands_per_match`` a multiple of the table size; see docs/arena.md).

Per deal the bot played at least twice (its own matches of the deal, done, faults and all:
leaving faulted deals out let a cheater hide each profitable deal with one illegal reply), the
paired difference is ``mean(later) - first`` in chips per 100 hands, the first being the
earliest started (ties by match id), the later ones those with the same order of bots round
the table that began after the first ended (rotations played at once could each learn from
the other), each score less the house reference bot's in the same seat on the same cards when
the deal has it (arena/play/reference.py: the card luck of holding the other seat's cards, most
of the difference's spread) (:func:`deal_differences`).

The verdict is a **permutation test**, made sequential (issue #38). For an honest bot the
rotations of a deal are exchangeable: given the scores it made in them, each is equally likely
to be the one it played first. So each deal's difference is one of the values it would have
been with each rotation first, and those average exactly zero, whatever the shape of the chips.
(Differences skewed to losses, as a 4-seat deal's first against the mean of three later ones
when chips have rare big wins, took the paired t statistic this check used before to false
alarms of 0.2% to 20%.) Each deal scores ``s`` in [-1, 1]: its difference, clipped at ``SCALE``
times the mean spread of the deals before it (a Huber score: one lucky deal moves the verdict
no more than a usual one), less the mean of the clipped values it could have taken
(:func:`deal_score`; heads-up that is the clipped difference itself). Under an honest bot each
``1 + lambda * s`` has expectation exactly 1, so their products ``M_n`` over the deals,
averaged over the bets ``BETS``, are a martingale; by Ville's inequality it ever reaches
``1 / ALPHA`` with probability at most ALPHA, over every look of its life. A bot is **flagged**
when ``M_n >= 1 / ALPHA`` over at least ``MIN_DEALS`` deals at *any* look of its life, the
deals taken in the order they began (:func:`first_flag`): the event Ville's bound is about, so
a flag once raised stays. The p-value shown is ``min(1, 1 / M_n)``; bench/fairplay_stats.py
measures the false alarms and how soon a bot that remembers a quarter of its deals is flagged.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.store.models import Match, MatchSeat
from arena.store.statuses import MatchStatus

#: Flag a bot when its anytime-valid p-value is below this: its lifetime false alarms.
ALPHA: Final = 0.001
#: Fewer paired deals than this give no verdict.
MIN_DEALS: Final = 20
Z95: Final = 1.959963984540054
#: A deal's difference is clipped at this many times the mean spread of the deals before it.
#: Tighter clips weigh signs over sizes: a bot remembering a quarter of its deals is flagged
#: within 200 deals in 96% of lives at 1, 92% at 2, 17% at 4 (bench/fairplay_stats.py
#: --candidates), and the served evader of tests/arena/ratings/test_fairplay_policy.py within
#: 40 deals at 1, not at 2; but a world whose differences average zero with a positive median
#: (200 real honest deals resampled) is flagged in 1.8% of lives at 1, 0.25% at 2.
SCALE: Final = 1.0
#: The martingale's bets (the lambdas it averages over), each keeping ``1 + lambda * s`` above
#: zero: a memory cheat wins most deals it uses memory in, so the bets are bold.
BETS: Final = (0.2, 0.35, 0.5, 0.65, 0.8)


@dataclass(frozen=True, slots=True)
class PairedDeal:
    """A deal the bot played at least twice: its score in the first rotation and in each later
    one, chips per 100 hands (net of the reference when the deal has one)."""

    first: float
    later: tuple[float, ...]

    @property
    def difference(self) -> float:
        return statistics.fmean(self.later) - self.first

    def permuted(self) -> list[float]:
        """The differences had each rotation been the first (this deal's own is the first):
        under an honest bot each is equally likely, and they average zero."""
        values = [self.first, *self.later]
        m, total = len(self.later), math.fsum(values)
        return [(total - x) / m - x for x in values]


def heads_up(differences: Sequence[float]) -> list[PairedDeal]:
    """Heads-up deals with these differences (first 0, one later rotation): the values a
    difference could have taken are it and its negative."""
    return [PairedDeal(0.0, (float(d),)) for d in differences]


@dataclass(frozen=True, slots=True)
class FairPlayCheck:
    deals: int  # paired deals used
    mean: float | None  # mean(later - first), chips per 100 hands
    low: float | None  # its 95% interval
    high: float | None
    better_later: int  # deals with a positive difference
    worse_later: int  # deals with a negative one
    t: float | None
    p_value: float | None  # anytime-valid, one-sided (later better than first)
    flagged: bool
    p_single_look: float | None = None  # the t-test's, valid only if looked at once
    faulted: int = 0  # paired deals in which the bot faulted (they count, faults and all)
    overlapped: int = 0  # deals not paired: their rotations were played at once
    referenced: int = 0  # paired deals net of the reference bot's scores on the same cards
    flagged_at: int | None = None  # the deals at the first look that flagged it

    def to_json(self) -> dict[str, Any]:
        def rounded(value: float | None, digits: int) -> float | None:
            return None if value is None else round(value, digits)

        return {
            "deals": self.deals,
            "mean_difference_per_100_hands": rounded(self.mean, 2),
            "interval_95": [rounded(self.low, 2), rounded(self.high, 2)],
            "better_later": self.better_later,
            "worse_later": self.worse_later,
            "t": rounded(self.t, 3),
            "p_value": None if self.p_value is None else float(f"{self.p_value:.3g}"),
            "p_single_look": None if self.p_single_look is None else float(f"{self.p_single_look:.3g}"),
            "threshold": ALPHA,
            "sequential": True,
            "min_deals": MIN_DEALS,
            "flagged": self.flagged,
            "faulted_deals": self.faulted,
            "overlapped_deals": self.overlapped,
            "referenced_deals": self.referenced,
            "flagged_at_deals": self.flagged_at,
        }


def paired_check(deals: Sequence[PairedDeal]) -> FairPlayCheck:
    """The check at this look: the permutation martingale's p-value and verdict, with the
    differences' mean, 95% interval and paired t-test (one-sided, one look) to show."""
    differences = [deal.difference for deal in deals]
    n = len(differences)
    better = sum(d > 0 for d in differences)
    worse = sum(d < 0 for d in differences)
    if n < 2:
        mean = differences[0] if n else None
        return FairPlayCheck(n, mean, None, None, better, worse, None, None, False)
    mean = statistics.fmean(differences)
    sd = statistics.stdev(differences)
    half = Z95 * sd / math.sqrt(n)
    if sd == 0:
        t = math.inf if mean > 0 else -math.inf if mean < 0 else 0.0
        single = 0.0 if mean > 0 else 1.0 if mean < 0 else 0.5
    else:
        t = mean / (sd / math.sqrt(n))
        single = t_upper_tail(t, n - 1)
    log_m = log_wealth(deals)[-1]
    p = 1.0 if log_m <= 0 else math.exp(-log_m)
    flagged = n >= MIN_DEALS and log_m >= math.log(1 / ALPHA)  # as first_flag compares
    return FairPlayCheck(n, mean, mean - half, mean + half, better, worse, t, p, flagged, single)


def deal_score(deal: PairedDeal, scale: float) -> float:
    """The deal's score in [-1, 1]: its difference clipped at ``scale`` (a function of the
    deals before it and of this deal's values, never of which rotation came first), less the
    mean of the clipped values it could have taken; expectation exactly 0 for an honest bot."""
    values = deal.permuted()
    if scale <= 0 or spread(deal) == 0:
        return 0.0
    clipped = [max(-1.0, min(1.0, value / scale)) for value in values]
    m = len(deal.later)
    # (m + 1) / (2 m): the widest the difference can be from the mean, brought to 1.
    return (clipped[0] - math.fsum(clipped) / (m + 1)) * (m + 1) / (2 * m)


def spread(deal: PairedDeal) -> float:
    """The mean size of the values the deal's difference could have taken: 0 when they are all
    rounding noise (every rotation the same score, as the bot's level shifted them)."""
    size = statistics.fmean(abs(value) for value in deal.permuted())
    return size if size > 1e-9 * max(abs(deal.first), *map(abs, deal.later)) else 0.0


def scores(deals: Sequence[PairedDeal]) -> list[float]:
    """Each deal's :func:`deal_score`, clipped at ``SCALE`` times the mean spread of the deals
    with any spread before it (its own spread for the first such deal)."""
    out = []
    total = 0.0
    count = 0
    for deal in deals:
        own = spread(deal)
        out.append(deal_score(deal, SCALE * total / count if count else own))
        if own > 0:
            total += own
            count += 1
    return out


def log_wealth(deals: Sequence[PairedDeal]) -> list[float]:
    """``log M_n`` after each deal: the log of the mean over ``BETS`` of the products of
    ``1 + bet * s`` (``M_0 = 1``)."""
    logs = [0.0] * len(BETS)
    out = []
    for score in scores(deals):
        logs = [log + math.log1p(bet * score) for log, bet in zip(logs, BETS, strict=True)]
        top = max(logs)
        out.append(top + math.log(math.fsum(math.exp(log - top) for log in logs) / len(BETS)))
    return out


@dataclass(frozen=True, slots=True)
class Differences:
    values: list[float]  # per paired deal, mean(later) - first, chips per 100 hands
    deals: list[PairedDeal] = dataclasses.field(default_factory=list)  # the same deals' rotations
    faulted: int = 0  # of those, deals in which the bot faulted (counted as played)
    overlapped: int = 0  # deals left unpaired: every later rotation began before the first ended
    referenced: int = 0  # paired deals compared net of the reference bot's scores


def bot_differences(session: Session, bot_id: int, tournament_id: int | None = None) -> list[float]:
    """Per duplicate deal the bot played twice or more, ``mean(later) - first`` (chips per 100
    hands): :func:`deal_differences`' values."""
    return deal_differences(session, bot_id, tournament_id).values


def deal_differences(session: Session, bot_id: int, tournament_id: int | None = None) -> Differences:
    """Per duplicate deal the bot played twice or more, ``mean(later) - first`` (chips per 100
    hands), over its done matches.

    Only comparable matches are paired: the later ones that seat the bots in the same order
    round the table as the first (up to where the table starts: the same neighbours on each
    side), and only when the match's hands are a multiple of the table size (every seat deals
    and leads equally often). Otherwise a seat or neighbour advantage, not memory, could make
    later rotations differ. A later rotation is one that *started after the first ended*:
    rotations played at once could each learn from the other hand by hand, and both would
    gain (the driver plays a deal one rotation at a time when a seat's memory is not the
    arena's: arena/runtime/scheduling.py).

    A deal in which the bot faulted counts as played, with the chips the faults cost it where
    they fell: leaving such deals out let a bot remove each deal its memory profited from with
    one illegal reply (issue #29). A fault can only lower the rotation it falls in, so an
    honest bot that faults in a first rotation (slow to start) gains one large difference,
    which counts as one deal's score, clipped like any other (:func:`deal_score`)."""
    mine = select(MatchSeat.match_id).where(MatchSeat.bot_id == bot_id)
    query = (
        select(Match.tournament_id, Match.seed, Match.id, Match.started_at, Match.finished_at, Match.hands,
               MatchSeat.score, MatchSeat.faults, MatchSeat.reference_score)
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .where(MatchSeat.bot_id == bot_id, Match.status == MatchStatus.DONE)
    )  # fmt: skip
    seating_query = select(MatchSeat.match_id, MatchSeat.seat, MatchSeat.bot_id).where(
        MatchSeat.match_id.in_(mine)
    )
    if tournament_id is not None:
        query = query.where(Match.tournament_id == tournament_id)
        seating_query = seating_query.join(Match, Match.id == MatchSeat.match_id).where(
            Match.tournament_id == tournament_id
        )
    seatings: dict[int, list[tuple[int, int]]] = {}
    for match_id, seat, seated in session.execute(seating_query):
        seatings.setdefault(match_id, []).append((seat, seated))
    deals: dict[tuple[int, int], list[_Played]] = {}
    for tid, seed, match_id, started, finished, hands, score, faults, reference in session.execute(query):
        row = _Played(started, finished, match_id, int(score or 0), int(hands or 0), bool(faults), reference)
        deals.setdefault((tid, seed), []).append(row)
    out: list[tuple[Any, int, PairedDeal]] = []  # in the order the deals began: the check's looks
    faulted = overlapped = referenced = 0
    for played in deals.values():
        if len(played) < 2:
            continue
        played.sort(key=lambda row: (row.started is None, row.started or 0, row.match_id))
        first = played[0]
        order = _cycle(seatings.get(first.match_id, []))
        if first.hands <= 0 or not order or first.hands % len(order):
            continue
        comparable = [row for row in played[1:] if _cycle(seatings.get(row.match_id, [])) == order]
        later = [
            row for row in comparable
            if first.finished is not None and row.started is not None and row.started >= first.finished
        ]  # fmt: skip
        if not later:
            overlapped += bool(comparable)
            continue
        # Less the reference bot's score in the same seats on the same cards (arena/play/reference.py)
        # when the deal has one: the card luck of holding another seat's cards later.
        pairs = [first, *later]
        control = all(row.reference is not None for row in pairs)
        gains = [row.score - ((row.reference or 0) if control else 0) for row in pairs]
        per_100 = [100 * gain / first.hands for gain in gains]
        referenced += control
        out.append((first.started, first.match_id, PairedDeal(per_100[0], tuple(per_100[1:]))))
        faulted += first.faulted or any(row.faulted for row in later)
    out.sort(key=lambda row: (row[0] is None, row[0] or 0, row[1]))
    paired = [deal for _, _, deal in out]
    return Differences([deal.difference for deal in paired], paired, faulted, overlapped, referenced)


@dataclass(frozen=True, slots=True)
class _Played:
    started: Any
    finished: Any
    match_id: int
    score: int
    hands: int
    faulted: bool
    reference: int | None  # the reference bot's score in this seat (match_seats.reference_score)


def _cycle(seating: list[tuple[int, int]]) -> tuple[int, ...]:
    """The bots round the table in seat order, starting from the lowest bot id."""
    bots = [bot for _, bot in sorted(seating)]
    if not bots:
        return ()
    start = bots.index(min(bots))
    return tuple(bots[start:] + bots[:start])


def fair_play_check(session: Session, bot_id: int, tournament_id: int | None = None) -> FairPlayCheck:
    found = deal_differences(session, bot_id, tournament_id)
    check = paired_check(found.deals)
    at = first_flag(found.deals)
    return dataclasses.replace(
        check, flagged=at is not None, flagged_at=at, faulted=found.faulted, overlapped=found.overlapped,
        referenced=found.referenced,
    )  # fmt: skip


def first_flag(deals: Sequence[PairedDeal]) -> int | None:
    """The first number of deals (``MIN_DEALS`` or more) at which the check of the first that
    many ``deals`` flagged the bot, or None: every look of its life, in one pass."""
    bar = math.log(1 / ALPHA)
    for n, log_m in enumerate(log_wealth(deals), 1):
        if n >= MIN_DEALS and log_m >= bar:
            return n
    return None


# -- Student's t ------------------------------------------------------------------------------


def t_upper_tail(t: float, df: int) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (no SciPy in the arena)."""
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * _betainc(df / 2, 0.5, df / (df + t * t))
    return tail if t > 0 else 1 - tail


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) (continued fraction, Lentz)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast only on this side
        return 1 - _betainc(b, a, 1 - x)
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1) < 1e-14:
            break
    return front * f / a
