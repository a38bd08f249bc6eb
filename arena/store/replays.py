"""Compact replays: a finished match's hand logs in a few hundred bytes per hand.

A hand log is what the referee produced for one hand (``HandLog.to_json()``): the
``tonk-hand/1`` record plus ``latency_us`` (one per action) and, when a seat faulted,
``faults``. Storing that JSON costs several KB per hand; almost all of it is redundant:

- the deal is re-derivable from the match seed and the hand index (``sdk.dealing``), so a
  seeded hand stores no cards at all (a hand that does not match the seed stores its
  52-card deck order, 52 bytes);
- the outcome is re-derivable by replaying the actions, so it is not stored;
- an action is one byte (two for a lay-off, 1 + its cards for a meld), a latency a varint.

Layout of format ``tonk-replay/1`` (zlib-compressed as a whole)::

    version byte (1)
    varint n, then n bytes of JSON header {"players", "rules", "seed", "hands"}
    per hand: kind byte (0 seeded deal, 1 explicit deck, 2 raw JSON), then
      kind 0/1: dealer, [52 card indices if kind 1], varint #actions, the actions,
                one varint latency per action, varint #faults, each fault as
                seat byte, varint decision, kind byte, varint length + UTF-8 reason
      kind 2:   varint length + the hand's JSON (anything the compact form cannot hold)

:func:`decode` replays every hand under the engine and rebuilds exactly the JSON the referee
wrote; :func:`encode` (``verify=True``) checks that before trusting the compact form.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from sdk.actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, Discard, Draw, Drop, Layoff, Meld
from sdk.cards import DECK, Card
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.errors import TonkError
from sdk.record import HandRecord
from sdk.referee import Fault, FaultKind, HandLog, plain_record
from sdk.rules import STANDARD, Rules
from sdk.wire import encode_varint

FORMAT: Final = "tonk-replay/1"
_VERSION: Final = 1
_SEEDED, _DECK, _RAW = 0, 1, 2
# One-byte action codes: 0 drop, 1 draw stock, 2 draw discard, then a block of 52 per card.
_DISCARD0: Final = 3
_LAYOFF0: Final = _DISCARD0 + 52  # followed by the varint meld index
_MELD0: Final = _LAYOFF0 + 52  # + (cards - 3), followed by the card indices
_MAX_MELD: Final = 13
_KINDS: Final = tuple(FaultKind)


class ReplayError(ValueError):
    """Replay bytes that cannot be decoded (corrupt, truncated, or another format)."""


# -- encoding ---------------------------------------------------------------------------------


def encode(
    hands: Sequence[Mapping[str, Any]], *, seed: int | None = None, verify: bool = True
) -> tuple[str, bytes]:
    """``(format, data)`` for a Replay row holding ``hands`` (HandLog JSON dicts).

    ``seed`` is the match seed: hands dealt from it store no cards. With ``verify`` every
    compactly stored hand is decoded again and compared; a hand that would not come back
    identical (hand-made or from another engine) is kept as JSON instead, so encoding is
    lossless for any input.
    """
    if not hands:
        return FORMAT, _finish({"players": [], "rules": None, "seed": seed, "hands": 0}, [])
    players = _players_of(hands[0])
    rules_json = hands[0].get("rules")
    header = {"players": players, "rules": rules_json, "seed": seed, "hands": len(hands)}
    try:
        rules = Rules.from_json(rules_json)
    except TonkError:
        rules = STANDARD
    parts = []
    for index, hand in enumerate(hands):
        part = _compact_from_json(hand, index, players, rules_json, rules, seed)
        if part is not None and verify and _decode_part(part, index, players, rules, seed) != hand:
            part = None
        parts.append(part if part is not None else _raw(hand))
    return FORMAT, _finish(header, parts)


def encode_logs(logs: Sequence[HandLog], *, seed: int, players: Sequence[str], rules: Rules) -> bytes:
    """The arena's fast path: a match's hand logs straight from the referee (no JSON round
    trip, no verification needed: these logs are canonical by construction)."""
    rules_json = None if rules == STANDARD else rules.to_json()
    header = {"players": list(players), "rules": rules_json, "seed": seed, "hands": len(logs)}
    # Deriving a deck costs ~0.1 ms and the referee dealt every hand from the seed, so the
    # first hand is checked (that catches a wrong seed) and the others trusted. If it fails,
    # every hand stores its deck.
    seeded = bool(logs) and _deck_of(logs[0].record) == deck_order(seed, 0)
    parts = []
    for index, log in enumerate(logs):
        part = _compact_from_log(log, index, seed if seeded else None, trusted=seeded)
        parts.append(part if part is not None else _raw(log.to_json()))
    return _finish(header, parts)


def _finish(header: dict[str, Any], parts: Iterable[bytes]) -> bytes:
    head = json.dumps(header, separators=(",", ":")).encode()
    out = bytearray([_VERSION])
    out += encode_varint(len(head))
    out += head
    for part in parts:
        out += part
    return zlib.compress(bytes(out), 9)


def _compact_from_log(log: HandLog, index: int, seed: int | None, *, trusted: bool = False) -> bytes | None:
    record = log.record
    if record.start != "deal" or record.table is not None or record.to_act is not None:
        return None
    if record.note is not None or record.extra or len(log.latencies_us) != len(record.actions):
        return None
    if len(log.faults) > 1 or any(f.hand_index != index or f.decision < 0 for f in log.faults):
        return None
    return _compact(record, index, seed, log.latencies_us, log.faults, trusted)


def _compact_from_json(
    hand: Mapping[str, Any],
    index: int,
    players: list[str],
    rules_json: Any,
    rules: Rules,
    seed: int | None,
) -> bytes | None:
    """The compact form of one hand dict, or None when it does not fit the compact form."""
    try:
        record = HandRecord.from_json(plain_record(hand))
        latencies = [int(x) for x in hand.get("latency_us", [])]
        faults = [
            Fault(f["seat"], f["hand"], f["decision"], FaultKind(f["kind"]), str(f["reason"]))
            for f in hand.get("faults", [])
        ]
    except (TonkError, KeyError, TypeError, ValueError):
        return None
    if record.players != players or hand.get("rules") != rules_json or record.rules != rules:
        return None
    return _compact_from_log(HandLog(record, latencies, faults), index, seed)


def _compact(
    record: HandRecord,
    index: int,
    seed: int | None,
    latencies: Sequence[int],
    faults: Sequence[Fault],
    trusted: bool = False,
) -> bytes | None:
    n = len(record.players)
    deck = _deck_of(record)
    if deck is None or not 0 <= record.dealer < n:
        return None
    out = bytearray()
    if seed is not None and (trusted or deck == deck_order(seed, index)):
        out += bytes((_SEEDED, record.dealer))
    else:
        out += bytes((_DECK, record.dealer))
        out += bytes(card.index for card in deck)
    out += encode_varint(len(record.actions))
    for _seat, action in record.actions:
        _action(out, action)
    for latency in latencies:
        if latency < 0:
            return None
        out += encode_varint(latency)
    out += encode_varint(len(faults))
    for fault in faults:
        if fault.decision != len(record.actions) or not 0 <= fault.seat < n:
            return None  # a fault ends its hand: it is always the last decision
        reason = fault.reason.encode()
        out.append(fault.seat)
        out += encode_varint(fault.decision)
        out.append(_KINDS.index(fault.kind))
        out += encode_varint(len(reason))
        out += reason
    return bytes(out)


def _deck_of(record: HandRecord) -> list[Card] | None:
    """The deck order a dealt hand came from (docs/rules.md deals one card at a time from the
    top, starting left of the dealer, then turns one up)."""
    n = len(record.players)
    if len(record.discard) != 1 or any(len(h) != 5 for h in record.hands):
        return None
    deck = [record.hands[(record.dealer + 1 + k) % n][k // n] for k in range(5 * n)]
    deck.append(record.discard[0])
    deck.extend(record.stock)
    return deck if len(deck) == 52 else None


def _action(out: bytearray, action: Action) -> None:
    if isinstance(action, Drop):
        out.append(0)
    elif isinstance(action, Draw):
        out.append(1 if action.source == "stock" else 2)
    elif isinstance(action, Discard):
        out.append(_DISCARD0 + action.card.index)
    elif isinstance(action, Layoff):
        out.append(_LAYOFF0 + action.card.index)
        out += encode_varint(action.onto)
    elif isinstance(action, Meld) and 3 <= len(action.cards) <= _MAX_MELD:
        out.append(_MELD0 + len(action.cards) - 3)
        out += bytes(card.index for card in action.cards)  # as played: a record keeps the order
    else:
        raise ReplayError(f"cannot encode action {action!r}")


def _raw(hand: Mapping[str, Any]) -> bytes:
    body = json.dumps(hand, separators=(",", ":")).encode()
    out = bytearray([_RAW])
    out += encode_varint(len(body))
    return bytes(out + body)


def _players_of(hand: Mapping[str, Any]) -> list[str]:
    players = hand.get("players")
    return [str(p) for p in players] if isinstance(players, list) else []


# -- a match's closest hand --------------------------------------------------------------------

#: How a hand ends on points (docs/rules.md): a drop, or the showdown when the stock runs out
#: or the turn cap is reached. A TONK or a player going out is won outright, by no margin.
_ON_POINTS: Final = frozenset({"drop", "stock", "cap"})


def closest_hand(outcomes: Sequence[Mapping[str, Any] | None]) -> tuple[int, int] | None:
    """``(hand index, points)`` of the match's closest hand: of the hands decided on points,
    the one with the fewest points between the lowest total and the next (0: a tie for
    lowest), the earliest of equals; None when no hand was decided on points. ``outcomes``:
    each hand's ``outcome`` as its record stores it (``{"end", "totals", ...}``).

    Kept with the match when it is recorded (arena/play/lifecycle.py), so a finished
    tournament's headline names its closest hands without decoding every replay."""
    best: tuple[int, int] | None = None
    for index, outcome in enumerate(outcomes):
        if not outcome or outcome.get("end") not in _ON_POINTS:
            continue
        totals = sorted(int(t) for t in outcome.get("totals") or ())
        if len(totals) < 2:
            continue
        gap = totals[1] - totals[0]
        if best is None or gap < best[1]:
            best = (index, gap)
    return best


