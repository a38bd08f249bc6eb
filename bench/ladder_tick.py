#!/usr/bin/env python3
"""What one tick of the ladder's scheduler costs as the pool grows (arena/ladder/scheduler.py).

    .venv/bin/python bench/ladder_tick.py [--sizes 20,200,1000] [--target 64] [--url sqlite:///...]

For each pool size: that many bots (each of its own owner, inserted directly), a ladder over
them with a few hundred done matches already rated (so the board is a real fit), then ticks
that each add ``--target`` matches (the ladder's queue emptied between ticks, as workers
would). Printed per size: the time of a tick (median of 5), its time per table, and its ratio
to the smallest pool's, measured in this process.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import delete, insert, select, update  # noqa: E402

from arena.ladder.scheduler import tick  # noqa: E402
from arena.ladder.setup import create_ladder  # noqa: E402
from arena.play.capacity import capacities  # noqa: E402
from arena.store.db import session_scope  # noqa: E402
from arena.store.models import Bot, BotVersion, Match, MatchSeat, Owner  # noqa: E402
from arena.store.statuses import MatchStatus  # noqa: E402


def arena(url: str, bots: int, seed: int = 1) -> int:
    """``bots`` bots and a ladder with ``4 * bots`` done heads-up matches among them."""
    rng = random.Random(seed)
    with session_scope(url) as session:
        session.execute(insert(Owner), [{"name": f"o{k}", "token_hash": f"h{k}"} for k in range(bots)])
        owners = list(session.scalars(select(Owner.id).order_by(Owner.id)))
        session.execute(
            insert(Bot), [{"name": f"b{k}", "owner_id": owners[k], "hosted": "x:Y"} for k in range(bots)]
        )
        ids = list(session.scalars(select(Bot.id).order_by(Bot.id)))
        session.execute(insert(BotVersion), [{"bot_id": b, "number": 1, "info": {}} for b in ids])
        ladder = create_ladder(
            session, name="bench", raw={"table_size": 2, "hands_per_match": 1, "target": 64}
        )
        strength = {b: rng.gauss(0, 1) for b in ids}
        for k in range(4 * bots):
            a, b = rng.sample(ids, 2)
            row = {"tournament_id": ladder.id, "key": f"old{k}", "table_index": -1 - k, "deal_index": 0,
                   "rotation": 0, "seed": k, "hands": 1, "status": MatchStatus.DONE}  # fmt: skip
            match_id = session.execute(insert(Match).values(**row)).inserted_primary_key[0]
            win = 1 if strength[a] + rng.gauss(0, 1) > strength[b] + rng.gauss(0, 1) else -1
            versions = dict(session.execute(select(BotVersion.bot_id, BotVersion.id)).all())
            session.execute(insert(MatchSeat), [
                {"match_id": match_id, "seat": 0, "bot_id": a, "bot_version_id": versions[a], "score": win},
                {"match_id": match_id, "seat": 1, "bot_id": b, "bot_version_id": versions[b], "score": -win},
            ])  # fmt: skip
        return ladder.id


def one_tick(url: str, ladder: int) -> tuple[float, int]:
    with session_scope(url) as session:  # the workers played the queue: no unfinished match left
        pending = select(Match.id).where(Match.tournament_id == ladder, Match.status == MatchStatus.PENDING)
        session.execute(delete(MatchSeat).where(MatchSeat.match_id.in_(pending)))
        waiting = (Match.tournament_id == ladder) & (Match.status == MatchStatus.PENDING)
        session.execute(update(Match).where(waiting).values(status=MatchStatus.FAILED))
    start = time.perf_counter()
    with session_scope(url) as session:
        result = tick(session, ladder, "bench", capacities)
    return time.perf_counter() - start, len(result.tables)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20,200,1000")
    parser.add_argument("--url", default=None, help="an empty store (default: a SQLite file per size)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    base: float | None = None
    print(f"{'bots':>6} {'tick ms':>9} {'tables':>7} {'ms/table':>9} {'x smallest':>11}")
    for size in sizes:
        url = args.url or f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite"
        ladder = arena(url, size)
        one_tick(url, ladder)  # the first fit of the board, and warm caches
        times, tables = [], 0
        for _ in range(5):
            took, tables = one_tick(url, ladder)
            times.append(took)
        median = statistics.median(times)
        base = base or median
        per_table = median * 1000 / max(tables, 1)
        print(f"{size:>6} {median * 1000:>9.1f} {tables:>7} {per_table:>9.2f} {median / base:>11.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
