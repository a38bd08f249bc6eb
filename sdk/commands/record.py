"""``tonk record simulate|verify FILE...``: replay hand records and check their outcomes.

Each file gives one JSON line on standard output, so the output pipes into ``jq``:
``{"file": NAME, "outcome": {...}}`` or ``{"file": NAME, "error": {"action": INDEX, "reason": ...}}``
(``action`` is null when the record is malformed rather than illegal). A ``.jsonl`` file (as
``tonk export`` writes) holds one record a line and gives one output line per record, with
``"line"`` (counted from 1).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sdk.errors import IllegalActionError, OutcomeMismatchError, TonkError
from sdk.record import HandRecord


def register(subparsers: Any) -> None:
    record = subparsers.add_parser("record", help="replay and verify tonk-hand/1 records")
    sub = record.add_subparsers(dest="record_command", metavar="ACTION", required=True)
    simulate = sub.add_parser("simulate", help="replay each record and print its outcome")
    simulate.add_argument("files", nargs="+", metavar="FILE")
    simulate.set_defaults(func=run_simulate)
    verify = sub.add_parser("verify", help="replay each record and compare with its stored outcome")
    verify.add_argument("files", nargs="+", metavar="FILE")
    verify.set_defaults(func=run_verify)


def check_file(name: str, compare: bool) -> dict[str, Any]:
    """The JSON line for one file."""
    line: dict[str, Any] = {"file": name}
    try:
        text = Path(name).read_bytes()
    except OSError as exc:
        line["error"] = {"action": None, "reason": f"cannot read the file: {exc.strerror}"}
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
    """One JSON line per record of a JSON-lines file, read a line at a time."""
    try:
        with open(name, "rb") as stream:
            for number, text in enumerate(stream, start=1):
                if text.strip():
                    yield check_text({"file": name, "line": number}, text, compare)
    except OSError as exc:
        yield {"file": name, "error": {"action": None, "reason": f"cannot read the file: {exc.strerror}"}}


def _run(args: argparse.Namespace, compare: bool) -> int:
    failed = False
    for name in args.files:
        for line in check_lines(name, compare) if name.endswith(".jsonl") else [check_file(name, compare)]:
            failed = failed or "error" in line
            print(json.dumps(line), flush=True)
    return 1 if failed and compare else 0


def run_simulate(args: argparse.Namespace) -> int:
    return _run(args, compare=False)


def run_verify(args: argparse.Namespace) -> int:
    return _run(args, compare=True)