# -- decoding ---------------------------------------------------------------------------------


def decode(fmt: str, data: bytes) -> list[dict[str, Any]]:
    """The hand logs stored as ``(fmt, data)`` (a Replay row's ``format`` and ``data``)."""
    if fmt != FORMAT:
        raise ReplayError(f"unknown replay format {fmt!r}; this module reads {FORMAT!r}")
    return decode_replay(data)


def decode_replay(data: bytes) -> list[dict[str, Any]]:
    """Every hand log of a ``tonk-replay/1`` blob, exactly as the referee wrote it:
    ``HandRecord.to_json()`` plus ``latency_us`` and (when a seat faulted) ``faults``."""
    try:
        raw = zlib.decompress(data)
    except zlib.error as exc:
        raise ReplayError(f"replay data is not zlib-compressed: {exc}") from None
    reader = _Reader(raw)
    try:
        version = reader.byte()
        if version != _VERSION:
            raise ReplayError(f"replay version {version} is not supported (expected {_VERSION})")
        header = json.loads(reader.take(reader.varint()))
        players = [str(p) for p in header["players"]]
        rules = Rules.from_json(header["rules"])
        seed = header["seed"]
        hands = [_decode_hand(reader, index, players, rules, seed) for index in range(header["hands"])]
    except (IndexError, KeyError, TypeError, ValueError, TonkError) as exc:
        if isinstance(exc, ReplayError):
            raise
        raise ReplayError(f"corrupt replay: {type(exc).__name__}: {exc}") from None
    if reader.pos != len(raw):
        raise ReplayError(f"corrupt replay: {len(raw) - reader.pos} bytes left after the last hand")
    return hands


