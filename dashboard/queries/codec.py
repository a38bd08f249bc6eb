"""Reading stored replays: ``Replay.data`` back into HandLog-style JSON dicts (one per hand).

The arena's own codec (``arena/replays.py``) is used when it is installed; until then the
dashboard reads (and its test fixtures write) a plain zlib-compressed JSON list, stored with
format ``json+zlib``.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

FALLBACK_FORMAT = "json+zlib"


class ReplayDecodeError(ValueError):
    pass


def encode(hands: list[dict[str, Any]]) -> tuple[str, bytes]:
    """``(format, data)`` for a Replay row holding ``hands``."""
    arena_codec = _arena_codec()
    if arena_codec is not None:
        return arena_codec.encode(hands)  # type: ignore[no-any-return]
    return FALLBACK_FORMAT, zlib.compress(json.dumps(hands, separators=(",", ":")).encode(), 6)


def decode(fmt: str, data: bytes) -> list[dict[str, Any]]:
    if fmt == FALLBACK_FORMAT:
        try:
            hands = json.loads(zlib.decompress(data))
        except (zlib.error, ValueError) as exc:
            raise ReplayDecodeError(f"unreadable {fmt} replay: {exc}") from None
        if not isinstance(hands, list):
            raise ReplayDecodeError("a replay holds a list of hands")
        return hands
    arena_codec = _arena_codec()
    if arena_codec is None:
        raise ReplayDecodeError(f"unknown replay format {fmt!r}")
    return arena_codec.decode(fmt, data)  # type: ignore[no-any-return]


def _arena_codec() -> Any:
    try:
        from arena import replays
    except ImportError:
        return None
    return replays
