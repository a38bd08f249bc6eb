#!/usr/bin/env python3
"""Hosted bots: what the sandbox costs (issues #23, #37).

    .venv/bin/python bench/hosted.py [--starts 20] [--rounds 3] [--deals 2] [--hands 20]
        [--flight 40] [--cold]

Reported in one run, each beside its baseline measured in the same process:

1. **start-up to first answer** (a GetInfo), median and p95 over ``--starts`` starts of each
   kind, interleaved: the default (a match takes the bot's spare, started ahead of it:
   arena/sandbox/spares.py; the spare has finished starting, as it has while a match plays),
   a sandbox forked from the bot's template when asked (arena/sandbox/template.py:
   ``TONK_SANDBOX_SPARES=0``), a sandbox of its own started when asked (both set to 0: the
   path before issue #37), and the same interpreter serving the same bot with the same
   imports without the sandbox (bare); and the start-up CPU of the forked and own starts.
2. **throughput**: a 2-seat round-robin of four uploaded bots (the house bots, uploaded as an
   author would), a fresh sandbox per match, ``--hands`` hands a match, on the embedded pool;
   and the same four bots dialled over gRPC (each served once by its own process, as authors
   run them), on the same deals. Hosted and dialled alternate (ABAB, ``--rounds`` pairs, each
   pair its own seed), so load drifting during the run lands in both halves of a pair; the
   hosted/dialled ratio of matches per second is reported per pair, min/median/max (goal: at
   least 0.8). Each store keeps one pool process across the rounds, after an unmeasured
   warm-up pair, as a worker that has played these bots before (``--cold``: a pool per
   round-robin, each bot's first match then waiting for its template to start).
3. **persistence probe**, in the same run: ``--probes`` matches in a row of a bot that plants
   files (``/tmp``, ``/dev/shm``, ``/run/tonk``), a process, an abstract socket and memory at
   its match start and looks for an earlier match's: none may be found.
4. **memory** per hosted bot: the control group's peak after a match (or, without control
   groups, the resident size of its processes).
5. **in flight**: ``--flight`` sandboxes started at once and held: their total memory, and
   what that gives on a 2-core, 24 GB machine (memory bound) beside the start-up CPU per
   match (the CPU bound on starting matches).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from arena.bots.owners import create_owner  # noqa: E402
from arena.bots.registry import register_bot  # noqa: E402
from arena.bots.uploaded import submit_upload  # noqa: E402
from arena.config import Settings, load_settings  # noqa: E402
from arena.play.hosted import HostedPlayer  # noqa: E402
from arena.processes import ensure_watched  # noqa: E402
from arena.runtime.backends import EmbeddedBackend  # noqa: E402
from arena.runtime.driver import run_tournament  # noqa: E402
from arena.sandbox.launch import Launch  # noqa: E402
from arena.sandbox.limits import Limits  # noqa: E402
from arena.sandbox.runner import Sandbox  # noqa: E402
from arena.sandbox.spares import SPARES  # noqa: E402
from arena.sandbox.template import TEMPLATES  # noqa: E402
from arena.store.db import dispose_engines, session_scope  # noqa: E402
from arena.store.secrets import arena_secret, set_secret  # noqa: E402
from arena.tournaments.lifecycle import create_tournament  # noqa: E402
from sdk.bot import MatchInfo  # noqa: E402
from sdk.fresh_process import serve_in_fresh_process  # noqa: E402
from sdk.grpc_player import GrpcPlayer  # noqa: E402
from sdk.packing import pack  # noqa: E402
from sdk.rules import Rules  # noqa: E402

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
#: The persistence probe (tests/arena/play/test_hosted_spares.py checks that it finds what it
#: planted when the sandbox is kept): at each match start it reports what it finds of an
#: earlier match ("PROBE <match>: clean", or "PROBE <match>: found tmp shm ..."), then plants
#: all of it ("PROBE <match>: planted").
PROBE = """
import builtins, os, socket, subprocess, sys
from sdk.bot import Bot

MARK = "tonk-probe"
FILES = {"tmp": "/tmp/" + MARK, "shm": "/dev/shm/" + MARK, "run": "/run/tonk/" + MARK}

def earlier():
    found = [what for what, path in FILES.items() if os.path.exists(path)]
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and (MARK + "-sleeper").encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                found.append("process")
                break
        except OSError:
            pass
    if getattr(builtins, "_tonk_probe", False) or os.environ.get("TONK_PROBE"):
        found.append("memory")
    return found

