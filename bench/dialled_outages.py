#!/usr/bin/env python3
"""What leaving offline dialled bots out of a ladder costs (arena/bots/reachability.py).

    .venv/bin/python bench/dialled_outages.py [--sizes 1000,10000] [--offline 0.1] [--url URL]

For each pool size, that many dialled bots and a ladder over them (bench/ladder_tick.py's
store), then, each a median of 5, measured in this process:

* ``tick``: a tick with no bot offline, and with ``--offline`` of them offline (their
  ``bot_outages`` rows read by the live capacities), and the ratio;
* ``offline_among``: the one query that reads them, alone;
* ``probe round``: one round of health probes of 16 bots that accept a connection and never
  answer (the worst case: each waits out ``PROBE_TIMEOUT_S``, 4 at a time), against its bound;
* ``tick while probing``: a tick while such rounds run back to back in another thread, and its
  ratio to an idle tick: the probes hold no transaction, so the tick does not wait for them.
"""

from __future__ import annotations

import argparse
import math
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ladder_tick import arena, one_tick  # noqa: E402
from sqlalchemy import delete, select, update  # noqa: E402

from arena.bots import reachability  # noqa: E402
from arena.store.db import session_scope  # noqa: E402
from arena.store.models import Bot, BotOutage, BotVersion, utcnow  # noqa: E402

HOSTS = ("127.0.0.1",)


def median_of(run: Callable[[], float], times: int = 5) -> float:
    return statistics.median(run() for _ in range(times))


def dialled(url: str, address: str) -> list[int]:
    """Every bot of the store dialled at ``address`` (bench/ladder_tick.py makes them hosted)."""
    with session_scope(url) as session:
        session.execute(update(Bot).values(address=address, hosted=None))
        session.execute(update(BotVersion).values(address=address, hosted=None))
        return list(session.scalars(select(Bot.id).order_by(Bot.id)))


def set_offline(url: str, bot_ids: list[int]) -> None:
    with session_scope(url) as session:
        session.execute(delete(BotOutage))
        now = utcnow()
        for bot in bot_ids:
            reachability.note_offline(session, bot, reachability.CAUSE_MATCH, "bench", now=now)


def tick_ms(url: str, ladder: int) -> float:
    return one_tick(url, ladder)[0] * 1000


def query_ms(url: str, ids: list[int]) -> float:
    with session_scope(url) as session:
        start = time.perf_counter()
        reachability.offline_among(session, ids)
        return (time.perf_counter() - start) * 1000


def probe_round_s(url: str, bots: list[int]) -> float:
    with session_scope(url) as session:  # due again at once
        session.execute(update(BotOutage).where(BotOutage.bot_id.in_(bots)).values(probe_at=utcnow()))
    start = time.perf_counter()
    reachability.probe_due(url, HOSTS)
    return time.perf_counter() - start


def measure(url: str, size: int, share: float, address: str) -> None:
    """Every measure for one pool of ``size`` dialled bots, printed."""
    ladder = arena(url, size)
    ids = dialled(url, address)
    one_tick(url, ladder)  # the first fit of the board, and warm caches
    set_offline(url, [])
    idle = median_of(lambda: tick_ms(url, ladder))
    offline = ids[: int(size * share)]
    set_offline(url, offline)
    with_offline = median_of(lambda: tick_ms(url, ladder))
    query = median_of(lambda: query_ms(url, ids))
    print(f"{size} bots: tick {idle:.1f} ms with none offline, {with_offline:.1f} ms with {len(offline)} "
          f"offline (x{with_offline / idle:.2f}); offline_among alone {query:.2f} ms")  # fmt: skip

    probed = offline[: reachability.PROBES_PER_ROUND]
    set_offline(url, probed)
    waves = math.ceil(len(probed) / reachability.PROBES_AT_ONCE)
    round_s = probe_round_s(url, probed)
    print(f"  probe round of {len(probed)} silent bots: {round_s:.2f} s "
          f"({waves} waves of {reachability.PROBE_TIMEOUT_S:.0f} s deadlines)")  # fmt: skip

    stop = threading.Event()

    def probing() -> None:
        while not stop.is_set():
            probe_round_s(url, probed)

    thread = threading.Thread(target=probing)
    thread.start()
    try:
        busy = median_of(lambda: tick_ms(url, ladder))
    finally:
        stop.set()
        thread.join()
    again = median_of(lambda: tick_ms(url, ladder))
    print(f"  tick while probing: {busy:.1f} ms vs {again:.1f} ms idle (x{busy / again:.2f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--offline", type=float, default=0.1, help="share of the pool offline")
    parser.add_argument("--url", default=None, help="an empty store (default: a SQLite file per size)")
    args = parser.parse_args()
    # Accepts connections (the kernel's backlog) and never answers: a probe waits its deadline.
    silent = socket.create_server(("127.0.0.1", 0), backlog=128)
    address = f"127.0.0.1:{silent.getsockname()[1]}"
    try:
        for size in [int(s) for s in args.sizes.split(",")]:
            measure(args.url or f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite", size, args.offline, address)
    finally:
        silent.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
