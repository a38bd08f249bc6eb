#!/usr/bin/env python3
"""Does the fair-play check catch a bot that remembers duplicate deals, as the arena plays them?

    .venv/bin/python bench/fairplay_check.py [--deals 40] [--hands 16] [--runs memory-1 ...] [--base greedy]

Each run is a real tournament on a fresh SQLite store: the bot under test served over gRPC
(``sdk.server.start_server``, registered by address, so its memory lives on across matches
as a bot on its author's machine would) against the house ``greedy`` hosted in the
embedded pool's worker processes, heads-up, ``--deals`` duplicate deals (``deal_mode
duplicate``: the operator's explicit choice; ``auto`` would deal this table independently)
of ``--hands`` hands, driven by ``arena.runtime.driver.run_tournament``. The runs:

- ``honest``: the cheater's base (``--base``, ``greedy``) served in its place, one match at a time: the
  reference the others are paired with, deal by deal (the same store secret and seed deal
  the same cards);
- ``memory-1``: bench/fairplay.py's ``MemoryBot`` (it keeps only what its seats saw: the
  referee sends nothing else), declaring one match at a time (GetInfo max_concurrent_matches);
- ``memory-4``: the same bot at the default concurrency (the operator's default of 4 matches
  at once; the driver plays a deal seating it one rotation at a time);
- ``memory-4-at-once``: the same, with the driver patched to start both rotations of a deal
  together, as it did before (what the check saw then);
- ``evader-1``: ``EvaderBot``, which answers once illegally in every match where its memory
  paid (the check used to leave deals with a fault out).

Printed per run: the bot's edge over ``honest`` in chips per 100 of its hands with a 95%
interval over deals; the check's mean later-minus-first difference, the deals it paired (and
those left out because their rotations overlapped), its sequential p-value at the end, and
the first deal count at which it flagged the bot, looking after every deal in the order the
deals began (as the bot page would have shown it). Honest bots' false alarms over a life of
2,000 looks: ``bench/fairplay_stats.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))
sys.path.append(str(_HERE))  # bench/fairplay.py, as the module ``fairplay``

import fairplay as cheats  # noqa: E402
from sqlalchemy import select  # noqa: E402

from arena.bots.owners import get_or_create_operator  # noqa: E402
from arena.bots.registry import host_bot, register_bot  # noqa: E402
from arena.config import Settings  # noqa: E402
from arena.ratings import fairplay  # noqa: E402
from arena.runtime import scheduling  # noqa: E402
from arena.runtime.backends import EmbeddedBackend  # noqa: E402
from arena.runtime.driver import run_tournament  # noqa: E402
from arena.store.db import dispose_engines, session_scope  # noqa: E402
from arena.store.models import Match, MatchSeat  # noqa: E402
from arena.store.secrets import set_secret  # noqa: E402
from arena.tournaments.lifecycle import create_tournament, start_tournament  # noqa: E402
from sdk.bot import Bot  # noqa: E402
from sdk.server import start_server  # noqa: E402

SETTINGS = Settings(allowed_bot_hosts=("127.0.0.1",), decision_deadline_ms=5000, time_bank_ms=30_000)
SECRET = b"bench-fairplay-check"
RUNS = ("honest", "memory-1", "memory-4", "memory-4-at-once", "evader-1")


@contextlib.contextmanager
def store() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="fairplay-check-") as folder:
        url = f"sqlite:///{folder}/arena.sqlite"
        try:
            yield url
        finally:
            dispose_engines()


def play(
    bot: type[Bot], capacity: int | None, deals: int, hands: int, seed: int, *, at_once: bool
) -> dict[str, Any]:
    """One tournament: the served ``bot`` against house greedy; its chips per deal (by deal
    index), the check's differences in order, and its overlapped count."""
    server = start_server(bot, max_matches=capacity)
    try:
        with store() as url:
            with session_scope(url) as session:
                set_secret(session, "deal", SECRET)
                owner = get_or_create_operator(session, "bench")
                subject = register_bot(session, owner, "subject", server.address, settings=SETTINGS).id
                house = host_bot(session, get_or_create_operator(session, "house"), "greedy", "greedy",
                                 settings=SETTINGS, check=False).id  # fmt: skip
                tid = create_tournament(
                    session, name="fairplay", bot_ids=[subject, house], table_sizes=[2],
                    deals_per_table=deals, hands_per_match=hands, seed=seed, settings=SETTINGS,
                    deal_mode="duplicate",
                ).id  # fmt: skip
                start_tournament(session, tid)
            backend = EmbeddedBackend(url, 2, slots=8)
            try:
                patch = mock.patch.object(scheduling, "_serial_deals", lambda *a: ({}, set()))
                with patch if at_once else contextlib.nullcontext():
                    run_tournament(url, tid, backend, poll_s=0.05)
            finally:
                backend.close()
            with session_scope(url) as session:
                chips: dict[int, int] = {}
                for deal, score in session.execute(
                    select(Match.deal_index, MatchSeat.score)
                    .join(MatchSeat, MatchSeat.match_id == Match.id)
                    .where(Match.tournament_id == tid, MatchSeat.bot_id == subject)
                ):
                    chips[deal] = chips.get(deal, 0) + int(score or 0)
                found = fairplay.deal_differences(session, subject, tid)
    finally:
        server.stop(0)
    return {"chips": chips, "deals": found.deals, "overlapped": found.overlapped,
            "faulted": found.faulted, "referenced": found.referenced}  # fmt: skip


