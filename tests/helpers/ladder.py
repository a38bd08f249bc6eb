"""A small ladder in a store, for the ladder's tests: hosted bots each of its own owner, a
ladder over them, and its scheduler ticked with the matches played in-process between ticks."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from arena.bots.owners import create_owner, get_or_create_operator
from arena.bots.registry import host_bot
from arena.ladder.scheduler import tick
from arena.ladder.setup import create_ladder
from arena.play.capacity import capacities
from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import Match, Owner
from arena.store.statuses import MatchStatus
from helpers.arena import SETTINGS

CLASSES = ("bots.random_bot:RandomBot", "bots.greedy:GreedyBot")


def add_bots(url: str, count: int, start: int = 0, owner: str | None = None) -> list[int]:
    """``count`` hosted bots ``b{start}``..., each of its own owner ``o{k}`` (or all of ``owner``)."""
    ids = []
    with session_scope(url) as session:
        operator = get_or_create_operator(session, "house")
        for k in range(start, start + count):
            bot = host_bot(session, operator, f"b{k}", CLASSES[k % 2], settings=SETTINGS, check=False)
            name = owner or f"o{k}"
            found = session.scalar(select(Owner).where(Owner.name == name))
            bot.owner_id = (found or create_owner(session, name)[0]).id
            ids.append(bot.id)
    return ids


def new_ladder(url: str, **raw: Any) -> int:
    with session_scope(url) as session:
        fields = {"pool": None, "table_size": 2, "hands_per_match": 2, "target": 8, **raw}
        return create_ladder(session, name="ladder", raw=fields, settings=SETTINGS).id


def run_tick(
    url: str, ladder_id: int, holder: str = "me"
) -> tuple[bool, list[tuple[int, tuple[int, ...], str]]]:
    with session_scope(url) as session:
        result = tick(session, ladder_id, holder, capacities)
    return result.held, result.tables


def play_pending(url: str, ladder_id: int, limit: int | None = None) -> int:
    """Play the ladder's pending matches in-process (up to ``limit``); returns how many."""
    with session_scope(url) as session:
        pending = list(
            session.scalars(
                select(Match.id)
                .where(Match.tournament_id == ladder_id, Match.status == MatchStatus.PENDING)
                .order_by(Match.id)
            )
        )
    for match_id in pending[:limit]:
        assert play_match_job(match_id, url) == "done"
    return len(pending[:limit])


def ladder_arena(url: str, bots: int = 3, rounds: int = 3, **raw: Any) -> int:
    """``bots`` bots and a ladder over them, ``rounds`` ticks with their matches played."""
    add_bots(url, bots)
    ladder = new_ladder(url, **raw)
    for _ in range(rounds):
        run_tick(url, ladder)
        play_pending(url, ladder)
    return ladder
