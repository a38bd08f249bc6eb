"""``tonk play BOT BOT [BOT...]``: a seeded match under the arena's referee, on this machine."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sdk.compare import compare_pairs
from sdk.dealing import derive_seed, new_seed
from sdk.players import PlayerSpecError, make_player
from sdk.progress import ProgressBar
from sdk.referee import FaultKind, HandLog, LocalPlayer, Player, RefereeConfig, play_match
from sdk.rules import Rules


def register(subparsers: Any) -> None:
    play = subparsers.add_parser(
        "play", help="play a match between bots (names, MODULE:CLASS or HOST:PORT)",
        epilog="Exit status: 0 when the match ran its course, 1 when a seat forfeited (too many faults) "
        "or its connection was lost, 2 for bad arguments.",
    )  # fmt: skip
    play.add_argument(
        "bots", nargs="+", metavar="BOT",
        help="2 to 6 seats, in seat order: a house bot (random), MODULE:CLASS, or HOST:PORT of a running bot",
    )  # fmt: skip
    play.add_argument(
        "--hands", type=int, default=None,
        help="hands in the match (default 100; with --duplicate, hands per match, default 20)",
    )  # fmt: skip
    play.add_argument(
        "--duplicate", action="store_true",
        help="two bots A B: play each deal twice with the seats swapped on the same cards and say "
        "whether A or B is better (chips/100 hands and Elo, with 95%% intervals)",
    )  # fmt: skip
    play.add_argument(
        "--deals", type=int, default=None, help="with --duplicate: deals (pairs) to play (default 100)"
    )
    play.add_argument("--seed", type=int, default=None, help="match seed (default: random, printed)")
    play.add_argument(
        "--deadline-ms", type=int, default=1000, help="time a bot has for each decision (default 1000)"
    )
    play.add_argument("--quiet", action="store_true", help="no progress bar")
    play.set_defaults(func=run_play)



def run_play(args: argparse.Namespace) -> int:
    if args.hands is None:
        args.hands = 20 if args.duplicate else 100
    if args.duplicate:
        return run_duplicate(args)
    if args.deals is not None:  # silently playing one match would look like an answer
        print("tonk play: --deals counts duplicate pairs: add --duplicate (and give 2 bots)", file=sys.stderr)
        return 2
    if not 2 <= len(args.bots) <= 6:
        print(f"tonk play: a match needs 2 to 6 bots, got {len(args.bots)}", file=sys.stderr)
        return 2
    if args.hands < 1:
        print(f"tonk play: --hands must be at least 1, got {args.hands}", file=sys.stderr)
        return 2
    started = _start(args)
    if isinstance(started, int):
        return started
    players, seed = started
    names = [f"{i}:{p.describe()['name']}" for i, p in enumerate(players)]

    bar = ProgressBar(args.hands, "hands ", enabled=None if not args.quiet else False)

    def progress(log: HandLog, scores: list[int]) -> None:
        bar.advance()

    try:
        result = play_match(
            players,
            seed,
            args.hands,
            names=names,
            rules=Rules(),
            config=RefereeConfig(decision_deadline_ms=args.deadline_ms),
            on_hand=progress,
        )
    finally:
        for p in players:
            p.close()
    bar.close()
    played = len(result.hands)
    hands = f"{played} hands" if played == args.hands else f"{played} of {args.hands} hands"
    print(f"seed {seed}, {hands}, {result.decisions} decisions")
    print(f"{'seat':<28} {'score':>8} {'per hand':>9} {'wins':>6} {'faults':>7}")
    for seat, name in enumerate(names):
        wins = sum(1 for h in result.hands if h.record.outcome and seat in h.record.outcome["winners"])
        faults = sum(1 for f in result.faults if f.seat == seat)
        per_hand = result.scores[seat] / max(1, args.hands)
        print(f"{name:<28} {result.scores[seat]:>8} {per_hand:>9.3f} {wins:>6} {faults:>7}")
    for fault in result.faults:
        print(f"fault: seat {fault.seat} hand {fault.hand_index}: {fault.kind.value}: {fault.reason}")
    _print_tracebacks(names, players)
    failed = False
    if result.forfeited is not None:  # the match did not run its course: a failed run
        seat = result.forfeited
        count = sum(1 for f in result.faults if f.seat == seat)
        print(f"tonk play: {names[seat]} forfeited after {count} faults; the {result.hands_forfeited} "
              "hands not played are charged to it", file=sys.stderr)  # fmt: skip
        failed = True
    lost = sorted({names[f.seat] for f in result.faults if f.kind is FaultKind.UNREACHABLE})
    if lost:  # a bot that went away is a failed run, not a result
        print(f"tonk play: lost the connection to {', '.join(lost)}: the scores above are not a result",
              file=sys.stderr)  # fmt: skip
        failed = True
    return 1 if failed else 0


def run_duplicate(args: argparse.Namespace) -> int:
    """``tonk play A B --duplicate``: each deal played as A-B and B-A from one seed, then the
    paired comparison (sdk.compare). Neither match reveals the seed or the other seat's cards
    (``reveal=False``), as the arena plays a duplicate deal's rotations."""
    if args.deals is None:
        args.deals = 100
    if len(args.bots) != 2:
        print(f"tonk play: --duplicate compares 2 bots (A B), got {len(args.bots)}", file=sys.stderr)
        return 2
    if args.hands < 1 or args.deals < 1:
        print(f"tonk play: --hands and --deals must be at least 1, got {args.hands} and {args.deals}",
              file=sys.stderr)  # fmt: skip
        return 2
    started = _start(args)
    if isinstance(started, int):
        return started
    players, seed = started
    labels = [f"{side}:{p.describe()['name']}" for side, p in zip("AB", players, strict=True)]
    config = RefereeConfig(decision_deadline_ms=args.deadline_ms)
    bar = ProgressBar(2 * args.deals, "matches ", enabled=None if not args.quiet else False)
    a_chips: list[tuple[int, int]] = []
    b_chips: list[tuple[int, int]] = []
    failure = None
    try:
        for deal in range(args.deals):
            deal_seed = derive_seed(seed, f"deal{deal}")
            scores = []
            for order in ((0, 1), (1, 0)):  # the same cards, each bot in each seat once
                result = play_match(
                    [players[i] for i in order], deal_seed, args.hands, match_id=f"deal{deal}",
                    names=[labels[i] for i in order], rules=Rules(), config=config, reveal=False,
                )  # fmt: skip
                bar.advance()
                if result.faults:
                    fault = result.faults[0]
                    failure = (f"deal {deal}: {labels[order[fault.seat]]} {fault.kind.value} in hand "
                               f"{fault.hand_index}: {fault.reason}")  # fmt: skip
                    break
                scores.append({order[seat]: chips for seat, chips in enumerate(result.scores)})
            if failure:
                break
            a_chips.append((scores[0][0], scores[1][0]))
            b_chips.append((scores[0][1], scores[1][1]))
    finally:
        for p in players:
            p.close()
        bar.close()
    print(f"seed {seed}; A = {args.bots[0]}, B = {args.bots[1]}")
    if failure:  # a faulted match's chips measure the fault, not the bots
        _print_tracebacks(labels, players)
        print(f"tonk play: {failure}; no comparison from {len(a_chips)} complete deals", file=sys.stderr)
        return 1
    for line in compare_pairs(a_chips, b_chips, args.hands).lines("A", "B"):
        print(line)
    return 0


