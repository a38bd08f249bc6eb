"""Ratings per version (issue #27): each version of a bot is rated as a player of its own, a
bot's rating (the leaderboard's row, matchmaking's view, the snapshot) is its current
version's, and a new version is unrated until it has played. Before, every version of a
name was pooled into one rating, so ``tonk submit --update`` silently mixed old and new."""

from __future__ import annotations

from helpers.arena import new_tournament
from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.bots.owners import get_or_create_operator
from arena.bots.registry import host_bot
from arena.ladder.scheduler import PoolBot, candidate
from arena.queries.leaderboard import leaderboard as leaderboard_rows
from arena.ratings import leaderboard
from arena.ratings.model import RatedMatch, fit
from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import BotVersion, Match
from arena.tournaments.lifecycle import start_tournament


def host(url: str, name: str, spec: str) -> int:
    with session_scope(url) as session:
        return host_bot(session, get_or_create_operator(session, "house"), name, spec, check=False).id


def play_all(url: str, tid: int) -> None:
    with session_scope(url) as session:
        start_tournament(session, tid)
        ids = session.scalars(select(Match.id).where(Match.tournament_id == tid).order_by(Match.id)).all()
    for match_id in ids:
        assert play_match_job(match_id, url) == "done"


def version_ids(url: str, bot_id: int) -> list[int]:
    with session_scope(url) as session:
        query = select(BotVersion.id).where(BotVersion.bot_id == bot_id).order_by(BotVersion.number)
        return list(session.scalars(query))


def test_two_versions_of_a_bot_are_rated_apart_and_the_bot_is_its_current_one(db_url: str) -> None:
    rivals = [host(db_url, "random", "random"), host(db_url, "greedy", "greedy")]
    mine = host(db_url, "mine", "helpers.arena:CrashBot")  # v1: faults every 7th decision
    options = {
        "table_sizes": [2, 3], "deals_per_table": 4, "hands_per_match": 6, "config": {"max_faults": 100},
    }
    play_all(db_url, new_tournament(db_url, [*rivals, mine], name="v1 cup", seed=11, **options))
    with session_scope(db_url) as session:
        before = leaderboard.current_leaderboard(session)
    assert host(db_url, "mine", "heuristic") == mine  # v2: another class, the same bot
    v1, v2 = version_ids(db_url, mine)
    with session_scope(db_url) as session:  # v2 has not played: the bot has no rating now
        fresh = leaderboard.current_leaderboard(session)
        rows = {r["bot"]: r for r in leaderboard_rows(session, db_url)}
    assert before.rows and mine in {r.bot_id for r in before.rows}
    assert mine not in {r.bot_id for r in fresh.rows} and v1 in fresh.versions
    assert rows["mine"]["rating"] is None and rows["mine"]["rank"] is None
    assert rows["mine"]["version"]["number"] == 2 and rows["mine"]["version"]["new"] is True
    assert rows["mine"]["version"]["previous"]["number"] == 1
    assert candidate_sd(fresh, mine) == float("inf")  # matchmaking: unrated, as a newcomer

    play_all(db_url, new_tournament(db_url, [*rivals, mine], name="v2 cup", seed=12, **options))
    with session_scope(db_url) as session:
        board = leaderboard.current_leaderboard(session)
        history = leaderboard.rating_history(session, bot_id=mine)
        pooled = fit(
            [RatedMatch(r.match_id, tuple(by_bot(session, r.bots)), r.scores, r.deal)
             for r in leaderboard.match_results(session)]
        )  # fmt: skip
    first, second = board.versions[v1], board.versions[v2]
    assert (first.number, second.number) == (1, 2) and first.bot_id == second.bot_id == mine
    assert second.elo - first.elo > 100, (first, second)  # the faulting build and the good one
    row = next(r for r in board.rows if r.bot_id == mine)
    assert (row.version, row.version_id, row.elo, row.matches) == (2, v2, second.elo, second.matches)
    assert second.matches == first.matches  # each version's own matches, not the pooled count
    pooled_elo = next(r.elo for r in pooled.ratings if r.bot == str(mine))
    assert abs(pooled_elo - row.elo) > 100  # what the board showed before: the versions mixed
    assert candidate_sd(board, mine) < float("inf")
    # The history: each finished tournament rated the version that was current then.
    assert [(h.tournament_name, h.version) for h in history] == [("v1 cup", 1), ("v2 cup", 2)]
    ranks = [r.rank for r in board.rows]
    assert ranks == list(range(1, len(board.rows) + 1)) and board.rows[-1].los_next is None


def by_bot(session: Session, versions: tuple[str, ...]) -> list[str]:
    """Version ids -> bot ids (the pooled rating the arena used to give)."""
    owner = dict(session.execute(select(BotVersion.id, BotVersion.bot_id)).all())
    return [str(owner[int(v)]) for v in versions]


def candidate_sd(board: leaderboard.Leaderboard, bot_id: int) -> float:
    """The standard error matchmaking sees for the bot (inf: unrated)."""
    row = next((r for r in board.rows if r.bot_id == bot_id), None)
    return candidate(PoolBot(bot_id, 0, 0), row, 0, 1).sd
