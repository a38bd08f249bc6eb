"""The people's board (issue #39): people rated by their matches against bots, on the bots' scale.

A person sits as a bot row of their own (``bots.person``) in matches of kind ``people``: a
person and one or two bots. Those matches are unrated on the bots' board
(arena.store.statuses.UNRATED_KINDS), so no bot's rating ever moves by them; they are rated
here instead, with the same model (arena/ratings/model.py: Bradley-Terry on the Elo scale,
pairwise comparisons by final match score weighted ``1/(seats - 1)``, clustered intervals with
Student's t, one-sided bounds, the same provisional rules) and one difference: every bot's
rating is *held fixed* at its bots' board value (the rating of the version that played, from
:func:`arena.ratings.leaderboard.current_leaderboard`), and each person is fitted alone against
them, as the bots' model fits a bot outside its pool against the pool held fixed. So:

- a person's number is on the bots' scale (1500 is the house bots' average there): "1600"
  means what it means on the leaderboard, and a person and a bot can be read side by side;
- people cannot move each other, nor the bots, nor the scale;
- only comparisons of a person with a bot version that has a finite rating on the bots' board
  count (a version with no rating, or only a one-sided bound, has no number to hold fixed;
  those matches are still in the person's and the bot's records, not in the fit); the
  comparison of two bots at a 3-seat table, and of two people, are not used.

The interval is the person's own uncertainty given the bots' ratings (theirs is not added:
a bot's rating rests on its many bot matches, a person's on a few), a sandwich clustered by
deal (each people match is dealt from a fresh seed: a deal of its own) with the small-sample
factor ``G/(G-1)`` over the person's ``G`` deals and Student's t on ``G - 1`` degrees of
freedom; never narrower than the model's own (inverse-information) interval, since with one
or two deals the sandwich is degenerate (a single match's residuals sum to zero at the
estimate). LOS between neighbours is the normal approximation of their difference: people
are fitted apart, so their estimates are independent given the bots.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from arena.ratings import intervals
from arena.ratings.data import sigmoid
from arena.ratings.model import ELO_SCALE, RatedMatch, Rating, options, provisional_reason
from arena.ratings.solve import fit_outsiders

__all__ = ["PeopleTable", "fit_people"]


@dataclass(frozen=True)
class PeopleTable:
    """A people's fit: ``ratings`` best first (estimates, then one-sided bounds), ``los[i]``
    of ``ratings[i]`` over ``ratings[i + 1]`` (None next to a bound), ``unrated`` the people
    with no comparison against a bot with a rating, ``scores[person]`` their weighted points
    and comparisons against rated bots (``points / weight``: the share they won)."""

    ratings: list[Rating] = field(default_factory=list)
    los: list[float | None] = field(default_factory=list)
    unrated: list[str] = field(default_factory=list)
    scores: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass
class _Pairs:
    """One person's comparisons with rated bots: the bot's rating (natural units), the
    weight, the result (1, 1/2, 0 for the person) and the deal each came from."""

    opponent: list[float] = field(default_factory=list)
    weight: list[float] = field(default_factory=list)
    result: list[float] = field(default_factory=list)
    deal: list[Hashable] = field(default_factory=list)
    matches: int = 0


def fit_people(
    matches: Iterable[RatedMatch],
    fixed: Mapping[str, float],
    people: Collection[str],
    *,
    anchor: float = 1500.0,
    level: float = 0.95,
    min_matches: int = 20,
) -> PeopleTable:
    """Every person of ``people`` seated in ``matches``, fitted against the bots' ratings in
    ``fixed`` (rating id -> Elo), held fixed. ``anchor`` is only the origin of the natural
    units (the result does not depend on it); ``level`` and ``min_matches`` as in
    :func:`arena.ratings.model.fit`. Raises OptionError for an option out of range."""
    opts = options(anchor, level, min_matches, None)
    anchor, level = opts.anchor, opts.level
    who = set(people)
    pairs: dict[str, _Pairs] = {}
    for match in matches:
        n = len(match.bots)
        deal: Hashable = match.deal if match.deal is not None else ("match", match.match_id)
        for seat, person in enumerate(match.bots):
            if person not in who:
                continue
            mine = pairs.setdefault(person, _Pairs())
            counted = False
            for other, bot in enumerate(match.bots):
                if other == seat or bot in who or bot not in fixed:
                    continue
                a, b = match.scores[seat], match.scores[other]
                mine.opponent.append(ELO_SCALE * (float(fixed[bot]) - anchor))
                mine.weight.append(1.0 / (n - 1))
                mine.result.append(1.0 if a > b else 0.5 if a == b else 0.0)
                mine.deal.append(deal)
                counted = True
            mine.matches += counted
    t_level = 0.5 + level / 2
    estimates: list[tuple[str, float, float, int]] = []  # person, x, sd, matches
    bounds: list[Rating] = []
    scores: dict[str, tuple[float, float]] = {}
    unrated = sorted(p for p in who if p not in pairs or not pairs[p].weight)
    for person, mine in pairs.items():
        if not mine.weight:
            continue
        r, w, s = np.array(mine.opponent), np.array(mine.weight), np.array(mine.result)
        points, played = float(w @ s), float(w.sum())
        scores[person] = (points, played)
        if points <= 0.0 or points >= played:  # one-sided: a bound, not an estimate
            won = points >= played
            bound = anchor + intervals.one_sided_bound(w, r, won, 1.0 - level) / ELO_SCALE
            low, high = (bound, None) if won else (None, bound)
            why = provisional_reason("one-sided", mine.matches, low, high, opts)
            bounds.append(Rating(person, bound, low, high, mine.matches, True, "one-sided", why))
            continue
        # Alone against the bots held fixed, as the bots' model fits a bot outside its pool
        # (one row each: a person's estimate never depends on who else is fitted).
        x = float(fit_outsiders((w * s)[None, :], w[None, :], r)[0])
        estimates.append((person, x, _sd(x, r, w, s, mine.deal), mine.matches))
    estimates.sort(key=lambda e: (-round(anchor + e[1] / ELO_SCALE, 6), e[0]))
    bounds.sort(key=lambda b: (-round(b.elo, 6), b.bot))
    ratings: list[Rating] = []
    spreads: list[float | None] = []
    for person, x, sd, played_matches in estimates:
        elo = anchor + x / ELO_SCALE
        clusters = len(set(pairs[person].deal))
        half = float(intervals.t_quantile(t_level, np.array([clusters - 1.0]))[0]) * sd
        reason = provisional_reason("fitted", played_matches, elo - half, elo + half, opts)
        ratings.append(
            Rating(person, elo, elo - half, elo + half, played_matches, reason is not None, "fitted", reason)
        )
        spreads.append(sd)
    ratings.extend(bounds)
    spreads.extend([None] * len(bounds))
    return PeopleTable(ratings, _los(ratings, spreads), unrated, scores)


def _sd(x: float, r: np.ndarray, w: np.ndarray, s: np.ndarray, deals: list[Hashable]) -> float:
    """The standard error in Elo: the deal-clustered sandwich, never below the model's own."""
    p = sigmoid(x - r)
    info = float(w @ (p * (1.0 - p)))
    residual = w * (s - p)
    by_deal: dict[Hashable, float] = {}
    for deal, u in zip(deals, residual.tolist(), strict=True):
        by_deal[deal] = by_deal.get(deal, 0.0) + u
    g = len(by_deal)
    meat = sum(u * u for u in by_deal.values()) * (g / (g - 1) if g > 1 else 1.0)
    variance = max(meat / info**2, 1.0 / info)
    return math.sqrt(variance) / ELO_SCALE


def _los(ratings: list[Rating], spreads: list[float | None]) -> list[float | None]:
    out: list[float | None] = []
    normal = NormalDist()
    for i in range(len(ratings) - 1):
        a, b = spreads[i], spreads[i + 1]
        if a is None or b is None:
            out.append(None)
            continue
        spread = math.hypot(a, b)
        diff = ratings[i].elo - ratings[i + 1].elo
        out.append(normal.cdf(diff / spread) if spread > 0 else 0.5 if diff == 0 else 1.0)
    return out
