"""sdk/terminal.py: text from elsewhere printed with its steering characters escaped."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from sdk.terminal import shown


def test_bidi_controls_and_escapes_are_written_out() -> None:
    assert shown("evil\u202etxt.exe") == "evil<U+202E>txt.exe"
    assert shown("\x1b[2J\u2066x\u200b\ufeff") == "<U+001B>[2J<U+2066>x<U+200B><U+FEFF>"
    assert shown("tab\tand\nline stay; café, 名前, 🂡 too") == "tab\tand\nline stay; café, 名前, 🂡 too"
    assert shown(42) == "42"


@given(st.text())
def test_nothing_that_steers_text_is_left(text: str) -> None:
    out = shown(text)
    for ch in out:
        category = unicodedata.category(ch)
        assert ch in "\t\n" or category not in ("Cc", "Cf", "Cs", "Zl", "Zp"), (text, out)
    # Text without such characters comes out unchanged.
    if all(unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zl", "Zp") or ch in "\t\n" for ch in text):
        assert out == text