def report(
    name: str, run: dict[str, Any], honest: dict[str, Any], hands: int, seconds: float, base: str
) -> str:
    deals = sorted(run["chips"])
    edge = [100 * (run["chips"][d] - honest["chips"][d]) / (2 * hands) for d in deals]
    mean, lo, hi = cheats.mean_ci(edge)
    check = fairplay.paired_check(run["deals"])
    flag = fairplay.first_flag(run["deals"])  # the arena's own: every look of the life
    low, high = check.low or 0.0, check.high or 0.0
    diff = "n/a" if check.mean is None else f"{check.mean:+.1f} [{low:+.1f}, {high:+.1f}]"
    p = "n/a" if check.p_value is None else f"{check.p_value:.2g}"
    return (
        f"{name:<17} edge over honest {base} {mean:+.1f} chips/100 hands [{lo:+.1f}, {hi:+.1f}]; "
        f"check: later - first {diff} over {check.deals} paired deals ({run['overlapped']} overlapped, "
        f"{run['faulted']} with a fault of the bot, {run['referenced']} net of the reference), p {p}, "
        f"{'flagged at deal ' + str(flag) if flag else 'not flagged'}  ({seconds:.0f} s)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=40)
    parser.add_argument("--hands", type=int, default=16)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--runs", nargs="*", choices=RUNS, default=list(RUNS[1:]))
    parser.add_argument("--base", choices=sorted(cheats.BASES), default="greedy",
                        help="the cheater's honest play (the reference is greedy)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    honest = play(cheats.BASES[args.base], 1, args.deals, args.hands, args.seed, at_once=False)
    print(f"honest {args.base} served: {args.deals} deals x {args.hands} hands x 2 rotations "
          f"({time.perf_counter() - started:.0f} s)", flush=True)  # fmt: skip
    memory = cheats.memory_bot(cheats.BASES[args.base])
    evader = type("Evader", (cheats.EvaderBot,), {"base": cheats.BASES[args.base]})
    bots: dict[str, tuple[type[Bot], int | None, bool]] = {
        "memory-1": (memory, 1, False),
        "memory-4": (memory, None, False),  # declares nothing: the default capacity, 4
        "memory-4-at-once": (memory, None, True),
        "evader-1": (evader, 1, False),
    }
    for name in args.runs:
        if name == "honest":
            continue
        bot, capacity, at_once = bots[name]
        cheats.MemoryBot.memory.clear()
        started = time.perf_counter()
        run = play(bot, capacity, args.deals, args.hands, args.seed, at_once=at_once)
        print(report(name, run, honest, args.hands, time.perf_counter() - started, args.base), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
