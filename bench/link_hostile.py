#!/usr/bin/env python3
"""What an absent or slow connected bot costs the arena (issue 29, points 5 and 6).

    .venv/bin/python bench/link_hostile.py offline [--matches 16] [--grace 5]
    .venv/bin/python bench/link_hostile.py burst [--bots 32] [--pause 0.3] [--watch 20]

Everything runs in this process over real sockets: a gateway on its own loop
(arena.link.gateway.GatewayThread), bots connected to it with the SDK's LinkClient, a SQLite
store in a temporary folder, a 2 s decision deadline (the link tests').

``offline``: a heads-up tournament of ``--matches`` matches between a connected bot that is
online and one that connected once and is gone for good, with an ``offline_grace_s`` of
``--grace``, driven by ``run_tournament`` playing each match inline as a worker does. Printed:
the wall time and the time past one grace. Each match waiting the grace again costs about
grace x matches; one grace per absence costs one grace and the matches' own time.

``burst``: ``--bots`` owners each connect one new, slow-but-legal bot at once (every decision
takes ``--pause`` s, so its admission check is long), with check slots enough for all of them
(an operator's choice; the default 2 refuses the rest at once). For ``--watch`` s, printed: the
oldest the gateway's heartbeat got (past its 10 s lease every bot of the gateway looks offline)
and whether a bot connected before the burst ever looked offline. The checks are cut at 12 s.

Measured on the shared 2-core VM (issue 29's fixes, before -> after): ``offline`` (16 matches,
5 s grace) 85.4 s -> 9.2 s; ``burst`` (32 bots, 0.3 s a decision) heartbeat at most 17.8 s old,
the earlier bot offline in 30 samples -> 2.0 s old, never offline.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import select  # noqa: E402

from arena.bots.owners import create_owner  # noqa: E402
from arena.config import Settings  # noqa: E402
from arena.link import directory  # noqa: E402
from arena.link.gateway import Gateway, GatewayThread  # noqa: E402
from arena.store.db import dispose_engines, session_scope  # noqa: E402
from arena.store.models import Bot, LinkGateway, utcnow  # noqa: E402
from bots.random_bot import RandomBot  # noqa: E402
from sdk.link import LinkClient  # noqa: E402


class SlowBot(RandomBot):
    name = "slowpoke"
    pause_s = 0.3

    def act(self, obs: Any) -> Any:
        time.sleep(self.pause_s)
        return super().act(obs)


class Linked:
    """A LinkClient in a thread."""

    def __init__(self, address: str, token: str, name: str, bot: Any = RandomBot):
        self.link = LinkClient(bot, address, token, name, capacity=2)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # refused for good: what the bench prints says enough
            self.link.run()

    def stop(self) -> None:
        self.link.stop()
        self.thread.join(10)


def bot_id(url: str, name: str) -> int:
    with session_scope(url) as session:
        return int(session.scalars(select(Bot.id).where(Bot.name == name)).one())


def online(url: str, bot: int) -> bool:
    with session_scope(url) as session:
        return directory.connected_capacity(session, bot) > 0


def wait(what: str, check: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def offline(url: str, address: str, tokens: dict[str, str], matches: int, grace: int) -> None:
    from arena.runtime.driver import run_tournament
    from arena.runtime.jobs import play_match_job
    from arena.tournaments.lifecycle import create_tournament

    stayer = Linked(address, tokens["alice"], "stayer")
    leaver = Linked(address, tokens["bob"], "leaver")
    wait("both bots", lambda: stayer.link.connected.is_set() and leaver.link.connected.is_set())
    ids = [bot_id(url, "leaver"), bot_id(url, "stayer")]
    leaver.stop()
    wait("the leaver gone", lambda: not online(url, ids[0]))

    class Inline:
        def submit(self, match_ids: Any, *, replace: Any = ()) -> int:
            for match_id in match_ids:
                play_match_job(match_id, url)
            return len(match_ids)

        def queued(self, match_ids: Any) -> set[int]:
            return set()  # each is played as it is submitted

        def close(self, *, cancel: bool = False) -> None:
            pass

    with session_scope(url) as session:
        tournament = create_tournament(
            session, name="offline", bot_ids=ids, table_sizes=[2], deals_per_table=max(1, matches // 2),
            hands_per_match=1, config={"offline_grace_s": grace},
        )  # fmt: skip
        tid = tournament.id
    started = time.perf_counter()
    progress = run_tournament(url, tid, Inline(), poll_s=0.1)
    took = time.perf_counter() - started
    stayer.stop()
    print(f"offline: {progress.done} matches done, grace {grace} s: {took:.1f} s in all, "
          f"{took - grace:.1f} s past one grace ({(took - grace) / max(1, progress.done):.2f} s a match)")


def burst(url: str, address: str, gateway: Gateway, bots: int, pause: float, watch: float) -> None:
    SlowBot.pause_s = pause
    changes: dict[str, Any] = {"check_time_limit_s": 12}
    if "check_slots" in {f.name for f in dataclasses.fields(Settings)}:
        changes["check_slots"] = bots
    service = gateway.link_service  # the admission check's settings
    service.settings = dataclasses.replace(service.settings, **changes)
    with session_scope(url) as session:
        tokens = [create_owner(session, f"burst{i}")[1] for i in range(bots + 1)]
    bystander = Linked(address, tokens[-1], "bystander")
    wait("the bystander", bystander.link.connected.is_set)
    watched = bot_id(url, "bystander")
    slow = [Linked(address, tokens[i], f"slow-{i}", SlowBot) for i in range(bots)]
    wait("the burst admitted", lambda: len(gateway.holdings.holding) >= bots * 7 // 8)
    oldest, looked_offline = 0.0, 0
    until = time.monotonic() + watch
    while time.monotonic() < until and gateway.holdings.holding:
        with session_scope(url) as session:
            row = session.get(LinkGateway, gateway.id)
            assert row is not None
            oldest = max(oldest, (utcnow() - row.heartbeat_at).total_seconds())
        looked_offline += not online(url, watched)
        time.sleep(0.25)
    print(f"burst: {bots} slow checks at once: the heartbeat at most {oldest:.1f} s old "
          f"(lease {directory.GATEWAY_LEASE_S:g} s); the bot connected before looked offline "
          f"in {looked_offline} samples")
    for client in [*slow, bystander]:
        client.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["offline", "burst"])
    parser.add_argument("--matches", type=int, default=16)
    parser.add_argument("--grace", type=int, default=5)
    parser.add_argument("--bots", type=int, default=32)
    parser.add_argument("--pause", type=float, default=0.3)
    parser.add_argument("--watch", type=float, default=20.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tonk-bench-") as tmp:
        url = f"sqlite:///{tmp}/arena.sqlite"
        with session_scope(url) as session:
            tokens = {name: create_owner(session, name)[1] for name in ("alice", "bob")}
        settings = Settings(database_url=url, decision_deadline_ms=2000)  # slow bots stay legal
        running = GatewayThread(Gateway(settings, max_connections_per_owner=4))
        gateway = running.start()
        gateway.holdings.started -= directory.GATEWAY_LEASE_S  # as if up a while: an absent bot is absent
        address = f"127.0.0.1:{gateway.port}"
        try:
            if args.what == "offline":
                offline(url, address, tokens, args.matches, args.grace)
            else:
                burst(url, address, gateway, args.bots, args.pause, args.watch)
        finally:
            running.stop()
            dispose_engines()


if __name__ == "__main__":
    main()
