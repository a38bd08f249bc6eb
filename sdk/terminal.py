"""Text from elsewhere (an arena's answer, a bot's GetInfo, a fault reason) made safe to print
to a terminal: every control, invisible or direction-changing character is written as
``<U+XXXX>``, so a bot's right-to-left override cannot reorder what a person reads, and an
escape sequence cannot drive their terminal. (The arena's own pages use arena/text.py's
``visible``; the SDK imports nothing from the arena, so it has this one.)"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

# C0/C1 controls (but tab and newline), and the characters that steer or hide text: bidi
# embeddings, overrides and isolates, zero-width and joiner characters, the BOM, tags.
_UNSAFE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0001\U000e0020-\U000e007f\ud800-\udfff]"
)


def shown(value: object) -> str:
    """``str(value)`` with every unsafe character written as ``<U+XXXX>`` (and any other
    format character, Unicode category Cf, too)."""
    text = str(value)
    return "".join(
        f"<U+{ord(ch):04X}>" if _UNSAFE.match(ch) or unicodedata.category(ch) == "Cf" else ch for ch in text
    )


__all__ = ["shown"]
