"""The words and number formats every rating display shares (arena/ratings/terms.py)."""

from __future__ import annotations

from arena.ratings import pool, terms
from arena.ratings.model import RatedMatch, fit
from arena.ratings.terms import legend, los_text, rating_text, reason_text


def test_numbers_and_bounds_are_written_one_way() -> None:
    assert rating_text(1523.4, 1501.2, 1546.6) == "1523 [1501, 1547]"
    assert rating_text(1310.0, 1310.0, None) == "\u2265 1310"
    assert rating_text(1911.0, None, 1911.0) == "\u2264 1911"
    assert (los_text(0.9876), los_text(None)) == ("98.8%", "")


def test_the_legend_says_what_1500_the_interval_los_and_provisional_mean() -> None:
    text = " ".join(legend(min_matches=30))
    assert "1500 is the average of the established pool" in text and "at least 30 rated matches" in text
    assert "1500 is the average of the house bots" in text  # the reference, when established
    assert "counting the same once it has 90 matches and has both won and lost 2 points" in text
    assert "95% interval" in text and "LOS" in text and "fewer than 30" in text
    assert "one-sided record" in text


def test_every_reason_the_model_gives_has_words() -> None:
    table = fit([RatedMatch(1, ("A", "B"), (3, -3)), RatedMatch(2, ("A", "C"), (1, 1))])
    reasons = {r.reason for r in table.ratings}
    assert reasons == {"few-matches", "one-sided"}
    assert all(reason_text(r) for r in reasons) and reason_text(None) is None


def test_the_legend_quotes_the_models_own_ramps() -> None:
    assert terms.FULL_AFTER_MATCHES == pool.RAMP_MATCHES
    assert float(terms.FULL_POINTS) == pool.MIN_POINTS + pool.RAMP_POINTS
