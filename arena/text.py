"""Text from bots and users, made safe to store and to show.

Bots choose their GetInfo fields and the details of their error statuses, and users choose
names; all of it ends up in the store and on pages. Two rules, one for each:

- **Stored** text goes through :func:`clean_text` first: bounded in length, with NUL and every
  other control character (C0, DEL, C1) and lone surrogates removed. PostgreSQL refuses NUL in
  text and UTF-8 cannot carry a lone surrogate, so one such character used to make a whole
  match unrecordable (the bot's faults and every other seat's result with it).
- **Shown** text goes through :func:`visible`: characters that are invisible or change the
  direction of the text around them (right-to-left override, zero-width spaces, bidi isolates,
  and any control that slipped through) are written as visible escapes such as ``<U+202E>``,
  so a name cannot pass for another. The dashboard applies it to everything its templates
  print (dashboard/templating.py).
"""

from __future__ import annotations

import re
from typing import Final

#: Bounds, in characters, for each kind of stored text.
NAME_LIMIT: Final = 200  # GetInfo name, version, author, language, protocol version
REASON_LIMIT: Final = 2000  # a fault's reason, a failed match's error
ELLIPSIS: Final = "\u2026"

# Removed before storing: C0 controls, DEL, C1 controls, and surrogates.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# Whitespace controls become a space, so words do not run together.
_SPACES = re.compile("[\t\n\r\v\f]+")

# Shown escaped: every control (tab and line feed excepted), format characters (bidi
# overrides and isolates, zero-width ones, soft hyphen, BOM, tags...), line and paragraph
# separators (Unicode 14 categories Cc, Cf, Zl, Zp), the letters that render as nothing
# (Hangul fillers, braille blank), and surrogates.
_INVISIBLE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u2800\u3164"
    "\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f\ud800-\udfff]"
)



def clean_text(value: object, limit: int) -> str:
    """``value`` as text fit to store: controls and surrogates removed (tabs and line breaks
    become one space), surrounding space stripped, and at most ``limit`` characters (a cut
    text ends with an ellipsis). Costs O(limit) whatever the size of ``value``."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit!r}")
    text = value if isinstance(value, str) else str(value)
    # Only a prefix can survive the cut; controls removed from it leave at worst less text.
    head = text[: 4 * limit + 16]
    cleaned = _CONTROL.sub("", _SPACES.sub(" ", head)).strip()
    if len(cleaned) > limit or len(head) < len(text):
        return cleaned[: limit - 1].rstrip() + ELLIPSIS
    return cleaned


def visible(value: str) -> str:
    """``value`` with every invisible or direction-changing character written as ``<U+XXXX>``."""
    if not _INVISIBLE.search(value):
        return value
    return _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", value)


def has_invisible(value: str) -> bool:
    return _INVISIBLE.search(value) is not None


__all__ = ["ELLIPSIS", "NAME_LIMIT", "REASON_LIMIT", "clean_text", "has_invisible", "visible"]
