"""What the rating numbers mean, in one place: the leaderboard and bot pages, the API, the
``tonk leaderboard``/``tonk tournament status`` output and ``tonk demo`` all say it with
these words and format numbers with these functions (arena/ratings/model.py is the model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy stays unimported for commands that only print words
    from arena.ratings.model import Rating

#: The scale: what 1500 is.
SCALE = (
    "Elo scale: 1500 is the average of the house bots (the arena's own bots): fixed reference "
    "players, as a rating list anchors on a fixed engine, so no other bot's games or versions "
    "move the scale. Where no house bot is established, 1500 is the average of the established "
    "pool (the bots with at least {min_matches} rated matches and a two-sided record: points won "
    "and lost among themselves). A bot in either average counts in part at first, every member "
    "counting the same once it has {full_matches} matches and has both won and lost "
    "{full_points} points, so a bot joining it barely moves anyone else; "
    "a bot 200 points above another finishes ahead of it about 76% of the time."
)
#: The interval.
INTERVAL = (
    "The range is a 95% interval: the rating is inside it 19 times out of 20. A one-sided "
    "record gets a bound instead: \u2265 for a bot that beat everyone it met, \u2264 for one that "
    "beat nobody."
)
#: LOS.
LOS = "LOS: the chance that a bot is really stronger than the next one down the table."
#: Why a bot is provisional, by Rating.reason.
REASONS: dict[str, str] = {
    "few-matches": "few matches (fewer than {min_matches})",
    "one-sided": "one-sided record (won or lost every comparison): a bound, not a rating",
    "wide-interval": "its interval is wider than the fit's width bar",  # only if a caller asks
}
#: ``?`` means not rated yet; how sure a rating is, its interval says (arena/ratings/model.py).
PROVISIONAL = (
    "Provisional (marked ?): not enough play for a rating yet: "
    + "; ".join(v for k, v in REASONS.items() if k != "wide-interval")
    + ". Every other bot has a rating; its interval says how sure it is."
)
#: What the pairwise matrix shows.
PAIRWISE = (
    "Pairwise score: the share of comparisons a bot won against another (ahead 1, level \u00bd, "
    "behind 0 by final match score), each pair of a match weighted 1/(seats - 1) as the rating "
    "model weighs it."
)

#: The rating model's pool entry bar (arena.ratings.model.fit's default), for the texts above.
MIN_MATCHES = 20
#: Matches past the entry bar, and points won and lost, at which a pool member counts in full
#: in the scale's zero (arena.ratings.pool.RAMP_MATCHES, MIN_POINTS + RAMP_POINTS).
FULL_AFTER_MATCHES, FULL_POINTS = 60, "2"


def legend(min_matches: int = MIN_MATCHES) -> list[str]:
    """The lines that explain a rating table, in order."""
    return [
        SCALE.format(
            min_matches=min_matches, full_matches=min_matches + FULL_AFTER_MATCHES, full_points=FULL_POINTS
        ),
        INTERVAL,
        LOS,
        PROVISIONAL.format(min_matches=min_matches),
    ]


def reason_text(reason: str | None, min_matches: int = MIN_MATCHES) -> str | None:
    """Why a bot is provisional, in words (None when it is not)."""
    return None if reason is None else REASONS.get(reason, reason).format(min_matches=min_matches)


def rating_text(elo: float, low: float | None, high: float | None) -> str:
    """``1523 [1501, 1546]``, or a bound: ``\u2265 1310`` / ``\u2264 1911``."""
    if low is None and high is not None:
        return f"\u2264 {high:.0f}"
    if high is None and low is not None:
        return f"\u2265 {low:.0f}"
    if low is None or high is None:
        return f"{elo:.0f}"
    return f"{elo:.0f} [{low:.0f}, {high:.0f}]"


def los_text(los: float | None) -> str:
    """LOS as a percentage (blank next to a bound)."""
    return "" if los is None else f"{100 * los:.1f}%"


def describe(rating: Rating) -> str:
    """One line for a bot: its rating and, if provisional, why."""
    why = reason_text(rating.reason)
    return rating_text(rating.elo, rating.low, rating.high) + (f" (provisional: {why})" if why else "")
