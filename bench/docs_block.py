"""The part of a docs file a bench script writes: the text between its two marker comments,
the command that made it, and writing or checking it (``--check``).

A bench script that owns a table in docs/*.md makes its block, then

    command("bench/x.py", argv, unpriced=("--cache", "--jobs"))   # the command the block names
    publish(path, BEGIN, END, block, check)                       # write, or compare: exit code

Nothing outside the markers is touched, so other hands may edit the rest of the file.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

#: Flags that say what to do with the block, not what is in it: never part of its command.
ACTIONS = ("--check", "--print")


def splice(text: str, begin: str, end: str, block: str) -> str:
    """``text`` with what lies between ``begin`` and ``end`` replaced by ``block``. Markers
    indented (inside a list item) indent the block's lines as well; blank lines stay blank."""
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise SystemExit(f"needs exactly one {begin!r} ... {end!r} pair")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    indent = head[head.rfind("\n") + 1 :]
    indent = indent if not indent.strip() else ""
    body = "\n".join(indent + line if line else "" for line in block.split("\n"))
    return f"{head}{begin}\n{body}\n{indent}{end}{tail}"


def command(
    script: str, argv: Sequence[str] | None, unpriced: Iterable[str] = (), actions: Iterable[str] = ACTIONS
) -> str:
    """The command line that makes the block: ``script`` with ``argv`` (default: this process's),
    less the ``actions`` flags and the ``unpriced`` options (which change no number: a cache,
    processes), given as ``--opt VALUE`` or ``--opt=VALUE``."""
    skip, drop = set(actions), tuple(unpriced)
    args = [a for a in (argv if argv is not None else sys.argv[1:]) if a not in skip]
    shown = [
        a for a, prev in zip(args, ["", *args], strict=False)  # prev: the flag before it
        if a not in drop and prev not in drop and not a.startswith(tuple(f"{u}=" for u in drop))
    ]  # fmt: skip
    return shlex.join([".venv/bin/python", script, *shown])


def publish(path: Path, begin: str, end: str, block: str, check: bool) -> int:
    """Write ``block`` between the markers in ``path`` and print it; or, with ``check``, only
    compare it with what is there. The exit code: 1 if ``check`` found the file differs."""
    text = path.read_text()  # read last: others may edit the file while the bench runs
    try:
        new = splice(text, begin, end, block)
    except SystemExit as error:
        raise SystemExit(f"{path} {error}") from None
    if check:
        same = new == text
        print(f"{path}: the block reproduces" if same else f"{path} differs from this run:\n{block}")
        return 0 if same else 1
    path.write_text(new)
    print(block)
    return 0