def _print_tracebacks(names: list[str], players: list[Player]) -> None:
    """The traceback of each in-process seat's first crash, as ``tonk check`` shows a served
    bot's: the fault line has only the exception's message, not where it was raised."""
    for name, player in zip(names, players, strict=True):
        if isinstance(player, LocalPlayer) and player.tracebacks:
            print(f"tonk play: {name} crashed; the first time:", file=sys.stderr)
            print(player.tracebacks[0].rstrip(), file=sys.stderr)


def _unreachable(specs: list[str]) -> str | None:
    """Why a HOST:PORT among ``specs`` cannot be played (nothing answers there), or None.
    A bot without the health service still plays: only an answer at all is required."""
    from sdk.players import HOUSE_BOTS, is_address

    for spec in dict.fromkeys(specs):
        if spec in HOUSE_BOTS or not is_address(spec):
            continue
        from sdk.admission import AdmissionError, check_health

        try:
            check_health(spec, timeout_s=3.0)
        except AdmissionError as exc:
            if exc.code == "bot_unreachable":
                return (f"nothing answers at {spec}: is `tonk serve` (or your bot's server) running, "
                        "listening on that host and port?")  # fmt: skip
    return None


def _start(args: argparse.Namespace) -> tuple[list[Player], int] | int:
    """The players ``args.bots`` name and the seed to deal from, or the exit code."""
    players = _players(args.bots)
    if isinstance(players, int):
        return players
    return players, new_seed() if args.seed is None else args.seed


def _players(specs: list[str]) -> list[Player] | int:
    """The players ``specs`` name, or the exit code after saying why not (2: a bad spec,
    1: a bot that cannot be reached)."""
    try:
        players = [make_player(spec) for spec in specs]
    except PlayerSpecError as exc:
        print(f"tonk play: {exc}", file=sys.stderr)
        return 2
    unreachable = _unreachable(specs)
    if unreachable:
        for p in players:
            p.close()
        print(f"tonk play: {unreachable}", file=sys.stderr)
        return 1
    return players
