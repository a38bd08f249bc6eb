"""``tonk login`` and ``tonk logout``: remember an arena (and your API token) once, so that
``tonk submit``, ``logs``, ``sprt``... need no ``--arena`` and ``--token`` (sdk/login.py).

    tonk login --arena https://arena.example.org --token "$TOKEN"   # or the token from TONK_TOKEN
    tonk login                                                      # what is remembered
    tonk logout                                                     # forget it

``tonk login`` asks the arena's ``GET /api/v1/`` first and remembers nothing if no Tonk arena
answers there; the token is not shown, and not checked (the first command that uses it is).
Exit status: 0 done; 1 the arena could not be reached or is not one; 2 bad usage (a malformed
URL or token, nothing to remember, an unusable login file).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

from sdk.commands.submit import _OPENER
from sdk.login import (
    ArenaURLError,
    Login,
    LoginFileError,
    TokenError,
    check_arena_url,
    check_token,
    forget_login,
    login_file,
    read_login,
    write_login,
)
from sdk.terminal import shown

CHECK_TIMEOUT_S = 20.0


def register(subparsers: Any) -> None:
    login = subparsers.add_parser(
        "login",
        help="remember an arena's URL and your API token for the commands that talk to it",
        description="Remember the arena (and your token) in ~/.config/tonk/arena.json (mode 0600; "
        "$XDG_CONFIG_HOME or $TONK_CONFIG_DIR move it): later commands need no --arena or --token. "
        "--arena and TONK_ARENA, --token and TONK_TOKEN still override it. Without options: what "
        "is remembered.",
    )
    login.add_argument("--arena", default=None, metavar="URL", help="the arena's URL (default: $TONK_ARENA)")
    login.add_argument("--token", default=None,
                       help="your API token (default: $TONK_TOKEN; none: the arena only)")  # fmt: skip
    login.add_argument("--no-check", action="store_true", help="do not ask the arena first")
    login.set_defaults(func=run_login)

    logout = subparsers.add_parser("logout", help="forget the arena and token tonk login remembered")
    logout.set_defaults(func=run_logout)


def run_login(args: argparse.Namespace) -> int:
    prog = "tonk login"
    given = (args.arena or os.environ.get("TONK_ARENA", "")).strip()
    if not given:
        return _show(prog, args.token is not None)
    try:
        arena = check_arena_url(given)
        raw = (args.token or os.environ.get("TONK_TOKEN", "")).strip()
        token = check_token(raw) if raw else ""
    except (ArenaURLError, TokenError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    if not args.no_check and not _is_arena(prog, arena):
        return 1
    try:
        path = write_login(Login(arena, token))
    except OSError as exc:
        print(f"{prog}: cannot write {login_file()}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    what = "and your token " if token else "(no token: pass --token or set TONK_TOKEN for that) "
    print(f"remembered {arena} {what}in {path}")
    print("commands without --arena now talk to it; tonk logout forgets it", file=sys.stderr)
    return 0


def _show(prog: str, token_given: bool) -> int:
    if token_given:
        print(f"{prog}: no arena: pass --arena URL (or set TONK_ARENA) with --token", file=sys.stderr)
        return 2
    try:
        login = read_login()
    except LoginFileError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    if login is None:
        print(f"{prog}: nothing remembered: tonk login --arena URL [--token T]", file=sys.stderr)
        return 2
    print(f"{login.arena} ({'with' if login.token else 'without'} a token), from {login_file()}")
    return 0


def _is_arena(prog: str, arena: str) -> bool:
    """Whether a Tonk arena answers ``GET /api/v1/`` at ``arena``, after saying why not."""
    request = urllib.request.Request(arena + "/api/v1/", headers={"Accept": "application/json"})
    try:  # redirects not followed: the commands that send the token follow none either
        with _OPENER.open(request, timeout=CHECK_TIMEOUT_S) as response:
            answer = json.loads(response.read(64 * 1024))
    except urllib.error.HTTPError as exc:
        where = exc.headers.get("Location") if 300 <= exc.code < 400 else None
        hint = shown(f" to {where[:300]}: log in at that URL") if where else ""
        print(f"{prog}: {arena} is not a Tonk arena: GET /api/v1/ answered HTTP {exc.code}{hint}; "
              "nothing remembered (--no-check remembers it all the same)", file=sys.stderr)  # fmt: skip
        return False
    except (urllib.error.URLError, OSError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        print(f"{prog}: cannot reach the arena at {arena}: {reason}; nothing remembered", file=sys.stderr)
        return False
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or answer.get("version") != "v1":
        print(f"{prog}: {arena} is not a Tonk arena (GET /api/v1/ is not its API index); nothing "
              "remembered", file=sys.stderr)  # fmt: skip
        return False
    return True


def run_logout(args: argparse.Namespace) -> int:
    path = forget_login()
    print(f"forgot the arena remembered in {path}" if path else "nothing was remembered")
    return 0
