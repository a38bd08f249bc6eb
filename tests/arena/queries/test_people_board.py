"""The people's board on the real store (issue #39, PostgreSQL): people rated against the
bots' ratings held fixed (arena/ratings/people.py), each bot's record against people, a
person's own games, and the bots' board not moved by a single people match."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from helpers.people import Store, build_bots, people_match, sit_people

from arena.queries import Paging
from arena.queries.leaderboard import leaderboard
from arena.queries.people import against_people, games_as_player, people_page, people_rows
from arena.queries.people import people_board as cached_people_board
from arena.ratings import leaderboard as ratings
from arena.store.db import session_scope


@pytest.fixture
def store(pg_url: str) -> Store:
    built = build_bots(pg_url)
    sit_people(pg_url, built)
    ratings.reset()
    return built


def bot_board(url: str) -> ratings.Leaderboard:
    with session_scope(url) as session:
        return ratings.current_leaderboard(session)


def board_rows(url: str) -> list[dict[str, Any]]:
    with session_scope(url) as session:
        return people_rows(cached_people_board(session, url))


def test_people_are_fitted_against_the_bots_ratings_held_fixed(pg_url: str, store: Store) -> None:
    bots = bot_board(pg_url)
    greedy = bots.versions[store.versions["greedy"]]
    assert greedy.basis == "pool"
    rows = {r["person"]: r for r in board_rows(pg_url)}
    assert set(rows) == {"ann", "bob", "cy", "dee"}

    # The anchor: ann met greedy alone, 7-3, so she is greedy's board rating + 400 log10(7/3).
    ann = rows["ann"]
    assert ann["rating"]["elo"] == pytest.approx(greedy.elo + 400 * math.log10(7 / 3), abs=0.051)
    assert ann["rating"]["basis"] == "fitted" and ann["rating"]["provisional"]  # 10 < 20 matches
    assert ann["rating"]["low"] < ann["rating"]["elo"] < ann["rating"]["high"]
    assert (ann["matches"], ann["wins"], ann["draws"], ann["losses"]) == (10, 7, 0, 3)  # not the running one
    assert ann["hands"] == 100 and ann["chips_per_100"] == round(100 * (7 * 12 - 3 * 12) / 100, 2)
    assert ann["score"] == 0.7

    bob = rows["bob"]
    assert bob["rating"]["basis"] == "fitted" and bob["matches"] == 12
    assert (bob["wins"], bob["draws"], bob["losses"]) == (5, 0, 7)
    # 4 of 10 against search, then at three seats (weight 1/2 a bot): 2 of 2, 1/2 of 2.
    assert bob["score"] == round((4 + 1 + 0.5) / 12, 4)

    cy = rows["cy"]  # beat greedy every time: a bound, "at least", ranked after the estimates
    assert cy["rating"]["basis"] == "one-sided" and cy["rating"]["high"] is None
    low = cy["rating"]["low"]  # the rating at which 3 straight wins over greedy have probability 5%
    assert (1 / (1 + 10 ** ((greedy.elo - low) / 400))) ** 3 == pytest.approx(0.05, rel=1e-3)
    dee = rows["dee"]  # met only a bot with no rating on the bots' board
    assert dee["rank"] is None and dee["rating"] is None and dee["matches"] == 2

    order = [r["person"] for r in board_rows(pg_url)]
    estimates = sorted(["ann", "bob"], key=lambda p: -rows[p]["rating"]["elo"])
    assert order == [*estimates, "cy", "dee"]
    assert [rows[p]["rank"] for p in order] == [1, 2, 3, None]
    first = rows[estimates[0]]
    assert first["los_next"] is not None and 0.5 < first["los_next"] <= 1.0
    assert rows[estimates[1]]["los_next"] is None  # next to a bound


def test_a_bot_gets_its_record_against_people(pg_url: str, store: Store) -> None:
    with session_scope(pg_url) as session:
        greedy = against_people(session, store.bots["greedy"])
        search = against_people(session, store.bots["search"])
        mine = against_people(session, store.bots["mine"])
    # greedy: ann's 10 (it won 3), bob's two three-seat matches (lost both), cy's 3 (lost).
    assert (greedy["matches"], greedy["wins"], greedy["draws"], greedy["losses"]) == (15, 3, 0, 12)
    assert greedy["hands"] == 150
    chips = (3 * 12 - 7 * 12) + (-3 - 5) + 3 * -6
    assert greedy["chips"] == chips and greedy["chips_per_100"] == round(100 * chips / 150, 2)
    assert (search["matches"], search["wins"], search["losses"]) == (10, 6, 4)  # the running one not yet
    assert mine == {"matches": 0, "wins": 0, "draws": 0, "losses": 0, "hands": 0, "chips": 0,
                    "chips_per_100": None}  # fmt: skip


def test_a_person_sees_their_games_as_a_player(pg_url: str, store: Store) -> None:
    with session_scope(pg_url) as session:
        games = games_as_player(session, store.owners["ann"])
        none = games_as_player(session, store.owners["alice"])
    assert none == []
    assert len(games) == 11 and games[0]["status"] == "running"  # newest first
    assert games[0]["score"] is None and games[0]["result"] is None
    assert [b["score"] for b in games[0]["bots"]] == [None]  # nothing of a match still playing
    done = games[1:]
    assert [g["result"] for g in reversed(done)] == ["won"] * 7 + ["lost"] * 3
    assert all(g["bots"] == [{"name": "greedy", "version": 1, "score": -g["score"]}] for g in done)


def test_the_board_pages_and_searches_with_its_ranks(pg_url: str, store: Store) -> None:
    with session_scope(pg_url) as session:
        whole = people_page(session, pg_url, Paging(1, 50))
        second = people_page(session, pg_url, Paging(2, 1))
        found = people_page(session, pg_url, Paging(1, 50), "c")
        beyond = people_page(session, pg_url, Paging(9, 2))
    assert [r["person"] for r in whole["rows"]][2:] == ["cy", "dee"]
    assert (whole["total"], whole["on_board"], whole["pages"]) == (4, 4, 1)
    assert second["rows"] == whole["rows"][1:2] and second["pages"] == 4
    assert [(r["person"], r["rank"]) for r in found["rows"]] == [("cy", 3)]  # the board's rank kept
    assert found["total"] == 1 and found["q"] == "c"
    assert beyond["rows"] == [] and beyond["total"] == 4


def _frozen(board: ratings.Leaderboard) -> tuple[Any, ...]:
    # Not ``current``, which names every bot's current version, a person's seat's too.
    return (board.rows, board.versions, board.by_bot, board.done_matches)


def test_people_matches_leave_the_bots_board_bit_for_bit(pg_url: str, pg_empty_url: str) -> None:
    # The same bots' store twice: one with people at the table, one without.
    from arena.store.db import get_engine

    get_engine(pg_empty_url)  # the schema
    plain, seated = build_bots(pg_empty_url), build_bots(pg_url)
    assert plain.versions == seated.versions
    ratings.reset()
    before_live = bot_board(pg_url)  # the live model of the store with people, before they sat
    sit_people(pg_url, seated)
    after_live = bot_board(pg_url)  # brought up to date: nothing rated arrived
    ratings.reset()
    with_people, without = bot_board(pg_url), bot_board(pg_empty_url)  # full fits, from columns
    assert _frozen(with_people) == _frozen(without)
    assert after_live.rows == before_live.rows == without.rows
    with session_scope(pg_url) as session, session_scope(pg_empty_url) as other:
        assert ratings.match_results(session) == ratings.match_results(other)
        listed = leaderboard(session, pg_url)
        listed_without = leaderboard(other, pg_empty_url)
        snapshot = ratings.fit(ratings.match_results(session, finished_only=True),
                               reference=ratings.reference_versions(session))  # fmt: skip
        snapshot_without = ratings.fit(ratings.match_results(other, finished_only=True),
                                       reference=ratings.reference_versions(other))  # fmt: skip
    # The leaderboard's rows (ratings and records: a bot's record is against bots), and the
    # snapshot a finished tournament writes.
    assert listed == listed_without
    assert "@ann" not in {r["bot"] for r in listed}
    assert snapshot == snapshot_without
    assert dataclasses.asdict(snapshot)["ratings"]  # the fit rated someone: the check can fail


def test_a_new_people_match_reaches_the_cached_board(pg_url: str, store: Store) -> None:
    before = {r["person"]: r for r in board_rows(pg_url)}
    people_match(pg_url, store, [("@dee", 3), ("random", -3)])
    after = {r["person"]: r for r in board_rows(pg_url)}
    assert before["dee"]["rating"] is None
    assert after["dee"]["rating"]["basis"] == "one-sided" and after["dee"]["matches"] == 3
