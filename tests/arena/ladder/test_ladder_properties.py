"""Invariants of the ladder over many shapes (Hypothesis): its settings read back as stored,
and whatever the pool (owners, capacities, queues already waiting, table size), a tick adds
only whole duplicate tables of distinct bots of distinct owners, keeps each bot's queue
within its backlog, and stops at the target."""

from __future__ import annotations

import itertools
import tempfile
from collections import Counter
from pathlib import Path

from helpers.ladder import add_bots, new_ladder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from arena.ladder.scheduler import tick
from arena.ladder.settings import LadderSettings
from arena.play.capacity import capacities
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Bot, BotVersion, Match, MatchSeat, TournamentEntry
from arena.store.statuses import MatchStatus
from arena.tournaments.seating import arrangements

raw_settings = st.fixed_dictionaries(
    {"table_size": st.integers(2, 6), "hands_per_match": st.integers(1, 10_000)},
    optional={
        "pool": st.none() | st.lists(st.integers(1, 10**6), min_size=6, max_size=20, unique=True),
        "versions_per_owner": st.integers(1, 100),
        "target": st.integers(1, 100_000),
        "backlog": st.integers(1, 100),
        "matchmaking": st.fixed_dictionaries(
            {},
            optional={
                "placement_sd": st.floats(1, 1000),
                "min_share": st.floats(0, 1),
                "max_share": st.floats(1, 20),
                "allow_same_owner": st.booleans(),
                "neighbours": st.integers(1, 50),
            },
        ),
    },
)


@settings(max_examples=200, deadline=None)
@given(raw_settings)
def test_settings_read_back_as_stored(raw: dict[str, object]) -> None:
    parsed = LadderSettings.parse(raw)
    again = LadderSettings.from_params(parsed.to_params(), parsed.table_size, parsed.hands_per_match)
    assert again == parsed


_counter = itertools.count()


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    size=st.integers(2, 4),
    owners=st.lists(st.integers(0, 5), min_size=2, max_size=9),
    caps=st.lists(st.integers(1, 6), min_size=9, max_size=9),
    target=st.integers(1, 60),
    backlog=st.integers(1, 3),
)
def test_a_tick_adds_whole_tables_within_every_bound(
    size: int, owners: list[int], caps: list[int], target: int, backlog: int
) -> None:
    url = f"sqlite:///{Path(tempfile.mkdtemp()) / f'p{next(_counter)}.sqlite'}"
    try:
        ids = [add_bots(url, 1, start=k, owner=f"own{o}")[0] for k, o in enumerate(owners)]
        with session_scope(url) as session:
            for bot, cap in zip(ids, caps, strict=False):
                version = session.scalar(select(BotVersion).where(BotVersion.bot_id == bot))
                assert version is not None
                version.info = {**version.info, "max_concurrent_matches": cap}
        ladder = new_ladder(url, table_size=size, target=target, backlog=backlog, versions_per_owner=9)
        with session_scope(url) as session:
            result = tick(session, ladder, "prop", capacities)
        with session_scope(url) as session:
            owner_of = dict(session.execute(select(Bot.id, Bot.owner_id)).all())
            room = capacities(session, ids)
            seats = session.execute(
                select(Match.table_index, MatchSeat.seat, MatchSeat.bot_id).join(
                    MatchSeat, MatchSeat.match_id == Match.id
                )
            ).all()
            pending = select(func.count(Match.id)).where(Match.status == MatchStatus.PENDING)
            unfinished = session.scalar(pending)
        per_table = len(arrangements(size))
        tables: dict[int, Counter[tuple[int, int]]] = {}
        for table, seat, bot in seats:
            tables.setdefault(table, Counter())[(bot, seat)] += 1
        assert len(tables) == len(result.tables)
        for table, bots, _reason in result.tables:
            assert len(set(bots)) == size and len({owner_of[b] for b in bots}) == size  # distinct owners
            # One deal in every seat order: each bot holds each seat equally often.
            assert tables[table] == {(b, s): per_table // size for b in bots for s in range(size)}
        # The target: no table once it is reached, and not one table more than needed.
        assert unfinished == per_table * len(result.tables)
        assert unfinished < target + per_table
        # A bot joins a table only while its queue is below its backlog.
        queue = Counter(bot for bots in (b for _, b, _ in result.tables) for bot in bots)
        for bot, tables_of_bot in queue.items():
            assert (tables_of_bot - 1) * per_table < backlog * room[bot]
        # Each entry counts its bot's matches on the ladder, so the next tick need not.
        with session_scope(url) as session:
            kept = dict(session.execute(select(TournamentEntry.bot_id, TournamentEntry.matches)).all())
        assert kept == {bot: n * per_table for bot, n in queue.items()}
        if len(result.tables) == 0 and target > 0:
            # Nothing added: no table of distinct owners fits (or none has room).
            assert len(set(owners)) < size or not any(backlog * room[b] > 0 for b in ids)
    finally:
        dispose_engines()