class ProbeBot(Bot):
    name = "probe"
    def on_match_start(self, info):
        found = earlier()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:  # an abstract socket: it lives as long as its network namespace holds it
            sock.bind("\\0" + MARK)
            sock.listen(1)
            builtins._tonk_probe_socket = sock
        except OSError:
            found.append("socket")
        print(f"PROBE {info.match_id}: " + ("found " + " ".join(found) if found else "clean"), flush=True)
        for path in FILES.values():
            with open(path, "w") as f:
                f.write(info.match_id)
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", MARK + "-sleeper"],
                         start_new_session=True)
        builtins._tonk_probe = True
        os.environ["TONK_PROBE"] = info.match_id
        print(f"PROBE {info.match_id}: planted", flush=True)
    def act(self, obs):
        return obs.legal_actions[0]
"""
PROBE_ENTRY = "bot_probe:ProbeBot"
#: Everything the probe plants, which it finds when a sandbox is kept across matches.
PLANTED = frozenset({"tmp", "shm", "run", "process", "memory", "socket"})


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


def probe_bundle(root: Path) -> Path:
    """The persistence probe as a built bundle (``code/bot_probe.py``)."""
    folder = root / "probe"
    (folder / "code").mkdir(parents=True)
    (folder / "deps").mkdir()
    (folder / "code" / "bot_probe.py").write_text(PROBE)
    for path in [root, folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def probe_match(player: HostedPlayer, match_id: str) -> frozenset[str]:
    """One match's start of the probe; what it found of earlier matches (empty: nothing)."""
    info = MatchInfo(match_id=match_id, seat=0, players=("probe", "other"), rules=Rules(), hands=1)
    player.match_start(info)
    mine = f"PROBE {match_id}: "
    # A kept sandbox's output is read by a thread that a loaded machine can leave behind the
    # bot, and its close does not wait for it (a match's box's does): wait for this match's
    # last line, as long as a start may take.
    deadline = time.monotonic() + 30
    box = player.box
    while box is not None and mine + "planted" not in box.output() and time.monotonic() < deadline:
        time.sleep(0.01)
    player.close()
    output = player.output()
    text = output.text if output is not None else ""
    if mine + "planted" not in text:
        raise RuntimeError(f"the probe did not plant its markers: {text[-500:]}")
    # This match's report (a kept sandbox's output holds its earlier matches' too).
    report = next(x for x in text.splitlines() if x.startswith(mine)).removeprefix(mine)
    return frozenset() if report == "clean" else frozenset(report.removeprefix("found ").split())


def persistence(root: Path, matches: int) -> tuple[int, list[str]]:
    """``matches`` probe matches in a row on the default path: (how many took a spare, what
    any of them found of an earlier one)."""
    folder = probe_bundle(root)
    launch = Launch("python", entry=PROBE_ENTRY)
    hits = SPARES.hits
    found: list[str] = []
    for n in range(matches):
        seen = probe_match(HostedPlayer("probe", lambda: folder, launch), f"probe-{n}")
        if seen:
            found.append(f"match {n}: {' '.join(sorted(seen))}")
        SPARES.wait_started()  # a match lasts longer than a start
    return SPARES.hits - hits, found


