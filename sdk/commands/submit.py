"""``tonk submit``, ``tonk retire``, ``tonk restore``, ``tonk logs``: enter a bot in an arena
(its address, or its code for the arena to run), point it elsewhere, withdraw it, bring it
back, read what an uploaded bot printed.

    tonk submit --name lowball --upload ./lowball --arena https://arena.example.org  # the arena runs it
    tonk logs lowball [--match ID | --build]
    tonk submit --name lowball --address bots.example.org:50051 --arena https://arena.example.org
    tonk submit --name lowball --address bots.example.org:50052 --update   # a new version
    tonk retire lowball
    tonk restore lowball

The token comes from ``--token`` or the ``TONK_TOKEN`` environment variable, the arena from
``--arena`` or ``TONK_ARENA``; without them, from what ``tonk login`` remembered (sdk/login.py).
Before accepting a bot the arena dials it, checks its health service and GetInfo, and plays a
short match against its ``random`` bot: the bot must be running and reachable from the arena
when you submit (``tonk check HOST:PORT`` runs the same checks first). A refusal prints the
arena's reason; success prints the bot's dashboard page.
docs/bot-author-guide.md lists every refusal code with its fix.

Exit status: 0 done; 1 the arena refused, failed, or could not be reached; 2 bad usage
(missing token or arena, malformed arguments).

This module uses only the standard library, so it works wherever the SDK is installed.

The arena's HTTP API (JSON bodies; ``Authorization: Bearer <token>`` on every call):

``POST /api/v1/bots`` with ``{"name": NAME, "address": "HOST:PORT"}``
    Register a new bot. 201 ``{"bot": BOT}``.
``PUT /api/v1/bots/<name>`` with ``{"address": "HOST:PORT"}``
    Re-check the bot at an address and record a new version (owner or operator only;
    brings a retired bot back). 200 ``{"bot": BOT}``.
``POST /api/v1/bots/<name>/upload`` (body: the project as .tar.gz, ``application/gzip``)
    Register a new bot from its code: the arena checks the archive, builds it once, runs it in
    its sandbox and checks it. 201 ``{"bot": BOT}``. ``PUT`` the same path: a new version.
``GET /api/v1/bots/<name>/build``, ``GET /api/v1/builds/<id>``, ``GET /api/v1/bots/<name>/logs?match=ID``
    An uploaded bot's build log and what it printed per match: its owner and operators only
    (404 for anyone else).
``DELETE /api/v1/bots/<name>``
    Retire the bot (owner or operator only; idempotent). 200 ``{"bot": BOT}``.
``POST /api/v1/bots/<name>/restore``
    Bring a retired bot back (owner or operator only; an active bot is returned unchanged).
    A bot that connects (``tonk serve --connect``) may connect again; a dialled bot is checked
    again at its address first and recorded as a new version. 200 ``{"bot": BOT}``.
``POST /api/v1/claims`` with ``{"address": "HOST:PORT"}``
    Your claim code for the address: 200 ``{"claim": {"address", "code"}}``. The bot must
    return it in GetInfo (``tonk serve BOT --claim CODE`` or ``TONK_CLAIM=CODE``) to be
    registered there: it shows that you run it (docs/protocol.md). ``tonk submit`` prints it
    when the arena asks for it, and ``--show-claim`` prints it without submitting.

``BOT`` is ``{"name", "owner", "address", "hosted", "connected", "status", "created_at", "version":
{"number", "address", "hosted", "info": {"name", "version", "author", "protocol_version",
"language"}, "created_at"}}``. Errors are ``{"error": {"code", "message"[, "details"]}}``
with the status: 400 a malformed name, address or body (``invalid_bot_name``,
``invalid_address``); 401 a missing or unknown token (``unauthenticated``); 403 not the
bot's owner (``not_owner``); 404 no such bot (``bot_not_found``); 409 the name is taken
(``name_taken``; ``details.yours`` when it is the caller's own bot, which ``--update``
re-points) or the address is another owner's (``address_taken``); 422 the bot did not
return your claim code (``claim_required``, the code in the details), an internal address
(``address_not_allowed``) or a bot that failed its checks (``bot_unreachable``,
``bot_unhealthy``, ``bot_check_failed``, ``conformance_failed``, whose details list the
faults, and the match seed or the ``tonk check`` command that reproduces them); 429 a check
of another of the owner's bots is still running, or the arena is checking as many bots as it
will at once (``too_many_requests``, with a ``Retry-After`` in seconds).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdk.login import ArenaURLError, LoginFileError, TokenError, check_arena_url, check_token, resolve
from sdk.terminal import shown

DEFAULT_TIMEOUT_S = 120.0  # the arena plays a short match before it answers
UPLOAD_TIMEOUT_S = 900.0  # and builds an upload first (TONK_BUILD_TIME_LIMIT_S, 300 s by default)
API_PREFIX = "/api/v1"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # urllib would replay a POST as a GET elsewhere, Authorization header included: refuse.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def register(subparsers: Any) -> None:
    submit = subparsers.add_parser(
        "submit", help="enter a bot in an arena: its code (--upload DIR) or where it is served (--address)"
    )
    submit.add_argument("--name", required=True, help="the bot's name in the arena (a-z, 0-9, '_', '-')")
    where = submit.add_mutually_exclusive_group(required=True)
    where.add_argument("--address", metavar="HOST:PORT", help="where the arena can reach it")
    where.add_argument(
        "--upload",
        nargs="?",
        const=".",
        type=Path,
        metavar="DIR",
        help="send the bot project in DIR (default .; its tonk.toml names the entry): "
        "the arena builds and runs it",
    )
    submit.add_argument(
        "--update", action="store_true", help="make a new version of an already registered bot"
    )
    submit.add_argument(
        "--show-claim",
        action="store_true",
        help="only print your claim code for --address (serve the bot with --claim CODE), submit nothing",
    )
    _common(submit)
    submit.set_defaults(func=run_submit)

    retire = subparsers.add_parser("retire", help="withdraw one of your bots from an arena")
    retire.add_argument("name", help="the bot's name in the arena")
    _common(retire)
    retire.set_defaults(func=run_retire)

    logs = subparsers.add_parser("logs", help="what your uploaded bot printed in its matches")
    logs.add_argument("name", help="the bot's name in the arena")
    logs.add_argument("--match", type=int, default=None, metavar="ID", help="one match's output")
    logs.add_argument("--build", action="store_true", help="the log of its latest build instead")
    _common(logs)
    logs.set_defaults(func=run_logs)

    restore = subparsers.add_parser("restore", help="bring one of your retired bots back into an arena")
    restore.add_argument("name", help="the bot's name in the arena")
    _common(restore)
    restore.set_defaults(func=run_restore)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--arena", default=None, metavar="URL",
                        help="the arena's URL (default: $TONK_ARENA, else tonk login's)")
    parser.add_argument("--token", default=None,
                        help="your API token (default: $TONK_TOKEN, else tonk login's)")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds to wait for the arena"
    )
    parser.add_argument("--json", action="store_true", help="print the arena's JSON answer")


def run_submit(args: argparse.Namespace) -> int:
    prog = "tonk submit"
    target = _target(args, prog)
    if target is None:
        return 2
    base, token = target
    if args.upload is not None:
        if args.show_claim:
            print(f"{prog}: --show-claim is for a bot at an --address; an uploaded bot needs no claim",
                  file=sys.stderr)  # fmt: skip
            return 2
        return _submit_upload(args, base, token)
    if not _looks_like_address(args.address):
        print(
            f"{prog}: --address {args.address!r} is not HOST:PORT (e.g. bots.example.org:50051)",
            file=sys.stderr,
        )
        return 2
    if args.show_claim:
        answer = _call(prog, "POST", base + "/claims", token, {"address": args.address}, args.timeout)
        if answer is None:
            return 1
        claim = answer.get("claim") or {}
        if args.json:
            print(json.dumps(answer, indent=2))
        else:
            print(shown(claim.get("code", "")))
            where, code = shown(claim.get("address")), shown(claim.get("code"))
            print(
                f"  serve the bot at {where} with: tonk serve BOT --claim {code} (or TONK_CLAIM={code})",
                file=sys.stderr,
            )
        return 0
    if args.update:
        method, path, body = "PUT", f"/bots/{_quote(args.name)}", {"address": args.address}
    else:
        method, path, body = "POST", "/bots", {"name": args.name, "address": args.address}
    if not args.json:
        print(
            f"{prog}: the arena is checking {args.address} (health, info, a short match)...", file=sys.stderr
        )
    answer = _call(prog, method, base + path, token, body, args.timeout, submit=args)
    if answer is None:
        return 1
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    bot = answer.get("bot") or {}
    version = bot.get("version") or {}
    info = version.get("info") or {}
    verb = _verb(args, version)
    name, number = bot.get("name", args.name), version.get("number", "?")
    # Everything below comes from the arena, and the bot's GetInfo through it: shown() keeps
    # a bot's right-to-left override or escape sequence from reaching the terminal raw.
    print(shown(f"{verb} bot {name!r} (version {number}) at {bot.get('address')}"))
    if version.get("kept"):
        print(KEPT)
    if info:
        by = f" by {info['author']}" if info.get("author") else ""
        protocol = info.get("protocol_version")
        print(shown(f"  it says: {info.get('name')} {info.get('version', '')}{by}, protocol {protocol}"))
        print(shown(_which_version(name, number, info)))
    arena = base.removesuffix(API_PREFIX)
    print(f"  its page: {arena}/bots/{_quote(str(name))}")
    return 0


#: After an update that changed nothing that plays (the arena's ``version.kept``).
KEPT = (
    "  nothing that plays changed (the same address or archive, the same GetInfo): the version, "
    "its rating and record go on; raise your bot's version to be rated apart"
)


def _which_version(name: object, number: object, info: dict[str, Any]) -> str:
    """Which number is which: a v2 that says 0.2.0 is registered as "version 1" of its name."""
    own = f"; {info['version']} is the bot's own, from its GetInfo" if info.get("version") else ""
    return f"  version {number} is the arena's count of {name}'s versions (an --update adds one){own}"


def _verb(args: argparse.Namespace, version: dict[str, Any]) -> str:
    if not args.update:
        return "registered"
    return "kept" if version.get("kept") else "updated"


def _submit_upload(args: argparse.Namespace, base: str, token: str) -> int:
    from sdk.packing import PackError, pack

    prog = "tonk submit"
    folder = args.upload.expanduser()
    try:
        archive = pack(folder)
    except (PackError, OSError) as exc:
        print(f"{prog}: cannot upload {folder}: {exc}", file=sys.stderr)
        return 2
    method = "PUT" if args.update else "POST"
    if not args.json:
        print(
            f"{prog}: sending {folder.resolve()} ({len(archive)} bytes); the arena builds it and checks it "
            "(health, info, a short match)...",
            file=sys.stderr,
        )
    url = f"{base}/bots/{_quote(args.name)}/upload"
    timeout = max(args.timeout, UPLOAD_TIMEOUT_S)
    answer = _call(prog, method, url, token, None, timeout, submit=args, raw=archive)
    if answer is None:
        return 1
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    bot = answer.get("bot") or {}
    version = bot.get("version") or {}
    info = version.get("info") or {}
    verb = _verb(args, version)
    name = bot.get("name", args.name)
    print(shown(f"{verb} bot {name!r} (version {version.get('number', '?')}), built and run by the arena"))
    if version.get("kept"):
        print(KEPT)
    if info:
        print(
            f"  it says: {info.get('name')} {info.get('version', '')}, "
            f"protocol {info.get('protocol_version')}"
        )
        print(shown(_which_version(name, version.get("number", "?"), info)))
    print("  it starts fresh every match; what it prints: tonk logs " + name)
    print(f"  its page: {base.removesuffix(API_PREFIX)}/bots/{_quote(name)}")
    return 0


def run_logs(args: argparse.Namespace) -> int:
    prog = "tonk logs"
    target = _target(args, prog)
    if target is None:
        return 2
    base, token = target
    name = _quote(args.name)
    if args.build:
        answer = _call(prog, "GET", f"{base}/bots/{name}/build", token, None, args.timeout)
    else:
        query = "" if args.match is None else f"?match={args.match}"
        answer = _call(prog, "GET", f"{base}/bots/{name}/logs{query}", token, None, args.timeout)
    if answer is None:
        return 1
    if args.json:
        print(json.dumps(answer, indent=2))
    elif args.build:
        build = answer.get("build") or {}
        print(f"build {build.get('id')}: {build.get('status')} (finished {build.get('finished_at')})")
        print(build.get("log", ""))
    elif args.match is not None:
        for log in answer.get("logs") or []:
            cut = " (cut: it printed more)" if log.get("truncated") else ""
            print(f"-- match {log.get('match')}, seat {log.get('seat')}: {log.get('bytes')} bytes{cut}")
            print(log.get("text", ""))
    else:
        logs = answer.get("logs") or []
        if not logs:
            print(shown(_why_no_logs(args, prog, base, token)))
        for log in logs:
            cut = ", cut" if log.get("truncated") else ""
            print(f"match {log.get('match')}  seat {log.get('seat')}  {log.get('bytes')} bytes{cut}")
        if logs:
            print(f"one match's output: tonk logs {args.name} --match ID", file=sys.stderr)
    return 0


def _why_no_logs(args: argparse.Namespace, prog: str, base: str, token: str) -> str:
    """Why a bot has no match logs: the arena keeps what it runs itself (an upload) printed; a
    bot served elsewhere or connecting out prints where it runs, and never will have any."""
    answer = _call(prog, "GET", f"{base}/bots/{_quote(args.name)}", token, None, args.timeout)
    bot = (answer or {}).get("bot") or {}
    plays = bot.get("plays")  # arena/queries/bots.py: connected, hosted, uploaded or dialled
    if plays == "connected":
        where = "it connects out (tonk serve --connect), so it prints in the terminal where it runs"
    elif plays == "dialled":
        where = f"it is served at {bot.get('address') or 'its address'}, so it prints where you serve it"
    elif plays == "hosted":
        where = "it is one of the arena's house bots"
    else:  # an upload that has not played yet, or an answer without the field
        return f"no match logs of {args.name!r} yet"
    return (f"no match logs of {args.name!r}: the arena keeps what a bot it runs from an upload "
            f"prints (tonk submit --upload); {where}")  # fmt: skip


def run_retire(args: argparse.Namespace) -> int:
    def say(bot: dict[str, Any]) -> None:
        print(shown(f"retired bot {bot.get('name', args.name)!r}"))

    return _bot_command(args, "tonk retire", "DELETE", "", None, say)


def run_restore(args: argparse.Namespace) -> int:
    def say(bot: dict[str, Any]) -> None:
        number = (bot.get("version") or {}).get("number", "?")
        print(shown(f"bot {bot.get('name', args.name)!r} is {bot.get('status', '?')} (version {number})"))
        if bot.get("connected"):
            print("  it may connect again: tonk serve BOT --connect ...")

    return _bot_command(args, "tonk restore", "POST", "/restore", {}, say)


def _bot_command(
    args: argparse.Namespace,
    prog: str,
    method: str,
    suffix: str,
    body: dict[str, Any] | None,
    say: Callable[[dict[str, Any]], None],
) -> int:
    """One call about the bot ``args.name`` (``/bots/NAME`` + ``suffix``); ``say`` tells the
    answer's bot (or ``--json`` prints the answer). The exit status."""
    target = _target(args, prog)
    if target is None:
        return 2
    base, token = target
    answer = _call(prog, method, f"{base}/bots/{_quote(args.name)}{suffix}", token, body, args.timeout)
    if answer is None:
        return 1
    if args.json:
        print(json.dumps(answer, indent=2))
    else:
        say(answer.get("bot") or {})
    return 0


