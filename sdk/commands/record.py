"""``tonk record simulate|verify FILE...``: replay hand records and check their outcomes.

Each file gives one JSON line on standard output, so the output pipes into ``jq``:
``{"file": NAME, "outcome": {...}}`` or ``{"file": NAME, "error": {"action": INDEX, "reason": ...}}``
(``action`` is null when the record is malformed rather than illegal). A ``.jsonl`` file (as
``tonk export`` writes) holds one record a line and gives one output line per record, with
``"line"`` (counted from 1). The exit status is 1 when any file or line gave an error line
(missing, unreadable, too large, malformed, illegal, or for ``verify`` a stored outcome that
differs), else 0.

A record (a file, or a line of a ``.jsonl`` file) is read up to ``MAX_RECORD_BYTES`` (a hand
record is a few kilobytes), so ``/dev/zero`` or a huge file is an error line, not a
MemoryError; an error quotes at most ``MAX_QUOTE`` characters of any text from the file.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from typing import Any, Final

from sdk.errors import IllegalActionError, OutcomeMismatchError, TonkError
from sdk.record import HandRecord


def register(subparsers: Any) -> None:
    record = subparsers.add_parser("record", help="replay and verify tonk-hand/1 records")
    sub = record.add_subparsers(dest="record_command", metavar="ACTION", required=True)
    simulate = sub.add_parser("simulate", help="replay each record and print its outcome")
    simulate.add_argument("files", nargs="+", metavar="FILE", help="hand records (docs/hand-record.md)")
    simulate.set_defaults(func=run_simulate)
    verify = sub.add_parser("verify", help="replay each record and compare with its stored outcome")
    verify.add_argument("files", nargs="+", metavar="FILE", help="hand records (docs/hand-record.md)")
    verify.set_defaults(func=run_verify)


MAX_RECORD_BYTES: Final = 4 * 1024 * 1024
MAX_QUOTE: Final = 80
MAX_REASON: Final = 600
# A quoted text in an error message ('...' or "..." as repr writes it), longer than MAX_QUOTE.
_LONG_QUOTE: Final = re.compile(
    r"""(?P<q>['"])(?P<head>(?:[^'"\\]|\\.){""" + str(MAX_QUOTE) + r"""})(?:[^'"\\]|\\.)+(?P=q)"""
)


def bounded(reason: str) -> str:
    """``reason`` with each quoted text cut to ``MAX_QUOTE`` characters and the whole to
    ``MAX_REASON``: an error line names the problem; it does not echo a 100 MB field back."""
    if len(reason) > 64 * MAX_REASON:  # keeps the search below cheap whatever the input
        reason = reason[: 32 * MAX_REASON] + reason[-32 * MAX_REASON :]
    reason = _LONG_QUOTE.sub(lambda m: f"{m['q']}{m['head']}...{m['q']}", reason)
    if len(reason) > MAX_REASON:
        reason = reason[: MAX_REASON - 40] + " ... " + reason[-35:]
    return reason


def read_bounded(name: str) -> bytes:
    """The file's bytes; RecordTooLargeError past MAX_RECORD_BYTES (read no further)."""
    with open(name, "rb") as f:
        data = f.read(MAX_RECORD_BYTES + 1)
    if len(data) > MAX_RECORD_BYTES:
        raise RecordTooLargeError(f"the file is larger than {MAX_RECORD_BYTES} bytes: not a hand record")
    return data


class RecordTooLargeError(ValueError):
    """A file past MAX_RECORD_BYTES."""


def check_file(name: str, compare: bool) -> dict[str, Any]:
    """The JSON line for one file."""
    return _bound(_check_file(name, compare))


def _bound(line: dict[str, Any]) -> dict[str, Any]:
    if "error" in line:
        line["error"]["reason"] = bounded(str(line["error"]["reason"]))
    return line


def _check_file(name: str, compare: bool) -> dict[str, Any]:
    line: dict[str, Any] = {"file": name}
    try:
        text = read_bounded(name)
    except OSError as exc:
        line["error"] = {"action": None, "reason": f"cannot read the file: {exc.strerror or exc}"}
        return line
    except RecordTooLargeError as exc:
        line["error"] = {"action": None, "reason": str(exc)}
        return line
    return check_text(line, text, compare)


def check_text(line: dict[str, Any], text: bytes, compare: bool) -> dict[str, Any]:
    """``line`` completed with the outcome of the record ``text``, or its error."""
    try:
        record = HandRecord.from_text(text)
        if compare:
            outcome = record.verify()
        else:
            state = record.replay()
            if state.outcome is None:
                line["error"] = {"action": None, "reason": "the actions end before the hand is over"}
                return line
            outcome = state.outcome
        line["outcome"] = outcome.to_json()
    except IllegalActionError as exc:
        line["error"] = {"action": exc.action_index, "reason": str(exc)}
    except OutcomeMismatchError as exc:
        line["error"] = {"action": None, "reason": str(exc), "mismatch": True}
    except TonkError as exc:
        line["error"] = {"action": None, "reason": str(exc)}
    except (RecursionError, MemoryError) as exc:
        reason = f"the record is too large or too deeply nested ({type(exc).__name__})"
        line["error"] = {"action": None, "reason": reason}
    except Exception as exc:  # an engine bug: still one JSON line, never a traceback
        reason = f"internal error, please report it: {type(exc).__name__}: {exc}"
        line["error"] = {"action": None, "reason": reason}
    return line


def check_lines(name: str, compare: bool) -> Iterator[dict[str, Any]]:
    """One JSON line per record of a JSON-lines file, read a bounded line at a time."""
    try:
        with open(name, "rb") as stream:
            number = 0
            while text := stream.readline(MAX_RECORD_BYTES + 1):
                number += 1
                line: dict[str, Any] = {"file": name, "line": number}
                if len(text) > MAX_RECORD_BYTES and not text.endswith(b"\n"):
                    reason = f"the line is larger than {MAX_RECORD_BYTES} bytes: not a hand record"
                    yield {**line, "error": {"action": None, "reason": reason}}
                    return
                if text.strip():
                    yield _bound(check_text(line, text, compare))
    except OSError as exc:
        reason = f"cannot read the file: {exc.strerror or exc}"
        yield {"file": name, "error": {"action": None, "reason": reason}}


def _run(args: argparse.Namespace, compare: bool) -> int:
    failed = False
    for name in args.files:
        for line in check_lines(name, compare) if name.endswith(".jsonl") else [check_file(name, compare)]:
            failed = failed or "error" in line
            print(json.dumps(line), flush=True)
    return 1 if failed else 0


def run_simulate(args: argparse.Namespace) -> int:
    return _run(args, compare=False)


def run_verify(args: argparse.Namespace) -> int:
    return _run(args, compare=True)