def startup(root: Path, starts: int) -> dict[str, list[float]]:
    """Seconds to a first answer of each kind of start, interleaved: "spare" (the default: the
    match takes a sandbox started ahead of it), "forked" (forked from the bot's template when
    asked), "own" (a sandbox of its own started when asked), "bare"; and the CPU of the forked
    and own starts ("forked_cpu", "own_cpu")."""
    folder = bundle(root, BOTS["greedy"])
    launch = Launch("python", entry=BOTS["greedy"])
    limits = Limits.from_env()
    got: dict[str, list[float]] = {k: [] for k in ("spare", "forked", "own", "bare", "forked_cpu", "own_cpu")}
    Sandbox(folder, launch).start().close()  # the runtime is staged once per machine: not a match's cost
    SPARES.take(folder, launch, limits).close()  # the bot's first match on this worker starts its spare

    def timed(kind: str, start: Callable[[], Sandbox | None]) -> None:
        started = time.perf_counter()
        box = start()
        if box is None:  # not taken here (TONK_SANDBOX_TEMPLATES=0, no control groups)
            return
        try:
            freezer = box.freezer  # a spare waits frozen until its match's first call
            with freezer.awake() if freezer is not None else contextlib.nullcontext():
                if not first_answer(box.address):
                    raise RuntimeError("a sandboxed bot did not answer once started")
            got[kind].append(time.perf_counter() - started)
            if f"{kind}_cpu" in got:
                got[f"{kind}_cpu"].append(box.cpu_ns() / 1e9)
        finally:
            box.close()

    for i in range(starts):
        SPARES.wait_started()  # its spare has started, as it has while a match plays
        timed("spare", lambda: SPARES.take(folder, launch, limits))
        SPARES.wait_started()  # not starting while the next is measured
        timed("forked", lambda: TEMPLATES.start(folder, launch, limits))
        timed("own", lambda: Sandbox(folder, launch, limits=limits).start())
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
            got["bare"].append(time.perf_counter() - started)
        finally:
            proc.kill()
            proc.wait()
    SPARES.close_all()
    return got


def tournament(
    url: str, ids: list[int], deals: int, hands: int, seed: int, backend: EmbeddedBackend | None = None
) -> tuple[float, int]:
    """(seconds, matches) of one round-robin, on ``backend`` (kept by the caller: a worker that
    has played these bots before) or on a pool of its own (started and closed here)."""
    with session_scope(url) as session:
        tid = create_tournament(
            session,
            name=f"bench-{seed}",
            bot_ids=ids,
            table_sizes=[2],
            deals_per_table=deals,
            hands_per_match=hands,
            seed=seed,
            settings=Settings(allowed_bot_hosts=("127.0.0.1",)),
        ).id
    own = backend is None
    pool = EmbeddedBackend(url, 2) if backend is None else backend
    try:
        started = time.perf_counter()
        progress = run_tournament(url, tid, pool, poll_s=0.05)
        elapsed = time.perf_counter() - started
    finally:
        if own:
            pool.close()
    assert progress.failed == 0 and progress.done == progress.total, progress
    return elapsed, progress.total


def throughput(
    root: Path, rounds: int, deals: int, hands: int, cold: bool = False
) -> tuple[list[float], list[float], int]:
    """Matches per second, hosted and dialled, of ``rounds`` pairs played alternately (ABAB),
    each pair on its own seed; and the matches of one tournament.

    Each store's matches are played by one pool process kept for all rounds, as a worker
    lives across tournaments, after an unmeasured warm-up pair (its bots' templates and
    spares started, as on a worker that has played them before). ``cold``: a pool of its own
    per tournament, whose every bot's first match starts its template (that start is
    measured on its own in the start-up figures)."""
    settings = load_settings()
    hosted_url = f"sqlite:///{root}/bench.sqlite"
    with session_scope(hosted_url) as session:
        owner, _ = create_owner(session, "author")
        uploaded = [
            submit_upload(
                session, owner, f"up-{name}", pack(project(root, name, entry)), settings=settings
            ).id
            for name, entry in BOTS.items()
        ]
        deal_secret = arena_secret(session, "deal")
    # The dialled runs play the same deals: a store of their own (an arena deals a seed once,
    # docs/dealing.md) given the first store's deal secret.
    dialled_url = f"sqlite:///{root}/bench-dialled.sqlite"
    hosted: list[float] = []
    dialled: list[float] = []
    matches = 0
    with _Served(list(BOTS.values())) as addresses:
        with session_scope(dialled_url) as session:
            set_secret(session, "deal", deal_secret)
            owner, _ = create_owner(session, "dialler")
            dial = Settings(allowed_bot_hosts=("127.0.0.1",))
            dialled_ids = [
                register_bot(session, owner, f"dial-{name}", address, settings=dial, check=False).id
                for name, address in zip(BOTS, addresses, strict=True)
            ]
        pools = (None, None) if cold else (EmbeddedBackend(hosted_url, 2), EmbeddedBackend(dialled_url, 2))
        try:
            if not cold:  # the warm-up pair
                tournament(hosted_url, uploaded, 1, hands, 2025, pools[0])
                tournament(dialled_url, dialled_ids, 1, hands, 2025, pools[1])
            for r in range(rounds):
                seed = 2026 + r
                took, matches = tournament(hosted_url, uploaded, deals, hands, seed, pools[0])
                hosted.append(matches / took)
                took, _ = tournament(dialled_url, dialled_ids, deals, hands, seed, pools[1])
                dialled.append(matches / took)
                print(
                    f"  pair {r + 1}: hosted {hosted[-1]:.2f} matches/s, dialled {dialled[-1]:.2f}, "
                    f"ratio {hosted[-1] / dialled[-1]:.2f}",
                    flush=True,
                )
        finally:
            for pool in pools:
                if pool is not None:
                    pool.close()
    dispose_engines()
    return hosted, dialled, matches


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