def _decode_part(part: bytes, index: int, players: list[str], rules: Rules, seed: int | None) -> Any:
    try:
        return _decode_hand(_Reader(part), index, players, rules, seed)
    except (IndexError, ValueError, TonkError):
        return None


def _decode_hand(
    reader: _Reader, index: int, players: list[str], rules: Rules, seed: int | None
) -> dict[str, Any]:
    kind = reader.byte()
    if kind == _RAW:
        hand: dict[str, Any] = json.loads(reader.take(reader.varint()))
        return hand
    if kind not in (_SEEDED, _DECK):
        raise ReplayError(f"corrupt replay: hand {index} has kind {kind}")
    dealer = reader.byte()
    if kind == _SEEDED:
        if seed is None:
            raise ReplayError(f"corrupt replay: hand {index} is seeded but the replay has no seed")
        deck = deck_order(seed, index)
    else:
        deck = [DECK[i] for i in reader.take(52)]
    state = HandState.deal(deck, len(players), dealer, rules)
    count = reader.varint()
    for _ in range(count):
        state.apply(_read_action(reader), state.to_act)
    latencies = [reader.varint() for _ in range(count)]
    faults = []
    for _ in range(reader.varint()):
        seat = reader.byte()
        decision = reader.varint()
        fault_kind = _KINDS[reader.byte()]
        reason = reader.take(reader.varint()).decode()
        faults.append(Fault(seat, index, decision, fault_kind, reason))
        state.forfeit(seat)
    if state.outcome is None:
        raise ReplayError(f"corrupt replay: hand {index} ends before its outcome")
    return HandLog(HandRecord.from_state(state, list(players)), latencies, faults).to_json()


def _read_action(reader: _Reader) -> Action:
    code = reader.byte()
    if code == 0:
        return DROP
    if code == 1:
        return DRAW_STOCK
    if code == 2:
        return DRAW_DISCARD
    if code < _LAYOFF0:
        return Discard(DECK[code - _DISCARD0])
    if code < _MELD0:
        return Layoff(DECK[code - _LAYOFF0], reader.varint())
    size = code - _MELD0 + 3
    if size > _MAX_MELD:
        raise ReplayError(f"corrupt replay: action code {code}")
    return Meld(tuple(DECK[i] for i in reader.take(size)))


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        value = self.data[self.pos]
        self.pos += 1
        return value

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ReplayError(f"corrupt replay: {n} bytes wanted, {len(self.data) - self.pos} left")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def varint(self) -> int:
        shift = value = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7
