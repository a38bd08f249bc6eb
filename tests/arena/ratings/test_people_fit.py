"""The people's fit (arena/ratings/people.py): each person fitted alone against bots whose
ratings are held fixed, so a person's number is on the bots' scale. Checked against the
closed form of one opponent, and for what it must never do: move with other people, count
bots it has no rating for, or give a one-sided record a number."""

from __future__ import annotations

import math

import pytest

from arena.ratings.model import OptionError, RatedMatch, fit
from arena.ratings.people import fit_people


def heads_up(
    first_id: int, person: str, bot: str, wins: int, losses: int, draws: int = 0
) -> list[RatedMatch]:
    out = []
    for k, (mine, theirs) in enumerate([(5, -5)] * wins + [(-5, 5)] * losses + [(0, 0)] * draws):
        out.append(RatedMatch(first_id + k, (person, bot), (mine, theirs), (first_id + k, 1)))
    return out


def test_against_one_bot_the_rating_is_the_closed_form_on_the_bots_scale() -> None:
    # Against one opponent held at R, the maximum likelihood is R + 400 log10(points / lost).
    for rating, wins, losses in [(1500.0, 7, 3), (1712.5, 2, 8), (1320.0, 5, 5)]:
        table = fit_people(heads_up(1, "ann", "7", wins, losses), {"7": rating}, {"ann"})
        (ann,) = table.ratings
        assert ann.elo == pytest.approx(rating + 400 * math.log10(wins / losses), abs=1e-6)
        assert ann.low is not None and ann.high is not None and ann.low < ann.elo < ann.high
        assert ann.basis == "fitted" and ann.matches == wins + losses
        assert table.scores["ann"] == (wins, wins + losses)


def test_draws_count_half_and_a_three_seat_table_weighs_each_bot_half() -> None:
    # 2 wins, 2 losses, 2 draws: even, so the person sits at the bot's rating.
    even = fit_people(heads_up(1, "ann", "7", 2, 2, draws=2), {"7": 1600.0}, {"ann"})
    assert even.ratings[0].elo == pytest.approx(1600.0, abs=1e-6)
    # At three seats against two bots of one rating, ahead of both in 3 of 4: weight 1/2 each.
    matches = [RatedMatch(k, ("ann", "7", "8"), (s, 0, -s), (k, 0)) for k, s in enumerate([3, 3, 3, -9])]
    matches[-1] = RatedMatch(3, ("ann", "7", "8"), (-9, 4, 5), (3, 0))
    table = fit_people(matches, {"7": 1500.0, "8": 1500.0}, {"ann"})
    assert table.scores["ann"] == (3.0, 4.0)  # 8 comparisons of weight 1/2, 6 won
    assert table.ratings[0].elo == pytest.approx(1500 + 400 * math.log10(3), abs=1e-6)


def test_people_do_not_move_each_other_and_unrated_bots_do_not_count() -> None:
    ann = heads_up(1, "ann", "7", 6, 4)
    alone = fit_people(ann, {"7": 1500.0}, {"ann"}).ratings[0]
    # "9" has no rating on the bots' board.
    bob = heads_up(100, "bob", "7", 1, 9) + heads_up(200, "bob", "9", 10, 0)
    together = fit_people(ann + bob, {"7": 1500.0}, {"ann", "bob"})
    assert together.ratings[0] == alone  # bit for bit
    assert [r.bot for r in together.ratings] == ["ann", "bob"]
    assert together.ratings[1].matches == 10  # the 10 matches against "9" are not in the fit
    assert together.los[0] is not None and 0.5 < together.los[0] < 1.0
    # A person who met only bots with no rating is unrated, not on the board's ranks.
    only = fit_people(heads_up(300, "cy", "9", 3, 3), {"7": 1500.0}, {"cy"})
    assert only.ratings == [] and only.unrated == ["cy"]


def test_a_one_sided_record_is_a_bound_ranked_after_every_estimate() -> None:
    ann = heads_up(1, "ann", "7", 5, 5)
    sweep = heads_up(100, "bob", "7", 6, 0)
    none = heads_up(200, "cy", "7", 0, 4)
    table = fit_people(ann + sweep + none, {"7": 1500.0}, {"ann", "bob", "cy"})
    assert [r.bot for r in table.ratings] == ["ann", "bob", "cy"]
    bob, cy = table.ratings[1], table.ratings[2]
    assert bob.basis == cy.basis == "one-sided" and bob.provisional and bob.reason == "one-sided"
    assert bob.high is None and bob.low == bob.elo and bob.elo > 1500  # "at least"
    assert cy.low is None and cy.high == cy.elo  # "at most"
    assert table.los == [None, None]  # next to a bound
    # The bounds are the model's: the ratings at which 6 straight wins, or 4 straight
    # losses, have probability 5%.
    p = 1 / (1 + 10 ** ((1500 - bob.elo) / 400))
    assert p**6 == pytest.approx(0.05, rel=1e-6)
    q = 1 / (1 + 10 ** ((cy.elo - 1500) / 400))
    assert q**4 == pytest.approx(0.05, rel=1e-6)


def test_the_interval_is_the_bots_models_and_never_narrower_than_its_information() -> None:
    # A person and an outsider bot with the same record against the same fixed pool: the bots'
    # model (which fits an outsider against its pool held fixed) gives the same estimate.
    pool = [RatedMatch(1000 + k, ("a", "b"), (1, -1) if k % 3 else (-1, 1), (1000 + k, 0)) for k in range(60)]
    board = fit(pool, min_matches=1)
    fixed = {r.bot: r.elo for r in board.ratings}
    mine = [
        RatedMatch(k, ("p", "a" if k % 2 else "b"), (1, -1) if k % 5 else (-1, 1), (k, 0)) for k in range(40)
    ]
    ours = fit_people(mine, fixed, {"p"}).ratings[0]
    theirs = next(r for r in fit(pool + mine, min_matches=50).ratings if r.bot == "p")
    assert theirs.basis == "fitted"  # outside the pool (fewer than 50 matches), fitted against it
    assert ours.elo == pytest.approx(theirs.elo, abs=1e-6)
    # A single match cannot say how sure it is: the interval falls back on the information.
    (one,) = fit_people([RatedMatch(1, ("p", "a", "b"), (0, 5, -5), (1, 0))], fixed, {"p"}).ratings
    assert one.low is not None and one.high is not None and one.high - one.low > 400
    assert one.provisional and one.reason == "few-matches"


def test_bad_options_are_refused() -> None:
    with pytest.raises(OptionError, match="level"):
        fit_people([], {}, set(), level=1.0)
    with pytest.raises(OptionError, match="min_matches"):
        fit_people([], {}, set(), min_matches=-1)
