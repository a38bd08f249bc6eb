"""The established pool, and the scale's zero: which bots the rating is anchored on, and how
much each of them counts in the anchor (arena/ratings/model.py, "The established pool").

:func:`find_pool` picks the pool from who scored against whom (a graph question, no fit
involved): the largest strongly connected group of bots with ``min_matches`` matches, the
only groups whose maximum-likelihood fit is finite without a prior. :func:`shares` weighs the
members in the zero from each one's own record (:func:`centre_weights`), never from the fit,
so the weights cannot jump when someone else's results change.
"""

from __future__ import annotations

import numpy as np

from arena.ratings.data import BoolArray, FloatArray, IntArray, RatingData

#: Matches past ``min_matches`` over which a pool member's share of the zero grows to full.
RAMP_MATCHES = 60
#: Points (comparisons won, pairs weighted 1/(seats - 1)) a member must have both scored and
#: conceded before it counts in the zero at all, and the points over which it grows to full.
MIN_POINTS, RAMP_POINTS = 0.5, 1.5


def find_pool(data: RatingData, min_matches: int) -> BoolArray:
    """The established pool over bot codes: the largest two-sided group of bots with at least
    ``min_matches`` matches; failing two such bots, the largest two-sided group of any bots
    (or the bot with the most matches alone)."""
    k = data.k
    points, weights = data.points[:k, :k], data.weights[:k, :k]
    scored = points > 0  # draws count both ways: points are half the weight then
    matches = data.matches[:k]
    pool = _largest_two_sided(scored, matches >= min_matches, matches, data.names)
    if pool.sum() < 2:
        pool = _largest_two_sided(scored, weights.sum(axis=1) > 0, matches, data.names)
    return pool


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


def shares(
    data: RatingData, pool: BoolArray, min_matches: int, reference: BoolArray | None = None
) -> FloatArray:
    """The pool members' shares of the scale's zero, in code order, from their records
    against everyone they met: the *reference* members of the pool only (``reference`` over
    bot codes: the house bots) if any is in it, else every member (:func:`centre_weights`).

    A fixed reference is what rating lists anchor on (a fixed engine): no other bot's games
    and no other bot's versions are in the zero, so none of them can drag it (issue #38: a
    hopeless bot's 2nd-5th draws moved every established bot by 23 Elo, four versions of one
    bot moved everyone else by -56). Among the reference the ramps still apply, so that a
    house bot crossing into the pool enters the zero gradually."""
    members = np.flatnonzero(pool)
    scored = data.scored[members]
    conceded = data.played[members] - scored
    matches = data.matches[members]
    ref = None if reference is None else reference[members]
    if ref is None or not ref.any():
        return centre_weights(scored, conceded, matches, min_matches)
    share = ramp(scored, conceded, matches, min_matches) * ref
    if share.sum() <= 0:  # no reference member counts yet: their plain mean
        share = ref.astype(np.float64)
    out: FloatArray = share / share.sum()
    return out


def ramp(scored: FloatArray, conceded: FloatArray, matches: IntArray, min_matches: int) -> FloatArray:
    """Each member's unnormalised share (:func:`centre_weights`): 0 to 1 by matches past
    ``min_matches`` times 0 to 1 by points both scored and conceded."""
    by_matches = np.clip((matches - min_matches) / RAMP_MATCHES, 0.0, 1.0)
    by_points = np.clip((np.minimum(scored, conceded) - MIN_POINTS) / RAMP_POINTS, 0.0, 1.0)
    out: FloatArray = by_matches * by_points
    return out


def centre_weights(
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
    share = ramp(scored, conceded, matches, min_matches)
    total = float(share.sum())
    if total <= 0:  # nobody has started counting (a young arena): the plain mean
        return np.full(len(matches), 1.0 / len(matches))
    out: FloatArray = share / total
    return out
