"""``tonk ladder run`` probes the dialled bots found offline in a thread of its own, off the
ticks (arena/runtime/ladder.py, arena/bots/reachability.py): a real bot on a loopback port,
a real PostgreSQL store; the thread ends with the runner."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from helpers.arena import InlineBackend, grpc_bots, wait_for

from arena.bots import reachability
from arena.runtime.ladder import LadderRunner
from arena.store.db import dispose_engines, session_scope
from bots.random_bot import RandomBot
from sdk.server import start_server


@pytest.fixture
def url(pg_url: str) -> Iterator[str]:
    yield pg_url
    dispose_engines()


def outage(url: str, bot_id: int) -> reachability.Outage | None:
    with session_scope(url) as session:
        return reachability.outage_of(session, bot_id)


def forfeited(url: str, bot_id: int, match_id: int) -> None:
    with session_scope(url) as session:
        reachability.note_forfeit(session, bot_id, match_id, "could not reach it")


def test_the_ladder_runner_probes_offline_bots_beside_its_ticks(url: str) -> None:
    server = start_server(RandomBot)
    try:
        [bot] = grpc_bots(url, {"prober-target": f"127.0.0.1:{server.port}"})
        runner = LadderRunner(url, InlineBackend(url), ladder_ids=[], probe_every_s=0.05)
        stop = threading.Event()
        running = threading.Thread(target=runner.run, args=(stop,), kwargs={"poll_s": 0.05})
        running.start()
        try:
            forfeited(url, bot, 1)  # a blip: it answers its first probe, due at once
            wait_for(lambda: outage(url, bot) is None, timeout=30)

            server.stop(0)
            forfeited(url, bot, 2)  # down for real: its probe fails, and it stays offline
            wait_for(lambda: (found := outage(url, bot)) is not None and found.failures >= 1, timeout=30)
            found = outage(url, bot)
            assert found is not None and found.cause == reachability.CAUSE_HEALTH
        finally:
            stop.set()
            running.join(timeout=60)
        assert not running.is_alive()
        assert not [t for t in threading.enumerate() if t.name == "tonk-ladder-probe"]
    finally:
        server.stop(0)
