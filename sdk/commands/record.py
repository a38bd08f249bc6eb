"""``tonk record simulate|verify FILE...``: replay hand records and check their outcomes.

Each file gives one JSON line on standard output, so the output pipes into ``jq``:
``{"file": NAME, "outcome": {...}}`` or ``{"file": NAME, "error": {"action": INDEX, "reason": ...}}``
(``action`` is null when the record is malformed rather than illegal). A ``.jsonl`` file (as
``tonk export`` writes) holds one record a line and gives one output line per record, with
``"line"`` (counted from 1). The exit status is 1 when any file or line gave an error line
(missing, unreadable, too large, malformed, illegal, or for ``verify`` a stored outcome that
differs), else 0.

The lines are written in blocks, not one write per record, except to a terminal, where each
shows as soon as its record is read (Python's own buffering of standard output). When the
reader goes away (``tonk record simulate FILE | head -3``) the command stops quietly, as
coreutils do, with the status a shell shows for them (141: 128 + SIGPIPE).

A record (a file, or a line of a ``.jsonl`` file) is read up to ``MAX_RECORD_BYTES`` (a hand
record is a few kilobytes), so ``/dev/zero`` or a huge file is an error line, not a
MemoryError; an error quotes at most ``MAX_QUOTE`` characters of any text from the file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
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


#: The exit status when standard output's reader has gone: a shell's for a command SIGPIPE killed.
CLOSED_PIPE_STATUS: Final = 128 + signal.SIGPIPE


def line_text(line: dict[str, Any], head: str) -> str:
    """``json.dumps(line)`` and a newline; ``head`` is ``'{"file": '`` and the file's name in
    JSON. The line of a replayed outcome (nearly every line) is written here directly, over twice
    as fast as json.dumps, which writes the others (errors, a fault's outcome); both give the
    same text (tests/sdk/test_cli_record_stream.py)."""
    outcome = line.get("outcome")
    if outcome is None or len(outcome) != 4:
        return json.dumps(line) + "\n"
    # The lines are made above: {"file", ["line",] "outcome"}, and Outcome.to_json's four
    # keys in this order, an end of plain letters and lists of integers.
    number = line.get("line")
    where = head if number is None else f'{head}, "line": {number}'
    winners, payoffs, totals = outcome["winners"], outcome["payoffs"], outcome["totals"]
    return (
        f'{where}, "outcome": {{"end": "{outcome["end"]}", "winners": [{", ".join(map(str, winners))}], '
        f'"payoffs": [{", ".join(map(str, payoffs))}], "totals": [{", ".join(map(str, totals))}]}}}}\n'
    )


def _run(args: argparse.Namespace, compare: bool) -> int:
    # One write per line into the stream's buffer, no flush: Python's standard output is
    # line-buffered on a terminal (each line shows as its record is read) and block-buffered
    # otherwise (a flush per line was a system call per record).
    out = sys.stdout
    failed = False
    try:
        for name in args.files:
            head = '{"file": ' + json.dumps(name)
            lines = check_lines(name, compare) if name.endswith(".jsonl") else [check_file(name, compare)]
            for line in lines:
                failed = failed or "error" in line
                out.write(line_text(line, head))
        out.flush()
    except BrokenPipeError:
        # Python's own advice: point the descriptor at /dev/null, so that the flush at exit
        # does not fail again and print "Exception ignored ... BrokenPipeError".
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        os.close(devnull)
        return CLOSED_PIPE_STATUS
    return 1 if failed else 0


def run_simulate(args: argparse.Namespace) -> int:
    return _run(args, compare=False)


def run_verify(args: argparse.Namespace) -> int:
    return _run(args, compare=True)