def _target(args: argparse.Namespace, prog: str, *, secret: str = "token") -> tuple[str, str] | None:
    """The API's base URL and the token, or None after saying what is missing: each from its
    flag, else the environment, else what ``tonk login`` remembered (sdk/login.py). ``secret``
    names what is sent instead when the command takes no token (an invite code)."""
    try:
        found = resolve(args.arena, getattr(args, "token", None))
    except LoginFileError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None
    token = found.token if secret == "token" else ""
    if not found.arena:
        print(f"{prog}: no arena: pass --arena URL, set TONK_ARENA, or remember one with "
              "tonk login --arena URL", file=sys.stderr)  # fmt: skip
        return None
    try:
        arena = check_arena_url(found.arena)
        if token:
            check_token(token)
    except (ArenaURLError, TokenError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None
    if not token and secret == "token":
        print(f"{prog}: no API token for {arena}: pass --token, set TONK_TOKEN, or remember it with "
              f"tonk login --arena {arena} --token T", file=sys.stderr)  # fmt: skip
        return None
    host = urllib.parse.urlsplit(arena).hostname or ""
    if arena.startswith("http:") and not _is_loopback(host):
        print(f"{prog}: warning: sending your {secret} to {host} over plain http", file=sys.stderr)
    return arena + API_PREFIX, token


def _call(
    prog: str,
    method: str,
    url: str,
    token: str | None,
    body: dict[str, Any] | None,
    timeout: float,
    *,
    submit: argparse.Namespace | None = None,
    raw: bytes | None = None,
) -> dict[str, Any] | None:
    """The JSON answer of a 2xx, or None after printing why there is none. ``raw``: a
    .tar.gz sent as is instead of a JSON ``body``."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, method=method)
    if token:  # None where the body carries the credential (an invite code)
        request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Accept", "application/json")
    if raw is not None:
        request.add_header("Content-Type", "application/gzip")
    elif data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        _print_refusal(prog, exc.code, exc.reason, exc.read(), exc.headers.get("Location"), submit)
        return None
    except TimeoutError:
        print(f"{prog}: the arena did not answer within {timeout:g} s", file=sys.stderr)
        return None
    except (urllib.error.URLError, OSError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, TimeoutError):
            print(f"{prog}: the arena did not answer within {timeout:g} s", file=sys.stderr)
            return None
        print(f"{prog}: cannot reach the arena at {url}: {reason}", file=sys.stderr)
        return None
    try:
        answer = json.loads(raw) if raw.strip() else {}
    except ValueError:
        print(f"{prog}: the arena's answer is not JSON: {raw[:200]!r}", file=sys.stderr)
        return None
    return answer if isinstance(answer, dict) else {"answer": answer}


def _print_refusal(
    prog: str, status: int, reason: Any, raw: bytes, location: str | None, submit: argparse.Namespace | None
) -> None:
    try:
        error = json.loads(raw)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        text = raw.decode("utf-8", "replace").strip()[:300]
        if 300 <= status < 400:
            text = f"redirected to {location} (use that URL as --arena)"
        print(
            shown(f"{prog}: the arena answered HTTP {status} {reason}: {text or '(no body)'}"),
            file=sys.stderr,
        )
        return
    print(shown(f"{prog}: refused ({status} {code}): {message}"), file=sys.stderr)
    details = error.get("details")
    if code == "claim_required" and isinstance(details, dict) and details.get("claim"):
        claim = shown(str(details["claim"])[:80])
        print(f"  your claim code for {shown(str(details.get('address'))[:300])}: {claim}", file=sys.stderr)
        print(
            f"  restart the bot with `tonk serve BOT --claim {claim}` (or TONK_CLAIM={claim}), then "
            "run this command again",
            file=sys.stderr,
        )
    if code == "name_taken" and isinstance(details, dict) and details.get("yours") and submit is not None:
        how = f"--address {submit.address}" if submit.upload is None else f"--upload {submit.upload}"
        print(f"  it is your bot: tonk submit --name {submit.name} {how} --update", file=sys.stderr)
    if code in ("build_failed", "build_time_limit") and isinstance(details, dict) and details.get("build"):
        print(f"  the whole build log: GET /api/v1/builds/{details['build']}", file=sys.stderr)
    faults = details.get("faults") if isinstance(details, dict) else None
    for fault in faults[:10] if isinstance(faults, list) else []:
        if isinstance(fault, dict):
            if fault.get("scenario"):  # the protocol check's faults name their scenario
                where = f"{fault['scenario']} [{fault.get('decision')}]"
            else:
                where = f"hand {fault.get('hand')}, decision {fault.get('decision')}"
            print(shown(f"  fault: {where}: {fault.get('kind')}: {fault.get('reason')}"), file=sys.stderr)
    if isinstance(details, dict) and details.get("check"):
        print(shown(f"  the full report: {details['check']}"), file=sys.stderr)
    elif isinstance(details, dict) and "seed" in details:
        hands = details.get("hands", 4)
        seed = shown(details["seed"])
        print(
            f"  the same deals locally: tonk play HOST:PORT random --seed {seed} --hands {shown(hands)}",
            file=sys.stderr,
        )


def _looks_like_address(address: str) -> bool:
    host, sep, port = address.strip().rpartition(":")
    return bool(sep and host and port.isascii() and port.isdigit())


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
