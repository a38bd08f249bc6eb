"""arena.runtime.driver.Sweeper, the driver's sweep for tournaments nobody drives (the dashboard's
API starts them and returns): it submits the pending matches of every running tournament
whose bots have room, replaces the jobs of matches whose worker died, leaves other
tournaments alone, finishes one with nothing left, and starts no backend while idle."""

from __future__ import annotations

import socket
from collections.abc import Collection, Sequence

from helpers.arena import InlineBackend, hosted_bots, new_tournament
from sqlalchemy import select

from arena.runtime.driver import Sweeper
from arena.store.db import session_scope
from arena.store.models import Match, Tournament
from arena.tournaments.lifecycle import start_tournament


class Recording:
    """A backend that queues nothing, and remembers what it was asked to."""

    def __init__(self) -> None:
        self.submitted: list[tuple[list[int], set[int]]] = []

    def submit(self, match_ids: Sequence[int], *, replace: Collection[int] = ()) -> int:
        self.submitted.append((list(match_ids), set(replace)))
        return len(match_ids)

    def queued(self, match_ids: Collection[int]) -> set[int]:
        return {m for batch, _ in self.submitted for m in batch} & set(match_ids)

    def close(self, *, cancel: bool = False) -> None:
        pass


def _matches(url: str, tournament_id: int) -> list[int]:
    with session_scope(url) as session:
        query = select(Match.id).where(Match.tournament_id == tournament_id).order_by(Match.id)
        return list(session.scalars(query))


def test_the_sweep_submits_running_tournaments_and_replaces_dead_workers(sqlite_url: str) -> None:
    ids = hosted_bots(sqlite_url)
    running = new_tournament(sqlite_url, ids, deals_per_table=2)  # 4 matches
    idle = new_tournament(sqlite_url, ids, name="created, not started", seed=99)
    made: list[Recording] = []

    def backend() -> Recording:
        if not made:
            made.append(Recording())
        return made[0]

    sweeper = Sweeper(sqlite_url, backend)
    assert sweeper.sweep() == 0 and not made  # nothing running: no backend made
    with session_scope(sqlite_url) as session:
        start_tournament(session, running)
    first, *rest = _matches(sqlite_url, running)
    with session_scope(sqlite_url) as session:  # a worker of this host that is gone
        match = session.get(Match, first)
        assert match is not None
        match.status, match.worker = "running", f"{socket.gethostname()}:999999999"

    assert sweeper.sweep() == 4
    (batch, replace), = made[0].submitted
    assert sorted(batch) == [first, *rest] and replace == {first}  # its job is known dead
    assert sweeper.sweep() == 0  # all waiting already
    assert all(m not in _matches(sqlite_url, idle) for m in batch)


def test_the_sweep_plays_a_tournament_to_its_end(sqlite_url: str) -> None:
    ids = hosted_bots(sqlite_url)
    tournament = new_tournament(sqlite_url, ids, deals_per_table=1, hands_per_match=2)
    with session_scope(sqlite_url) as session:
        start_tournament(session, tournament)
    sweeper = Sweeper(sqlite_url, lambda: InlineBackend(sqlite_url))
    assert sweeper.sweep() == 2
    with session_scope(sqlite_url) as session:
        assert session.get(Tournament, tournament).status == "finished"  # type: ignore[union-attr]
    assert sweeper.sweep() == 0


def test_the_sweeper_thread_starts_and_stops(sqlite_url: str) -> None:
    ids = hosted_bots(sqlite_url)
    tournament = new_tournament(sqlite_url, ids, deals_per_table=1, hands_per_match=2)
    with session_scope(sqlite_url) as session:
        start_tournament(session, tournament)
    sweeper = Sweeper(sqlite_url, lambda: InlineBackend(sqlite_url), interval_s=0.05).start()
    try:
        from helpers.arena import wait_for

        def finished() -> bool:
            with session_scope(sqlite_url) as session:
                return session.get(Tournament, tournament).status == "finished"  # type: ignore[union-attr]

        wait_for(finished)
    finally:
        sweeper.stop()
