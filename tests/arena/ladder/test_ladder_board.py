"""A ladder's board ranks its own bots 1 to n: a ladder without some of the arena's rated bots
read the arena's ranks (1, 2, 5, 6, 7 on the operator guide's demo: issue #40)."""

from __future__ import annotations

from helpers.ladder import add_bots, new_ladder, play_pending, run_tick

from arena.ladder.status import ladder_detail
from arena.ratings.leaderboard import current_leaderboard
from arena.store.db import session_scope


def test_the_ladder_board_ranks_its_bots_from_one(sqlite_url: str) -> None:
    add_bots(sqlite_url, 4)
    everyone = new_ladder(sqlite_url)
    for _ in range(3):
        run_tick(sqlite_url, everyone)
        play_pending(sqlite_url, everyone)
    with session_scope(sqlite_url) as session:
        arena = current_leaderboard(session).rows
    assert len(arena) == 4
    # The arena's 2nd and 4th only: their arena ranks are 2 and 4.
    second, fourth = arena[1], arena[3]
    ladder = new_ladder(sqlite_url, pool=[second.bot_id, fourth.bot_id])
    with session_scope(sqlite_url) as session:
        board = ladder_detail(session, ladder)["board"]
        found = ladder_detail(session, ladder, q=fourth.name.lower(), per_page=10)["board"]
    assert [(row["bot"], row["rank"]) for row in board] == [(second.name, 1), (fourth.name, 2)]
    assert board[0]["elo"] == round(second.elo, 1)  # the arena's rating, its own rank
    assert [(row["bot"], row["rank"]) for row in found] == [(fourth.name, 2)]  # a search keeps it
