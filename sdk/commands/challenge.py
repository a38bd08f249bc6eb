"""``tonk challenge MY-BOT OPPONENT``: play a few unrated deals between your bot and any bot
that accepts challenges, now, over the arena's HTTP API with your owner token (only the SDK
needed), and follow them to the end::

    tonk challenge my-bot search --deals 3 --arena https://arena.example.org
    challenge 17: my-bot vs search, 3 deals (6 matches, both seat orders), 20 hands a match, unrated
    finished: my-bot -41, search +41 chips over 6 matches
    its page: https://arena.example.org/tournaments/17

    tonk challenge --off my-bot      # others may no longer challenge my-bot (--on: again)

No rating counts a challenge (one side chose the opponent, the time and the length); both
bots' pages list it. The arena bounds them (deals per challenge, challenges running and per
day, challenges one bot faces at once) and refuses one beyond a bound, naming it.

The API: ``POST /api/v1/challenges`` ``{"bot", "opponent", "deals", "hands_per_match"}`` ->
201 ``{"challenge": {...}, "page"}``; ``GET /api/v1/challenges?bot=NAME``;
``PUT /api/v1/bots/<name>/challenges`` ``{"accept": bool}``.

Exit status: 0 finished (or turned off/on, or started with ``--no-wait``); 1 the arena refused,
failed or could not be reached; 2 bad usage; 130 interrupted (the challenge plays on).
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.parse
from typing import Any

from sdk.commands.submit import _call, _common, _target

PROG = "tonk challenge"
DEFAULT_POLL_S = 1.0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "challenge", help="play a few unrated deals between your bot and any other, now"
    )
    parser.add_argument("bot", metavar="MY-BOT", help="your bot")
    parser.add_argument("opponent", metavar="OPPONENT", nargs="?", help="any bot that accepts challenges")
    parser.add_argument("--deals", type=int, default=2, help="deals, each played in both seat orders")
    parser.add_argument("--hands", type=int, default=20, help="hands per match")
    parser.add_argument("--no-wait", action="store_true", help="start it and return")
    turn = parser.add_mutually_exclusive_group()
    turn.add_argument("--off", action="store_true", help="refuse challenges to MY-BOT from now on")
    turn.add_argument("--on", action="store_true", help="accept challenges to MY-BOT again")
    parser.add_argument("--poll", type=float, default=DEFAULT_POLL_S, help="seconds between looks")
    _common(parser)
    parser.set_defaults(func=run_challenge)


def run_challenge(args: argparse.Namespace) -> int:
    turning = args.off or args.on
    if turning == (args.opponent is not None):
        print(f"{PROG}: give MY-BOT OPPONENT to challenge, or MY-BOT with --off or --on", file=sys.stderr)
        return 2
    target = _target(args, PROG)
    if target is None:
        return 2
    base, token = target
    if turning:
        answer = _call(PROG, "PUT", f"{base}/bots/{urllib.parse.quote(args.bot, safe='')}/challenges", token,
                       {"accept": bool(args.on)}, args.timeout)  # fmt: skip
        if answer is None:
            return 1
        state = "accepts" if answer.get("accepts_challenges") else "refuses"
        print(f"{answer.get('bot', args.bot)} {state} challenges from now on")
        return 0
    body = {"bot": args.bot, "opponent": args.opponent, "deals": args.deals, "hands_per_match": args.hands}
    answer = _call(PROG, "POST", f"{base}/challenges", token, body, args.timeout)
    if answer is None:
        return 1
    challenge = answer.get("challenge") or {}
    deals = challenge.get("deals", args.deals)
    print(f"challenge {challenge.get('id')}: {args.bot} vs {args.opponent}, {deals} deal{'s' * (deals != 1)} "
          f"({2 * deals} matches, both seat orders), {challenge.get('hands_per_match', args.hands)} hands a "
          "match, unrated")  # fmt: skip
    page = answer.get("page", "")
    if args.no_wait or challenge.get("status") == "finished":
        return _ended(challenge, page) if challenge.get("status") == "finished" else _page(page)
    try:
        while True:
            time.sleep(max(0.05, args.poll))
            query = urllib.parse.urlencode({"bot": args.bot})
            listed = _call(PROG, "GET", f"{base}/challenges?{query}", token, None, args.timeout)
            if listed is None:
                return 1
            now = next((c for c in listed.get("challenges", []) if c.get("id") == challenge.get("id")), None)
            if now is None:
                print(f"{PROG}: challenge {challenge.get('id')} is no longer listed", file=sys.stderr)
                return 1
            if now.get("status") == "finished":
                return _ended(now, page)
    except KeyboardInterrupt:
        print(f"\nstopped watching; challenge {challenge.get('id')} plays on: {page}", file=sys.stderr)
        return 130


def _ended(challenge: dict[str, Any], page: str) -> int:
    chips = challenge.get("chips") or {}
    mine, theirs = int(chips.get("challenger", 0)), int(chips.get("opponent", 0))
    print(f"finished: {challenge.get('challenger')} {mine:+d}, {challenge.get('opponent')} {theirs:+d} chips "
          f"over {2 * int(challenge.get('deals', 0))} matches")  # fmt: skip
    return _page(page)


def _page(page: str) -> int:
    if page:
        print(f"its page: {page}")
    return 0