def ms(values: list[float]) -> str:
    if not values:
        return "not taken"
    return f"median {statistics.median(values) * 1000:.0f} ms, p95 {pct(values, 0.95) * 1000:.0f} ms"


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms" if values else "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3, help="hosted/dialled pairs of round-robins")
    parser.add_argument("--deals", type=int, default=2, help="deals per table of the round-robins")
    parser.add_argument("--hands", type=int, default=20, help="hands per match")
    parser.add_argument("--probes", type=int, default=4, help="persistence probe matches in a row")
    parser.add_argument("--flight", type=int, default=40, help="sandboxes held at once")
    parser.add_argument(
        "--cold", action="store_true", help="a pool process per round-robin (cold templates)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hosted-") as tmp:
        root = Path(tmp)
        root.chmod(0o755)
        os.environ["TONK_DATA_DIR"] = str(root / "data")
        got = startup(root / "startup", args.starts)
        bare = statistics.median(got["bare"])
        ratios = ", ".join(
            f"{k}/bare {statistics.median(got[k]) / bare:.2f}x" for k in ("spare", "forked", "own") if got[k]
        )
        print(
            f"start-up to first answer ({args.starts} starts of each, interleaved): default (a spare) "
            f"{ms(got['spare'])} (goal: median < 30 ms); forked from the template when asked "
            f"{ms(got['forked'])}; a sandbox of its own {ms(got['own'])}; bare interpreter, same "
            f"imports: {ms(got['bare'])}; {ratios}; start-up CPU: forked median "
            f"{median_ms(got['forked_cpu'])}, own {median_ms(got['own_cpu'])}",
            flush=True,
        )
        hosted, dialled, matches = throughput(root / "rr", args.rounds, args.deals, args.hands, args.cold)
        ratios = sorted(h / d for h, d in zip(hosted, dialled, strict=True))
        pools = "a pool per round-robin (cold)" if args.cold else "one pool per store across rounds, warmed"
        print(
            f"round-robin of 4 bots, {matches} matches of {args.hands} hands, {args.rounds} hosted/dialled "
            f"pairs (ABAB, {pools}): hosted (fresh sandbox per match) median {statistics.median(hosted):.2f} "
            f"matches/s, "
            f"dialled over gRPC median {statistics.median(dialled):.2f}; hosted/dialled ratio min "
            f"{ratios[0]:.2f}, median {statistics.median(ratios):.2f}, max {ratios[-1]:.2f} (goal >= 0.8)",
            flush=True,
        )
        took, found = persistence(root / "probe", args.probes)
        verdict = "found nothing of an earlier match" if not found else "FOUND " + "; ".join(found)
        print(
            f"persistence probe, {args.probes} matches in a row ({took} took a spare): {verdict} "
            f"(looked for: {', '.join(sorted(PLANTED))})",
            flush=True,
        )
        mb, how = memory(root / "mem")
        print(f"memory per hosted bot: {mb:.1f} MB ({how})", flush=True)
        per, took_s, holds = in_flight(root / "flight", args.flight)
        cpu = statistics.median(got["forked_cpu"] or got["own_cpu"])
        print(
            f"{args.flight} sandboxes held at once: {per:.1f} MB each, all started in {took_s:.1f} s; "
            f"a 24 GB machine holds about {holds:.0f} by memory (80% of it); at "
            f"{cpu * 1000:.0f} ms of CPU a start, 2 cores start at most {2 / cpu:.0f} sandboxes/s",
            flush=True,
        )
        SPARES.close_all()
        TEMPLATES.close_all()
    return 1 if found else 0


if __name__ == "__main__":
    # The watchdog, not spawn, for the bare interpreter it starts: its start is timed against
    # the sandbox's, and a parent-death signal would fork it another way (arena/processes.py).
    ensure_watched()
    raise SystemExit(main())
