#!/usr/bin/env python3
"""Hosted bots: what the sandbox costs (issue #23).

    .venv/bin/python bench/hosted.py [--starts 20] [--deals 2] [--hands 20] [--flight 40]

Reported in one run, each beside its baseline measured in the same process:

1. **start-up**: from starting a hosted bot to its first answer (a GetInfo), median and p95
   over ``--starts`` sandboxes; beside it the same interpreter serving the same bot with the
   same imports on a Unix socket without the sandbox (a bare start).
2. **throughput**: a 2-seat round-robin of four uploaded bots (the house bots, uploaded as an
   author would), a fresh sandbox per match, ``--hands`` hands a match, on the embedded pool;
   then the same four bots dialled over gRPC (each served once by its own process, as authors
   run them). Matches per second, and their ratio (goal: at least 0.5).
3. **memory** per hosted bot: the control group's peak after a match (or, without control
   groups, the resident size of its processes).
4. **in flight**: ``--flight`` sandboxes started at once and held: their total memory, and
   what that gives on a 2-core, 24 GB machine (memory bound) beside the start-up CPU per
   match (the CPU bound on starting matches).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from arena.bots.owners import create_owner  # noqa: E402
from arena.bots.registry import register_bot  # noqa: E402
from arena.bots.uploaded import submit_upload  # noqa: E402
from arena.config import Settings, load_settings  # noqa: E402
from arena.runtime.backends import EmbeddedBackend  # noqa: E402
from arena.runtime.driver import run_tournament  # noqa: E402
from arena.sandbox.launch import Launch  # noqa: E402
from arena.sandbox.runner import Sandbox  # noqa: E402
from arena.store.db import dispose_engines, session_scope  # noqa: E402
from arena.store.secrets import arena_secret, set_secret  # noqa: E402
from arena.tournaments.lifecycle import create_tournament  # noqa: E402
from sdk.fresh_process import serve_in_fresh_process  # noqa: E402
from sdk.grpc_player import GrpcPlayer  # noqa: E402
from sdk.packing import pack  # noqa: E402

BOTS = {
    "greedy": "bots.greedy:GreedyBot",
    "heuristic": "bots.heuristic:HeuristicBot",
    "random": "bots.random_bot:RandomBot",
    "greedy2": "bots.greedy:GreedyBot",
}
BARE = """
import os, sys, signal
sys.path[:0] = [{code!r}]
from sdk.players import load_bot_class
from sdk.server import start_server
running = start_server(load_bot_class({entry!r}), unix_socket={sock!r}, max_workers=4)
signal.signal(signal.SIGTERM, lambda *_: running.stop(0))
running.server.wait_for_termination()
"""


def project(root: Path, name: str, entry: str) -> Path:
    folder = root / "projects" / name
    shutil.copytree(_HERE.parent / "bots", folder / "bots", ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "tonk.toml").write_text(f'[bot]\nentry = "{entry}"\n')
    return folder


def bundle(root: Path, entry: str) -> Path:
    folder = root / "bundle"
    (folder / "deps").mkdir(parents=True, exist_ok=True)
    if not (folder / "code").exists():
        shutil.copytree(
            _HERE.parent / "bots", folder / "code" / "bots", ignore=shutil.ignore_patterns("__pycache__")
        )
    for path in [root, folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def first_answer(address: str) -> bool:
    """True once the bot at ``address`` answers GetInfo (describe() gives no protocol
    version for a bot that could not be asked)."""
    player = GrpcPlayer(address)
    try:
        return bool(player.describe().get("protocol_version"))
    finally:
        player.close()


def startup(root: Path, starts: int) -> tuple[list[float], list[float], list[float]]:
    """Seconds to a first answer, sandboxed and bare; and the sandboxes' start-up CPU."""
    folder = bundle(root, BOTS["greedy"])
    launch = Launch("python", entry=BOTS["greedy"])
    boxed: list[float] = []
    bare: list[float] = []
    cpu: list[float] = []
    Sandbox(folder, launch).start().close()  # the runtime is staged once per machine: not a match's cost
    for i in range(starts):
        started = time.perf_counter()
        box = Sandbox(folder, launch).start()
        try:
            if not first_answer(box.address):
                raise RuntimeError("a sandboxed bot did not answer once started")
            boxed.append(time.perf_counter() - started)
            cpu.append(box.cpu_ns() / 1e9)
        finally:
            box.close()
        sock = root / f"bare-{i}.sock"
        started = time.perf_counter()
        code = BARE.format(code=str(folder / "code"), entry=BOTS["greedy"], sock=str(sock))
        proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)
        try:
            while not sock.exists():
                time.sleep(0.002)
            give_up = time.monotonic() + 30
            while not first_answer(f"unix:{sock}"):
                if time.monotonic() > give_up or proc.poll() is not None:
                    raise RuntimeError("the bare interpreter's bot never answered")
                time.sleep(0.002)
            bare.append(time.perf_counter() - started)
        finally:
            proc.kill()
            proc.wait()
    return boxed, bare, cpu


def tournament(url: str, ids: list[int], deals: int, hands: int) -> tuple[float, int]:
    with session_scope(url) as session:
        tid = create_tournament(
            session,
            name="bench",
            bot_ids=ids,
            table_sizes=[2],
            deals_per_table=deals,
            hands_per_match=hands,
            seed=2026,
            settings=Settings(allowed_bot_hosts=("127.0.0.1",)),
        ).id
    backend = EmbeddedBackend(url, 2)
    try:
        started = time.perf_counter()
        progress = run_tournament(url, tid, backend, poll_s=0.05)
        elapsed = time.perf_counter() - started
    finally:
        backend.close()
    assert progress.failed == 0 and progress.done == progress.total, progress
    return elapsed, progress.total


