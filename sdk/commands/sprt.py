"""``tonk sprt V2 V1 --arena URL``: "is my V2 better than my V1?" as a sequential test in an
arena, over its HTTP API, with an owner's token (only the SDK needed):

    tonk sprt my-bot-v2 my-bot --arena https://arena.example.org --token "$TOKEN"
    tonk sprt --watch 42 --arena URL     # watch a test again (after Ctrl-C)
    tonk sprt --stop 42 --arena URL      # stop it: no more pairs start

V2 and V1 are two of your own active bots (two versions served at once under two names, or
uploaded). The arena plays them heads-up in duplicate pairs until the test decides
(arena/tournaments/sprt.py); this prints a progress line as the pairs come in, then the verdict
with the estimate of V2 - V1 and its 95% interval, the final LLR between the test's fixed
bounds (as the test's page shows it), and the page::

    my-bot-v2 - my-bot = +31 +/- 22 Elo [+9, +53]: accepted H1 (better by >= 20 Elo) after 120 pairs
    final: 120 pairs, LLR 3.04 in [-3.00, 3.00]

The progress line says when the test next decides ("decides at 56 pairs"): only at the end of
a batch, so in between the LLR may stray past a bound and come back. A test stopped with
``--stop`` ends, for ``--watch``, once the pairs being played are in.

The arena's operator bounds owners' tests (pairs per test, hands per match, tests at once and
per day); a test beyond them is refused, naming the bound. Ctrl-C stops watching, not the test:
it plays on, and the lines to watch it again or stop it are printed.

The API: ``POST /api/v1/sprt`` ``{"new", "old", "elo0", "elo1", "alpha", "beta", "batch",
"hands_per_match", "max_pairs"}`` -> 201 ``{"tournament": {"id", "status", "sprt", "url"}}``;
``GET /api/v1/tournaments/<id>/progress`` (its ``sprt`` state); ``POST /api/v1/sprt/<id>/stop``.

Without ``--arena`` (and no ``TONK_ARENA``, nor an arena ``tonk login`` remembered), where the
arena is installed, ``tonk sprt`` is the operator's form that works on the store directly
(arena/commands/tournament.py: it adds its options to this command).

Exit status: 0 decided (H1 or H0: either is an answer), or stopped with ``--stop``; 1 the
arena refused, failed or could not be reached; 2 bad usage; 3 undecided (max pairs reached,
or the test was stopped); 130 interrupted (the test plays on).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from sdk.commands.submit import API_PREFIX, _call, _common, _target
from sdk.compare import EloEstimate
from sdk.login import remembered_arena

PROG = "tonk sprt"
#: Seconds between two looks at the test's state.
DEFAULT_POLL_S = 2.0
#: Exit status of a test that ended undecided (max pairs, or stopped).
UNDECIDED = 3


def sprt_parser(subparsers: Any) -> argparse.ArgumentParser:
    """The ``tonk sprt`` parser, made with the options both forms share if it is not there
    yet: the SDK's (this module) and the operator's (arena/commands/tournament.py) are one
    command."""
    parser: argparse.ArgumentParser | None = subparsers.choices.get("sprt")
    if parser is not None:
        return parser
    parser = subparsers.add_parser(
        "sprt", help="is V2 better than V1? play duplicate pairs until a sequential test decides"
    )
    parser.add_argument("new", metavar="V2", nargs="?", help="the bot under test")
    parser.add_argument("old", metavar="V1", nargs="?", help="the bot it must beat")
    parser.add_argument("--elo0", type=float, default=0.0, help="H0: V2 is no more than this better")
    parser.add_argument("--elo1", type=float, default=20.0, help="H1: V2 is at least this better")
    parser.add_argument("--alpha", type=float, default=0.05, help="chance of accepting H1 wrongly")
    parser.add_argument("--beta", type=float, default=0.05, help="chance of accepting H0 wrongly")
    parser.add_argument("--hands", type=int, default=20, help="hands per match")
    parser.add_argument("--batch", type=int, default=8, help="pairs added at a time")
    parser.add_argument(
        "--max-pairs", type=int, default=None,
        help="stop undecided after this many pairs (default 2000, or the arena's limit if lower)",
    )  # fmt: skip
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    return parser


def register(subparsers: Any) -> None:
    parser = sprt_parser(subparsers)
    parser.add_argument("--watch", type=int, metavar="ID", default=None, help="watch test ID again")
    parser.add_argument("--stop", type=int, metavar="ID", default=None, help="stop test ID (with --arena)")
    parser.add_argument("--poll", type=float, default=DEFAULT_POLL_S, help="seconds between looks")
    _common(parser)
    parser.set_defaults(func=run_sprt)


def run_sprt(args: argparse.Namespace) -> int:
    arena = (args.arena or os.environ.get("TONK_ARENA", "")).strip() or remembered_arena()
    if not arena and args.watch is None and args.stop is None:
        operator = getattr(args, "operator_sprt", None)  # the arena installed: its store
        if operator is not None:
            if args.new is None or args.old is None:
                print(f"{PROG}: name the two bots: tonk sprt V2 V1", file=sys.stderr)
                return 2
            return int(operator(args))
        print(f"{PROG}: no arena: pass --arena URL, set TONK_ARENA, or remember one with "
              "tonk login --arena URL", file=sys.stderr)  # fmt: skip
        return 2
    if (args.watch is not None) + (args.stop is not None) + (args.new is not None) != 1 or (
        args.new is not None and args.old is None
    ):
        print(f"{PROG}: give V2 V1 to start a test, or --watch ID, or --stop ID", file=sys.stderr)
        return 2
    target = _target(args, PROG)
    if target is None:
        return 2
    base, token = target
    if args.stop is not None:
        return _stop(args, base, token)
    if args.watch is not None:
        return _watch(args, base, token, args.watch)
    body: dict[str, Any] = {
        "new": args.new, "old": args.old, "elo0": args.elo0, "elo1": args.elo1, "alpha": args.alpha,
        "beta": args.beta, "batch": args.batch, "hands_per_match": args.hands,
    }  # fmt: skip
    if args.max_pairs is not None:
        body["max_pairs"] = args.max_pairs
    answer = _call(PROG, "POST", base + "/sprt", token, body, args.timeout)
    if answer is None:
        return 1
    test = answer.get("tournament") or {}
    state = test.get("sprt") or {}
    print(
        f"test {test.get('id')}: {args.new} against {args.old}, H0 elo <= {state.get('elo0', args.elo0):g}, "
        f"H1 elo >= {state.get('elo1', args.elo1):g}, alpha {args.alpha:g}, beta {args.beta:g}, "
        f"at most {state.get('max_pairs', '?')} pairs; its page: {test.get('url')}"
    )
    return _follow(args, base, token, int(test.get("id", 0)), args.new, args.old, str(test.get("url")))


def _names(base: str, token: str, tournament_id: int, timeout: float) -> tuple[str, str, str] | None:
    """V2's and V1's names and the page's URL, from the tournament's detail."""
    detail = _call(PROG, "GET", f"{base}/tournaments/{tournament_id}", token, None, timeout)
    if detail is None:
        return None
    t = detail.get("tournament") or {}
    if t.get("kind") != "sprt":
        print(f"{PROG}: tournament {tournament_id} is not a sequential test", file=sys.stderr)
        return None
    new = str(t.get("challenger"))
    old = next((str(e.get("bot")) for e in t.get("entries", []) if e.get("bot") != new), "?")
    return new, old, f"{base.removesuffix(API_PREFIX)}/tournaments/{tournament_id}"


def _watch(args: argparse.Namespace, base: str, token: str, tournament_id: int) -> int:
    names = _names(base, token, tournament_id, args.timeout)
    if names is None:
        return 1
    new, old, url = names
    print(f"test {tournament_id}: {new} against {old}; its page: {url}")
    return _follow(args, base, token, tournament_id, new, old, url)


def _stop(args: argparse.Namespace, base: str, token: str) -> int:
    names = _names(base, token, args.stop, args.timeout)
    if names is None:
        return 1
    answer = _call(PROG, "POST", f"{base}/sprt/{args.stop}/stop", token, {}, args.timeout)
    if answer is None:
        return 1
    new, old, url = names
    state = (answer.get("tournament") or {}).get("sprt") or {}
    print(f"test {args.stop} stopped: no more pairs start (those being played finish and count)")
    print(verdict_line(new, old, state))  # so far: the pairs being played are not in yet
    print(f"its page: {url}")
    return 0


def _follow(
    args: argparse.Namespace, base: str, token: str, tournament_id: int, new: str, old: str, url: str
) -> int:
    """Poll the test until it ends; the progress line on standard error, then the verdict."""
    seen: tuple[Any, ...] | None = None
    tty = sys.stderr.isatty()
    try:
        while True:
            answer = _call(PROG, "GET", f"{base}/tournaments/{tournament_id}/progress", token, None,
                           args.timeout)  # fmt: skip
            if answer is None:
                return 1
            progress = answer.get("progress") or {}
            state = progress.get("sprt") or {}
            status = progress.get("status")
            # A stopped test has ended once the matches being played have finished: they count,
            # and its page shows them (issue #40: the last line and the page disagreed).
            running = (progress.get("matches") or {}).get("running", 0)
            ended = status == "finished" or (status == "paused" and state.get("stopped") and not running)
            shown = (state.get("pairs"), state.get("llr"), status)
            if not args.quiet and shown != seen and not ended:
                line = progress_line(new, old, state) + ("" if status == "running" else f" ({status})")
                print(f"\r{line}" if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True)
                seen = shown
            if ended:
                break
            time.sleep(max(0.05, args.poll))
    except KeyboardInterrupt:
        arena = base.removesuffix(API_PREFIX)
        print(
            f"\nstopped watching; test {tournament_id} plays on. Watch it again: tonk sprt --watch "
            f"{tournament_id} --arena {arena}; stop it: tonk sprt --stop {tournament_id} --arena {arena}",
            file=sys.stderr,
        )
        return 130
    if tty and not args.quiet and seen is not None:
        print(file=sys.stderr)
    print(verdict_line(new, old, state))
    print(final_line(state))
    print(f"its page: {url}")
    return 0 if state.get("verdict") in ("H0", "H1") else UNDECIDED


def _estimate(new: str, old: str, state: dict[str, Any]) -> str:
    est = state.get("estimate")
    if not est:
        return f"{new} - {old}: no pair played yet"
    return EloEstimate(**est).text(new, old)


def _llr(state: dict[str, Any]) -> str:
    lower, upper = state.get("lower", 0.0), state.get("upper", 0.0)
    return f"LLR {state.get('llr', 0.0):.2f} in [{lower:.2f}, {upper:.2f}]"


def progress_line(new: str, old: str, state: dict[str, Any]) -> str:
    """Where the test stands: pairs, LLR between its bounds (fixed for the test), when it next
    decides (only at the end of a batch: in between, the LLR may stray past a bound and come
    back), the estimate so far."""
    look = state.get("next_look")
    when = f", decides at {look} pairs" if look and look != state.get("pairs") else ""
    return f"{state.get('pairs', 0)} pairs, {_llr(state)}{when}; {_estimate(new, old, state)}"


def verdict_text(state: dict[str, Any]) -> str:
    """What the test decided, in words (the state as the API gives it)."""
    return {
        "H1": f"accepted H1 (better by >= {state.get('elo1', 0):g} Elo)",
        "H0": f"accepted H0 (no more than {state.get('elo0', 0):g} Elo better)",
        "inconclusive": "undecided: max pairs reached",
    }.get(state.get("verdict") or "", "stopped undecided" if state.get("stopped") else "undecided so far")


def verdict_line(new: str, old: str, state: dict[str, Any]) -> str:
    """The verdict, always with the estimate of V2 - V1 and its 95% interval: which bound was
    crossed says only whether, the estimate says by how much."""
    return f"{_estimate(new, old, state)}: {verdict_text(state)} after {state.get('pairs', 0)} pairs"


def final_line(state: dict[str, Any]) -> str:
    """The state the test ended in, as its page shows it (the last progress line may be from
    before the last pairs of a batch were in)."""
    return f"final: {state.get('pairs', 0)} pairs, {_llr(state)}"


__all__ = [
    "final_line", "progress_line", "register", "run_sprt", "sprt_parser", "verdict_line", "verdict_text",
]  # fmt: skip
