"""From a match seed to every deck order, in a way anyone can reproduce in any language.

The derivation (also in docs/dealing.md, with test vectors in tests/sdk/test_dealing.py):

1. The seed is an integer ``0 <= seed < 2**64``; the hand index ``h`` counts from 0.
2. Block ``k`` (k = 0, 1, 2, ...) is ``SHA-256("tonk-deal/1:{seed}:{h}:{k}")`` over the ASCII
   text with the numbers in decimal. Each block is read as four 64-bit big-endian unsigned
   integers; the stream of integers is blocks 0, 1, 2... in order.
3. Start from the deck in index order (``index = suit * 13 + rank - 1``, suits ``c d h s``,
   ranks ``A..K``). For ``i`` from 51 down to 1: take integers ``x`` from the stream until
   ``x < 2**64 - (2**64 mod (i + 1))`` (rejection keeps it unbiased), let ``j = x mod (i + 1)``,
   and swap positions ``i`` and ``j``.
4. Position 0 is the top of the deck; the deal then follows docs/rules.md.

Python's ``random`` module is not involved, so the result is the same on every platform.
"""

from __future__ import annotations

import hashlib
import secrets
import struct
from typing import Final

from sdk.cards import DECK, Card
from sdk.errors import NotationError

SEED_LIMIT: Final = 2**64
_UNPACK = struct.Struct(">4Q").unpack
_UNPACK_52 = struct.Struct(">52Q").unpack
_BLOCK_NUMBERS: Final = tuple(str(k).encode("ascii") for k in range(13))
_LIMITS: Final = tuple(SEED_LIMIT - (SEED_LIMIT % n) if n else 0 for n in range(53))
_sha256 = hashlib.sha256


def check_seed(seed: object) -> int:
    if type(seed) is not int or not 0 <= seed < SEED_LIMIT:
        raise NotationError(f"a seed is an integer from 0 to 2**64 - 1, got {seed!r}")
    return seed


def new_seed() -> int:
    """A fresh secret seed (the arena keeps it hidden until the match is over)."""
    return secrets.randbits(64)


def deck_order(seed: int, hand_index: int) -> list[Card]:
    """The deck for hand ``hand_index`` of the match with ``seed``, top card first."""
    check_seed(seed)
    if type(hand_index) is not int or hand_index < 0:
        raise NotationError(f"a hand index is an integer >= 0, got {hand_index!r}")
    prefix = b"tonk-deal/1:%d:%d:" % (seed, hand_index)
    # The shuffle takes 51 integers unless one is rejected (odds about 1 in 10**17 per
    # hand), so hash the 13 blocks that hold 52 of them at once.
    stream = _UNPACK_52(b"".join([_sha256(prefix + k).digest() for k in _BLOCK_NUMBERS]))
    order = list(DECK)
    limits = _LIMITS
    for i in range(51, 0, -1):
        x = stream[51 - i]
        if x >= limits[i + 1]:
            return _deck_order_streamed(prefix)
        j = x % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def _deck_order_streamed(prefix: bytes) -> list[Card]:
    """The derivation exactly as written above, block by block (the reference)."""
    pool: list[int] = []
    block = 0
    order = list(range(52))
    for i in range(51, 0, -1):
        n = i + 1
        limit = SEED_LIMIT - (SEED_LIMIT % n)
        while True:
            if not pool:
                digest = hashlib.sha256(prefix + str(block).encode("ascii")).digest()
                block += 1
                pool = list(_UNPACK(digest))[::-1]  # pop() then yields them in order
            x = pool.pop()
            if x < limit:
                break
        j = x % n
        order[i], order[j] = order[j], order[i]
    return [DECK[k] for k in order]


def derive_seed(parent: int, label: str) -> int:
    """A child seed for ``label`` (e.g. a tournament's match key): the first 8 bytes,
    big-endian, of ``SHA-256("tonk-seed/1:{parent}:{label}")``."""
    check_seed(parent)
    digest = hashlib.sha256(f"tonk-seed/1:{parent}:{label}".encode()).digest()
    return int.from_bytes(digest[:8], "big")