def throughput(root: Path, deals: int, hands: int) -> tuple[float, float, int]:
    settings = load_settings()
    url = f"sqlite:///{root}/bench.sqlite"
    with session_scope(url) as session:
        owner, _ = create_owner(session, "author")
        uploaded = [
            submit_upload(
                session, owner, f"up-{name}", pack(project(root, name, entry)), settings=settings
            ).id
            for name, entry in BOTS.items()
        ]
        deal_secret = arena_secret(session, "deal")
    hosted_s, matches = tournament(url, uploaded, deals, hands)
    # The dialled run plays the same deals: a store of its own (an arena deals a seed once,
    # docs/dealing.md) given the first store's deal secret.
    url = f"sqlite:///{root}/bench-dialled.sqlite"
    with _Served(list(BOTS.values())) as addresses:
        with session_scope(url) as session:
            set_secret(session, "deal", deal_secret)
            owner, _ = create_owner(session, "dialler")
            dial = Settings(allowed_bot_hosts=("127.0.0.1",))
            dialled = [
                register_bot(session, owner, f"dial-{name}", address, settings=dial, check=False).id
                for name, address in zip(BOTS, addresses, strict=True)
            ]
        dialled_s, _ = tournament(url, dialled, deals, hands)
    dispose_engines()
    return matches / hosted_s, matches / dialled_s, matches


class _Served:
    def __init__(self, targets: list[str]):
        self.targets = targets
        self.contexts = [serve_in_fresh_process(t) for t in targets]

    def __enter__(self) -> list[str]:
        return [c.__enter__() for c in self.contexts]

    def __exit__(self, *exc: object) -> None:
        for c in self.contexts:
            c.__exit__(None, None, None)


def memory(root: Path) -> tuple[float, str]:
    folder = bundle(root, BOTS["greedy"])
    with Sandbox(folder, Launch("python", entry=BOTS["greedy"])) as box:
        first_answer(box.address)
        peak = box.memory_peak()
        how = "control group peak"
        if not peak:
            from arena import processes

            pids = [p.pid for p in processes.descendants(box.process.pid if box.process else 0)]
            peak = sum(
                int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
                for pid in pids
            )
            how = "resident size"
    return peak / 2**20, how


def in_flight(root: Path, count: int) -> tuple[float, float, float]:
    """(MB per sandbox held, seconds to start them all, sandboxes a 24 GB machine holds)."""
    folder = bundle(root, BOTS["greedy"])
    launch = Launch("python", entry=BOTS["greedy"])
    boxes = [Sandbox(folder, launch) for _ in range(count)]
    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda b: b.start(), boxes))
        took = time.perf_counter() - started
        for box in boxes:
            first_answer(box.address)
        total = 0
        for box in boxes:
            if box.group is not None:
                total += (
                    int((box.group.dirs[0] / "memory.usage_in_bytes").read_text())
                    if not box.group.v2
                    else int((box.group.dirs[0] / "memory.current").read_text())
                )
        per = total / count / 2**20
    finally:
        for box in boxes:
            box.close()
    return per, took, (24 * 1024 * 0.8) / per if per else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--deals", type=int, default=2, help="deals per table of the round-robins")
    parser.add_argument("--hands", type=int, default=20, help="hands per match")
    parser.add_argument("--flight", type=int, default=40, help="sandboxes held at once")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hosted-") as tmp:
        root = Path(tmp)
        root.chmod(0o755)
        os.environ["TONK_DATA_DIR"] = str(root / "data")
        boxed, bare, cpu = startup(root / "startup", args.starts)
        box_ms, bare_ms, cpu_ms = (statistics.median(v) * 1000 for v in (boxed, bare, cpu))
        print(
            f"start-up to first answer ({args.starts} starts): sandboxed median {box_ms:.0f} ms, "
            f"p95 {pct(boxed, 0.95) * 1000:.0f} ms; bare interpreter, same imports: median "
            f"{bare_ms:.0f} ms, p95 {pct(bare, 0.95) * 1000:.0f} ms; ratio {box_ms / bare_ms:.2f}x; "
            f"start-up CPU {cpu_ms:.0f} ms",
            flush=True,
        )
        hosted, dialled, matches = throughput(root / "rr", args.deals, args.hands)
        print(
            f"round-robin of 4 bots, {matches} matches of {args.hands} hands: hosted (fresh sandbox "
            f"per match) {hosted:.2f} matches/s, dialled over gRPC {dialled:.2f} matches/s, "
            f"ratio {hosted / dialled:.2f} (goal >= 0.5)",
            flush=True,
        )
        mb, how = memory(root / "mem")
        print(f"memory per hosted bot: {mb:.1f} MB ({how})", flush=True)
        per, took, holds = in_flight(root / "flight", args.flight)
        print(
            f"{args.flight} sandboxes held at once: {per:.1f} MB each, all started in {took:.1f} s; "
            f"a 24 GB machine holds about {holds:.0f} by memory (80% of it); at "
            f"{statistics.median(cpu) * 1000:.0f} ms of CPU a start, 2 cores start at most "
            f"{2 / statistics.median(cpu):.0f} matches/s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
