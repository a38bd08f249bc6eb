"""``tonk owner join`` and ``tonk owner rotate-token``: become an owner of an arena with an
invite code, and replace your own API token, over the arena's HTTP API.

    TOKEN=$(tonk owner join tonki_... --name alice --arena https://arena.example.org)
    TOKEN=$(tonk owner rotate-token --arena https://arena.example.org --token "$TOKEN")

Each prints the token, and only the token, on standard output (so ``$(...)`` captures it) and
what to do with it on standard error. The arena keeps only its hash: it is shown this once.

The other ``tonk owner`` actions (create, invite, ...) are the operator's, at the server
(arena/commands/owners.py); they join the same ``owner`` command when the arena is installed.

The arena's HTTP API:

``POST /api/v1/owners`` with ``{"invite": CODE, "name": NAME}`` (no token: the code is the
    credential). 201 ``{"owner": {"name", "created_at"}, "token": TOKEN}``. Refusals: 400
    ``invalid_invite`` (not a code), ``invalid_owner_name``; 404 ``invite_not_found``; 409
    ``owner_name_taken`` (no use of the code is spent); 410 ``invite_used_up``,
    ``invite_expired``, ``invite_revoked``; 429 ``too_many_requests`` (too many attempts from
    one address: wait ``Retry-After`` seconds).
``POST /api/v1/owners/me/token`` (``Authorization: Bearer`` the current token). 200
    ``{"owner": {...}, "token": NEW}``; the old token stops working at once.

Exit status: 0 done; 1 the arena refused, failed, or could not be reached; 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sdk.commands.submit import _call, _common, _target
from sdk.login import (
    ArenaURLError,
    Login,
    LoginFileError,
    TokenError,
    check_arena_url,
    read_login,
    write_login,
)

#: Generous for two small writes; the arena checks nothing remote here.
DEFAULT_TIMEOUT_S = 30.0


def owner_actions(subparsers: Any) -> Any:
    """The actions of the ``tonk owner`` command, made if ``subparsers`` has none yet: the SDK
    and the arena's operator commands each add theirs to the one command."""
    parser = subparsers.choices.get("owner")
    if parser is None:
        parser = subparsers.add_parser(
            "owner", help="join an arena with an invite, rotate your token (operators: manage owners)"
        )
        return parser.add_subparsers(dest="owner_command", metavar="ACTION", required=True)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise RuntimeError("the 'owner' command has no actions")


#: The actions this module adds: with one of them, `tonk` need not load the arena's commands.
ACTIONS = ("join", "rotate-token")


def register(subparsers: Any) -> None:
    sub = owner_actions(subparsers)
    join = sub.add_parser("join", help="become an owner of an arena with an invite code; prints your token")
    join.add_argument("code", help="the invite code (tonki_...) the arena's operator gave you")
    join.add_argument("--name", required=True, help="your owner name: 2 to 64 of a-z, 0-9, '_', '.', '-'")
    join.add_argument("--arena", default=None, metavar="URL",
                      help="the arena's URL (default: $TONK_ARENA, else tonk login's)")
    join.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds to wait")
    join.add_argument("--json", action="store_true", help="print the arena's JSON answer")
    join.set_defaults(func=run_join)

    rotate = sub.add_parser("rotate-token", help="replace your own API token; prints the new one")
    _common(rotate)
    rotate.set_defaults(func=run_rotate_token, timeout=DEFAULT_TIMEOUT_S)


def run_join(args: argparse.Namespace) -> int:
    prog = "tonk owner join"
    target = _target(args, prog, secret="invite code")
    if target is None:
        return 2
    base, _ = target
    body = {"invite": args.code.strip(), "name": args.name}
    answer = _call(prog, "POST", base + "/owners", None, body, args.timeout)
    if answer is None:
        return 1
    return _say_token(answer, args, f"joined the arena at {_arena(base)} as owner {args.name!r}.")


def run_rotate_token(args: argparse.Namespace) -> int:
    prog = "tonk owner rotate-token"
    target = _target(args, prog)
    if target is None:
        return 2
    base, token = target
    answer = _call(prog, "POST", base + "/owners/me/token", token, {}, args.timeout)
    if answer is None:
        return 1
    name = (answer.get("owner") or {}).get("name", "?")
    done = _say_token(answer, args, f"new token for owner {name!r}; the old one no longer works.")
    if done == 0:
        _renew_remembered(base, token, str(answer["token"]))
    return done


def _renew_remembered(base: str, old: str, new: str) -> None:
    """The token tonk login remembered for this arena was the old one: remember the new one,
    or the next command would send a token that no longer works."""
    try:
        login = read_login()
        if login is None or login.token != old or login.arena != check_arena_url(_arena(base)):
            return
        path = write_login(Login(login.arena, new))
    except (LoginFileError, ArenaURLError, TokenError, OSError) as exc:
        print(f"tonk owner rotate-token: the remembered token is the old one ({exc}); "
              "tonk login --token NEW replaces it", file=sys.stderr)  # fmt: skip
        return
    print(f"the new token replaces the old in {path} (tonk login)", file=sys.stderr)


def _say_token(answer: dict[str, Any], args: argparse.Namespace, done: str) -> int:
    token = answer.get("token")
    if not isinstance(token, str) or not token:
        print(f"tonk owner {args.owner_command}: the arena's answer has no token", file=sys.stderr)
        return 1
    print(json.dumps(answer, indent=2) if args.json else token)
    print(done, file=sys.stderr)
    print(
        "the token above is shown only this once: keep it secret. Use it as TONK_TOKEN (or --token) "
        "with tonk submit, or remember it with the arena's URL (tonk login --arena URL --token TOKEN), "
        "and in 'Authorization: Bearer' for the API.",
        file=sys.stderr,
    )
    return 0


def _arena(base: str) -> str:
    return base.removesuffix("/api/v1")


__all__ = ["ACTIONS", "owner_actions", "register", "run_join", "run_rotate_token"]
