"""The README's "Use the engine" example runs, and prints exactly what the README shows."""

from __future__ import annotations

import contextlib
import io
import re

from helpers.paths import ROOT

README = ROOT / "README.md"


def section() -> str:
    text = README.read_text()
    start = text.index("\n## Use the engine\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_the_readme_engine_example_prints_the_table_it_shows() -> None:
    blocks = re.findall(r"```(python|text)\n(.*?)```", section(), re.S)
    assert [kind for kind, _ in blocks] == ["python", "text"]
    code, shown = blocks[0][1], blocks[1][1]
    assert 10 <= len(code.strip().splitlines()) <= 16
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "readme_example"})
    printed = out.getvalue()
    assert printed == shown
    # It shows a drawn table: seats with cards and totals, the piles, the melds, whose turn.
    for line in ("seat 0 D", "seat 1  >", "stock 41 cards, discard", "table: no melds",
                 "seat 1 to act, start of turn:", "(book, seat 0)"):
        assert line in printed


def test_the_section_follows_the_tonk_command_table() -> None:
    text = README.read_text()
    assert text.index("## The `tonk` command") < text.index("## Use the engine") < text.index("## Rules")


def test_the_readmes_first_tournament_says_it_is_a_smoke_test_and_shows_a_useful_one() -> None:
    # Its 8 matches gave the new bot "1425 [1076, 1775]" and nothing said what that was worth.
    import shlex

    from helpers.guides import sh_blocks

    from sdk.cli import build_parser

    blocks = [b.code for b in sh_blocks(README)]
    (walk,) = [b for b in blocks if "tonk new my-bot" in b]
    (first,) = [line for line in walk.splitlines() if line.startswith("tonk tournament create")]
    assert "smoke test" in first
    (rated,) = [b for b in blocks if "tonk tournament create --name rated" in b]
    create = shlex.split(rated.splitlines()[0])
    args = build_parser(create[1:]).parse_args(create[1:])
    assert args.deals >= 20 and "my-bot" in args.bots, args
    assert "smoke test" in README.read_text().split(walk, 1)[1].split(rated, 1)[0]
