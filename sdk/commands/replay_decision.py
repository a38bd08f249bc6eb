"""``tonk replay-decision FILE BOT``: ask a bot one recorded decision again and judge its answer.

FILE is a decision in JSON, in either format of sdk/decision_file.py: the proto3 JSON of the
DecideRequest the bot received (the dashboard's decision downloads), or the SDK's
``tonk-sdk-decision/1`` (``tonk check --dump-faults``; a bare observation also works). BOT is
``MODULE:CLASS``, a house bot name, or ``HOST:PORT`` of a running bot.

Exit status: 0 when the answer is legal, 1 when it is not (or the bot faulted), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from sdk.bot import MatchInfo, MatchSummary
from sdk.decision_file import read_decision
from sdk.messages import ProtocolError
from sdk.players import PlayerSpecError, make_player
from sdk.referee import PlayerFaultError, resolve_reply


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay-decision",
        help="ask a bot a recorded decision again and check its answer",
        description="Send one recorded decision (JSON) to a bot and print its action and whether it "
        "is legal.",
    )
    parser.add_argument("file", metavar="FILE", help="a decision JSON file ('-' for standard input)")
    parser.add_argument("bot", metavar="BOT", help="MODULE:CLASS, a house bot name, or HOST:PORT")
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    parser.set_defaults(func=run_replay_decision)


def run_replay_decision(args: argparse.Namespace) -> int:
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
        request, _format = read_decision(json.loads(text))
    except (OSError, json.JSONDecodeError, ProtocolError) as exc:
        print(f"tonk replay-decision: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    obs = request.observation
    if not obs.legal_actions:
        print(
            f"tonk replay-decision: {args.file} has no legal actions: it is not a decision", file=sys.stderr
        )
        return 2
    try:
        player = make_player(args.bot)
    except PlayerSpecError as exc:
        print(f"tonk replay-decision: {exc}", file=sys.stderr)
        return 2
    verdict: dict[str, Any] = {"decision_id": request.decision_id, "legal_actions": len(obs.legal_actions)}
    try:
        info = MatchInfo(
            request.match_id, obs.seat, obs.players, obs.rules, obs.hands_in_match, 0, request.deadline_ms
        )
        player.match_start(info)
        started = time.perf_counter()
        reply = player.act(request)
        verdict["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 2)
        verdict["reply"] = reply if type(reply) is int else str(reply)
        try:
            action = resolve_reply(obs, reply)
        except PlayerFaultError as exc:
            verdict.update(legal=False, fault=exc.kind.value, reason=exc.reason)
        else:
            verdict.update(legal=True, action=str(action), index=obs.legal_actions.index(action))
        if verdict["elapsed_ms"] > request.deadline_ms:
            verdict["late"] = f"took longer than the {request.deadline_ms} ms deadline"
        player.match_end(MatchSummary(request.match_id, obs.scores or (0,) * len(obs.players)))
    except PlayerFaultError as exc:
        verdict.update(legal=False, fault=exc.kind.value, reason=exc.reason)
    finally:
        player.close()
    if args.json:
        print(json.dumps(verdict))
    else:
        _print_verdict(verdict, obs.legal_actions)
    return 0 if verdict.get("legal") else 1


def _print_verdict(verdict: dict[str, Any], legal: tuple[Any, ...]) -> None:
    print(f"decision {verdict['decision_id']}: {len(legal)} legal actions")
    if "fault" in verdict and "reply" not in verdict:
        print(f"the bot faulted: {verdict['fault']}: {verdict['reason']}")
        return
    print(f"reply: {verdict['reply']!r} ({verdict['elapsed_ms']} ms)")
    if verdict.get("legal"):
        print(f"action: {verdict['action']} (legal action #{verdict['index']})")
        print("legal: yes")
    else:
        print(f"legal: NO ({verdict['fault']}: {verdict['reason']})")
        print("the legal actions were:")
        for i, action in enumerate(legal):
            print(f"  {i:>3}  {action}")
    if "late" in verdict:
        print(f"late: {verdict['late']}")
