"""The hand-written ``tonk.v1`` wire codec for the decision hot path: a DecideRequest and a
DecideResponse, bytes in and bytes out (the rest of the messages go through the protobuf
runtime in :mod:`sdk.messages`, which stays the reference this codec is tested against)."""

from __future__ import annotations

from typing import Any, Final, TypeVar

from google.protobuf.message import DecodeError

from sdk.actions import DRAW_STOCK, Action, Discard, Draw, Event, Meld
from sdk.cards import DECK, Card
from sdk.engine import Outcome
from sdk.melds import TableMeld
from sdk.messages import (
    CARD_BY_TEXT,
    PHASE_FROM_PB,
    PHASE_TO_PB,
    MalformedReplyError,
    ProtocolError,
    action_from_proto,
    action_to_proto,
    decision_from_proto,
    outcome_from_proto,
    outcome_to_proto,
    reply_from_proto,
    reply_to_proto,
    rules_from_proto,
    rules_to_proto,
    table_meld_from_proto,
    table_meld_to_proto,
)
from sdk.observation import Observation
from sdk.protocol import bot_pb2 as pb
from sdk.referee import DecisionRequest
from sdk.rules import STANDARD, Rules

# -- wire level (the hot path: bytes in, bytes out) ---------------------------------------
#
# A DecideRequest is encoded and decoded by hand here: building it through the protobuf
# runtime costs a Python-to-C call per field and per sub-message (~60 us each way for a
# typical request), several times the rest of the referee's work per decision. Cards, actions,
# events, melds and rules repeat across the decisions of a hand, so their encodings are cached
# by value (encoding) and by bytes (decoding). The protobuf runtime stays the reference: tests
# check both directions against it, and the decoder falls back to it on anything it does not
# expect (unknown fields, non-canonical card spellings, unpacked repeated fields...), so any
# valid DecideRequest decodes the same either way.

_CACHE_LIMIT: Final = 50_000  # per cache; entries are tiny, but a long-lived server must not grow forever


def encode_varint(value: int) -> bytes:
    """A protobuf varint (negative int32/int64 values as ten bytes, two's complement); the one
    varint encoder of the project (the link and the stored replays use it too)."""
    if 0 <= value < 0x80:
        return _SMALL[value]
    if 0 <= value < 0x4000:  # most lengths and counts past 127: two bytes
        return bytes((value & 0x7F | 0x80, value >> 7))
    value &= 0xFFFFFFFFFFFFFFFF  # negative int32/int64 values take ten bytes, two's complement
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL: Final = tuple(bytes([i]) for i in range(0x80))


def _tag(field: int, wire_type: int) -> bytes:
    return encode_varint((field << 3) | wire_type)


def _len_field(tag: bytes, payload: bytes) -> bytes:
    return tag + encode_varint(len(payload)) + payload


def _int_field(tag: bytes, value: int) -> bytes:
    return tag + encode_varint(value) if value else b""  # proto3 leaves zeros out


def _packed(tag: bytes, values: tuple[int, ...]) -> bytes:
    if not values:
        return b""
    return _len_field(tag, b"".join(map(encode_varint, values)))


# Field tags of the messages encoded by hand (field numbers from bot.proto).
_T_STR1, _T_INT2, _T_STR3, _T_INT4, _T_MSG5 = _tag(1, 2), _tag(2, 0), _tag(3, 2), _tag(4, 0), _tag(5, 2)
_OBS_SEAT, _OBS_PLAYERS, _OBS_RULES, _OBS_DEALER = _tag(1, 0), _tag(2, 2), _tag(3, 2), _tag(4, 0)
_OBS_TO_ACT, _OBS_PHASE, _OBS_HAND, _OBS_HAND_SIZES = _tag(5, 0), _tag(6, 0), _tag(7, 2), _tag(8, 2)
_OBS_STOCK, _OBS_DISCARD, _OBS_TABLE, _OBS_HISTORY = _tag(9, 0), _tag(10, 2), _tag(11, 2), _tag(12, 2)
_OBS_PICKED, _OBS_TURN, _OBS_LOCKED, _OBS_LEGAL = _tag(13, 2), _tag(14, 0), _tag(15, 2), _tag(16, 2)
_OBS_SCORES, _OBS_HAND_INDEX, _OBS_HANDS, _OBS_OUTCOME = _tag(17, 2), _tag(18, 0), _tag(19, 0), _tag(20, 2)

# A card as one element of a repeated string field, per field tag: b"\x3a\x02Ah" etc.
_CARD_FIELD: Final = {
    tag: {c: _len_field(tag, c.text.encode()) for c in DECK}
    for tag in (_T_STR3, _OBS_HAND, _OBS_DISCARD, _OBS_PICKED)
}
_CARD_BY_BYTES: Final = {c.text.encode(): c for c in DECK}
_EVENT_ACTION: Final = _tag(2, 2)
_REPLY_ACTION: Final = _tag(2, 2)

_action_bytes: dict[object, bytes] = {}
_legal_field: dict[object, bytes] = {}
_packed_field: dict[tuple[bytes, tuple[int, ...]], bytes] = {}
# Caches keyed by object identity, for values the engine keeps and hands out again decision
# after decision (events in the history, melds on the table, the rules, the players' names):
# a dict lookup by id() beats hashing the value. The entry holds the object, so its id cannot
# be reused by another object while the entry lives.
_by_id: dict[int, tuple[object, bytes]] = {}


def _action_key(action: Action) -> object:
    # Melds compare equal in any card order; their encoding keeps the order, so key on it.
    return action.cards if type(action) is Meld else action


_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(cache: dict[_K, _V], key: _K, value: _V) -> _V:
    """Cache ``value`` (the encoders' bytes by value, the decoders' values by bytes), bounded."""
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = value
    return value


def _encode_action(action: Action) -> bytes:
    key = _action_key(action)
    data = _action_bytes.get(key)
    if data is None:
        data = _remember(_action_bytes, key, action_to_proto(action).SerializeToString())
    return data


def _encode_legal(action: Action) -> bytes:
    if type(action) is Discard:  # most legal actions are discards: one table lookup
        return _LEGAL_DISCARD[action.card]
    key = _action_key(action)
    data = _legal_field.get(key)
    if data is None:
        data = _remember(_legal_field, key, _len_field(_OBS_LEGAL, _encode_action(action)))
    return data


def _identity_cached(obj: object, build: Any) -> bytes:
    entry = _by_id.get(id(obj))
    if entry is not None and entry[0] is obj:
        return entry[1]
    data: bytes = build(obj)
    if len(_by_id) >= _CACHE_LIMIT:
        _by_id.clear()
    _by_id[id(obj)] = (obj, data)
    return data


def _build_event_field(event: Event) -> bytes:
    body = _int_field(_OBS_SEAT, event.seat) + _len_field(_EVENT_ACTION, _encode_action(event.action))
    if event.card is not None:
        body += _CARD_FIELD[_T_STR3][event.card]
    return _len_field(_OBS_HISTORY, body)


def _encode_event(event: Event) -> bytes:
    action = event.action
    if event.card is None and type(action) is Draw and action.source == "stock" and 0 <= event.seat < 8:
        # Another seat's hidden stock draw: observe() makes a new object every time.
        return _HIDDEN_DRAW[event.seat]
    return _identity_cached(event, _build_event_field)


def _encode_history(history: tuple[Event, ...]) -> bytes:
    # _encode_event with the identity-cache hit inlined: histories grow to hundreds of events
    # in long hands, and nearly every event is a hit.
    by_id = _by_id
    parts = []
    for event in history:
        entry = by_id.get(id(event))
        parts.append(entry[1] if entry is not None and entry[0] is event else _encode_event(event))
    return b"".join(parts)


def _build_meld_field(meld: TableMeld) -> bytes:
    return _len_field(_OBS_TABLE, table_meld_to_proto(meld).SerializeToString())


def _build_rules_field(rules: Rules) -> bytes:
    return _len_field(_OBS_RULES, rules_to_proto(rules).SerializeToString())


def _build_players_field(players: tuple[str, ...]) -> bytes:
    # An Observation holding only field 2 serializes to exactly that field's bytes.
    return pb.Observation(players=players).SerializeToString()


def _encode_packed(tag: bytes, values: tuple[int, ...]) -> bytes:
    if not values:
        return b""
    key = (tag, values)
    data = _packed_field.get(key)
    if data is None:
        data = _remember(_packed_field, key, _packed(tag, values))
    return data


def _small_ints(tag: bytes) -> dict[int, bytes]:
    # Filled on demand past 127 (hand indexes, hands per match and turns can be large).
    return {v: _int_field(tag, v) for v in range(0x80)}


_SEAT_F, _DEALER_F, _TO_ACT_F, _PHASE_F = map(_small_ints, (_OBS_SEAT, _OBS_DEALER, _OBS_TO_ACT, _OBS_PHASE))
_STOCK_F, _TURN_F = _small_ints(_OBS_STOCK), _small_ints(_OBS_TURN)
_HAND_INDEX_F, _HANDS_F = _small_ints(_OBS_HAND_INDEX), _small_ints(_OBS_HANDS)
_PHASE_FIELD: Final = {name: _PHASE_F[value] for name, value in PHASE_TO_PB.items()}
_LEGAL_DISCARD: Final = {
    c: _len_field(_OBS_LEGAL, action_to_proto(Discard(c)).SerializeToString()) for c in DECK
}
_HIDDEN_DRAW: Final = tuple(_build_event_field(Event(seat, DRAW_STOCK)) for seat in range(8))


def _int_f(known: dict[int, bytes], tag: bytes, value: int) -> bytes:
    data = known.get(value)
    if data is None:
        data = _int_field(tag, value)
        if len(known) < 4096:
            known[value] = data
    return data


def encode_observation(obs: Observation) -> bytes:
    """The serialized Observation message for ``obs``: the same bytes as
    ``observation_to_proto(obs).SerializeToString()``, without building the message."""
    hand = _CARD_FIELD[_OBS_HAND]
    discard = _CARD_FIELD[_OBS_DISCARD]
    picked = obs.picked_up
    data = b"".join(
        (
            _int_f(_SEAT_F, _OBS_SEAT, obs.seat),
            _identity_cached(obs.players, _build_players_field),
            _identity_cached(obs.rules, _build_rules_field),
            _int_f(_DEALER_F, _OBS_DEALER, obs.dealer),
            _int_f(_TO_ACT_F, _OBS_TO_ACT, obs.to_act),
            _PHASE_FIELD[obs.phase],
            b"".join(map(hand.__getitem__, obs.hand)),
            _encode_packed(_OBS_HAND_SIZES, obs.hand_sizes),
            _int_f(_STOCK_F, _OBS_STOCK, obs.stock_size),
            b"".join(map(discard.__getitem__, obs.discard)),
            b"".join([_identity_cached(m, _build_meld_field) for m in obs.table]),
            _encode_history(obs.history),
            _CARD_FIELD[_OBS_PICKED][picked] if picked is not None else b"",
            _int_f(_TURN_F, _OBS_TURN, obs.turn),
            _encode_packed(_OBS_LOCKED, obs.locked),
            b"".join(map(_encode_legal, obs.legal_actions)),
            _encode_packed(_OBS_SCORES, obs.scores),
            _int_f(_HAND_INDEX_F, _OBS_HAND_INDEX, obs.hand_index),
            _int_f(_HANDS_F, _OBS_HANDS, obs.hands_in_match),
        )
    )
    if obs.outcome is not None:
        data += _len_field(_OBS_OUTCOME, outcome_to_proto(obs.outcome).SerializeToString())
    return data


def encode_decide_request(request: DecisionRequest) -> bytes:
    """The serialized DecideRequest for ``request`` (equal, field for field, to
    ``decision_to_proto(request).SerializeToString()``)."""
    match_field = _match_id_field.get(request.match_id)
    if match_field is None:
        match_field = _str_field(_T_STR1, request.match_id)
        _remember(_match_id_field, request.match_id, match_field)
    return b"".join(
        (
            match_field,
            _int_f(_REQUEST_HAND_F, _T_INT2, request.hand_index),
            _str_field(_T_STR3, request.decision_id),
            _int_f(_REQUEST_DEADLINE_F, _T_INT4, request.deadline_ms),
            _len_field(_T_MSG5, encode_observation(request.observation)),
        )
    )


def _str_field(tag: bytes, text: str) -> bytes:
    return _len_field(tag, text.encode()) if text else b""


_match_id_field: dict[str, bytes] = {}
_REQUEST_HAND_F, _REQUEST_DEADLINE_F = _small_ints(_T_INT2), _small_ints(_T_INT4)


class _SlowPathError(Exception):
    """The fast decoder met something it does not handle; the protobuf runtime decodes it."""


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _SlowPathError("varint too long")


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


def _read_packed(data: bytes, pos: int, end: int, out: list[int]) -> None:
    chunk = data[pos:end]
    if chunk.isascii():  # every byte below 0x80: each byte is one whole varint
        out.extend(chunk)
        return
    while pos < end:
        b = data[pos]
        if b < 0x80:
            out.append(b)
            pos += 1
        else:
            value, pos = _read_varint(data, pos)
            out.append(_int32(value))
    if pos != end:
        raise _SlowPathError("packed field overruns")


_event_by_bytes: dict[bytes, Event] = {}
_action_by_bytes: dict[bytes, Action] = {}
_meld_by_bytes: dict[bytes, TableMeld] = {}
_rules_by_bytes: dict[bytes, Rules] = {}


def _decode_event(raw: bytes) -> Event:
    # The canonical layout, [08 seat] 12 len action [1a len card], read directly: nearly
    # every decision brings one new event. Anything else goes through the protobuf runtime.
    n = len(raw)
    pos = seat = 0
    if n > 1 and raw[0] == 0x08 and raw[1] < 0x80:
        seat, pos = raw[1], 2
    if pos + 1 < n and raw[pos] == 0x12 and raw[pos + 1] < 0x80 and pos + 2 + raw[pos + 1] <= n:
        stop = pos + 2 + raw[pos + 1]
        action_bytes = raw[pos + 2 : stop]
        action = _action_by_bytes.get(action_bytes) or _decode_action(action_bytes)
        card = None
        if stop + 1 < n and raw[stop] == 0x1A:
            card = _CARD_BY_BYTES.get(raw[stop + 2 : stop + 2 + raw[stop + 1]])
            stop = stop + 2 + raw[stop + 1] if card is not None else -1
        if action is not None and stop == n:
            return _remember(_event_by_bytes, raw, Event(seat, action, card))
    return _decode_event_slowly(raw)


def _decode_event_slowly(raw: bytes) -> Event:
    msg = pb.Event.FromString(raw)
    card = CARD_BY_TEXT[msg.card] if msg.card else None
    if not msg.HasField("action"):
        raise ProtocolError("event: an action is required")
    return _remember(_event_by_bytes, raw, Event(msg.seat, action_from_proto(msg.action), card))


def _decode_action(raw: bytes) -> Action:
    return _remember(_action_by_bytes, raw, action_from_proto(pb.Action.FromString(raw)))


# The last history decoded for each (match id, seat): within a hand the next request's
# history starts with the same bytes, so only the new events need decoding. The key only
# decides where to look; a hit needs a byte-for-byte match, so a wrong key merely misses.
_history_memo: dict[tuple[str, int], tuple[bytes, tuple[Event, ...]]] = {}
_HISTORY_MEMO_LIMIT: Final = 4096


def _decode_observation(data: bytes, pos: int, end: int, match_id: str = "") -> Observation:
    seat = dealer = to_act = phase = stock_size = turn = hand_index = hands_in_match = 0
    players: list[str] = []
    hand: list[Card] = []
    discard: list[Card] = []
    hand_sizes: list[int] = []
    locked: list[int] = []
    scores: list[int] = []
    table: list[TableMeld] = []
    history: list[Event] = []
    legal: list[Action] = []
    rules: Rules | None = None
    picked: Card | None = None
    outcome: Outcome | None = None
    cards = _CARD_BY_BYTES
    events = _event_by_bytes
    actions = _action_by_bytes
    while pos < end:
        field_start = pos
        tag = data[pos]
        pos += 1
        if tag & 0x80:  # fields 16..20 have two-byte tags
            tag = (tag & 0x7F) | (data[pos] << 7)
            pos += 1
        if tag & 7 == 2:
            size = data[pos]
            pos += 1
            if size & 0x80:
                size, pos = _read_varint(data, pos - 1)
            stop = pos + size
            if stop > end:
                raise _SlowPathError("field overruns the message")
            raw = data[pos:stop]
            pos = stop
            # Cards, events and legal actions come in runs of one field; each branch eats
            # its whole run (while the next field has the same one-byte tag and length).
            if tag == 0x62:  # history
                memo = _history_memo.get((match_id, seat)) if match_id and not history else None
                known, known_events = memo if memo is not None else (b"", ())
                if known and field_start + len(known) <= end and data.startswith(known, field_start):
                    history.extend(known_events)
                    pos = field_start + len(known)
                else:
                    event = events.get(raw)
                    history.append(event if event is not None else _decode_event(raw))
                while pos < end and data[pos] == 0x62 and data[pos + 1] < 0x80:
                    stop = pos + 2 + data[pos + 1]
                    raw = data[pos + 2 : stop]
                    event = events.get(raw)
                    history.append(event if event is not None else _decode_event(raw))
                    pos = stop
                if match_id and pos <= end:
                    if len(_history_memo) >= _HISTORY_MEMO_LIMIT:
                        _history_memo.clear()
                    _history_memo[(match_id, seat)] = (data[field_start:pos], tuple(history))
            elif tag == 0x3A:  # hand
                hand.append(cards[raw])
                while pos < end and data[pos] == 0x3A:
                    stop = pos + 2 + data[pos + 1]
                    hand.append(cards[data[pos + 2 : stop]])
                    pos = stop
            elif tag == 0x52:  # discard
                discard.append(cards[raw])
                while pos < end and data[pos] == 0x52:
                    stop = pos + 2 + data[pos + 1]
                    discard.append(cards[data[pos + 2 : stop]])
                    pos = stop
            elif tag == 0x82:  # legal_actions (field 16: two-byte tag 0x82 0x01)
                action = actions.get(raw)
                legal.append(action if action is not None else _decode_action(raw))
                while pos < end - 1 and data[pos] == 0x82 and data[pos + 1] == 0x01 and data[pos + 2] < 0x80:
                    stop = pos + 3 + data[pos + 2]
                    raw = data[pos + 3 : stop]
                    action = actions.get(raw)
                    legal.append(action if action is not None else _decode_action(raw))
                    pos = stop
            elif tag == 0x12:
                players.append(raw.decode())
            elif tag == 0x42:
                _read_packed(data, stop - size, stop, hand_sizes)
            elif tag == 0x5A:
                meld = _meld_by_bytes.get(raw)
                if meld is None:
                    msg = pb.TableMeld.FromString(raw)
                    if msg.kind == pb.MELD_KIND_UNSPECIFIED:
                        raise _SlowPathError("meld kind left out")  # classifying needs the rules
                    meld = _remember(_meld_by_bytes, raw, table_meld_from_proto(msg, STANDARD))
                table.append(meld)
            elif tag == 0x1A:
                rules = _rules_by_bytes.get(raw)
                if rules is None:
                    rules = _remember(_rules_by_bytes, raw, rules_from_proto(pb.Rules.FromString(raw)))
            elif tag == 0x6A:
                picked = cards[raw]
            elif tag == 0x7A:
                _read_packed(data, stop - size, stop, locked)
            elif tag == 0x8A:  # scores (field 17)
                _read_packed(data, stop - size, stop, scores)
            elif tag == 0xA2:  # outcome (field 20)
                outcome = outcome_from_proto(pb.Outcome.FromString(raw))
            else:
                raise _SlowPathError(f"unexpected field tag {tag}")
        elif tag & 7 == 0:
            value = data[pos]
            pos += 1
            if value & 0x80:
                value, pos = _read_varint(data, pos - 1)
                value = _int32(value)
            if tag == 0x08:
                seat = value
            elif tag == 0x20:
                dealer = value
            elif tag == 0x28:
                to_act = value
            elif tag == 0x30:
                phase = value
            elif tag == 0x48:
                stock_size = value
            elif tag == 0x70:
                turn = value
            elif tag == 0x90:  # field 18
                hand_index = value
            elif tag == 0x98:  # field 19
                hands_in_match = value
            else:
                raise _SlowPathError(f"unexpected field tag {tag}")
        else:
            raise _SlowPathError(f"unexpected wire type in tag {tag}")
    if pos != end or rules is None:  # a run overran the message (pos > end), or no rules
        raise _SlowPathError("truncated, or no rules")
    return Observation(
        seat=seat,
        players=tuple(players),
        rules=rules,
        dealer=dealer,
        to_act=to_act,
        phase=PHASE_FROM_PB[phase],
        hand=tuple(hand),
        hand_sizes=tuple(hand_sizes),
        stock_size=stock_size,
        discard=tuple(discard),
        table=tuple(table),
        history=tuple(history),
        picked_up=picked,
        turn=turn,
        locked=tuple(locked),
        legal_actions=tuple(legal),
        scores=tuple(scores),
        hand_index=hand_index,
        hands_in_match=hands_in_match,
        outcome=outcome,
    )


def _decode_decide_fast(data: bytes) -> DecisionRequest:
    match_id = decision_id = ""
    hand_index = deadline_ms = 0
    obs: Observation | None = None
    pos, end = 0, len(data)
    while pos < end:
        tag = data[pos]
        pos += 1
        if tag & 7 == 2:
            size = data[pos]
            pos += 1
            if size & 0x80:
                size, pos = _read_varint(data, pos - 1)
            stop = pos + size
            if stop > end:
                raise _SlowPathError("field overruns the message")
            if tag == 0x2A:
                obs = _decode_observation(data, pos, stop, match_id)
            elif tag == 0x0A:
                match_id = data[pos:stop].decode()
            elif tag == 0x1A:
                decision_id = data[pos:stop].decode()
            else:
                raise _SlowPathError(f"unexpected field tag {tag}")
            pos = stop
        elif tag == 0x10 or tag == 0x20:
            value, pos = _read_varint(data, pos)
            if tag == 0x10:
                hand_index = _int32(value)
            else:
                deadline_ms = _int32(value)
        else:
            raise _SlowPathError(f"unexpected field tag {tag}")
    if obs is None:
        raise _SlowPathError("no observation")
    return DecisionRequest(match_id, hand_index, decision_id, obs, deadline_ms)


def decode_decide_request(data: bytes) -> DecisionRequest:
    """Parse a serialized DecideRequest; :class:`ProtocolError` if it is not a valid one."""
    try:
        return _decode_decide_fast(data)
    except (_SlowPathError, KeyError, IndexError, UnicodeDecodeError, ProtocolError, DecodeError):
        pass  # anything unusual: let the protobuf runtime decide (and word the error)
    try:
        msg = pb.DecideRequest.FromString(data)
    except DecodeError as exc:
        raise ProtocolError(f"not a DecideRequest: {exc}") from None
    if not msg.HasField("observation"):
        raise ProtocolError("DecideRequest: the observation is required")
    return decision_from_proto(msg)


# Index 0 is written out too: the oneof must say an index was chosen.
_REPLY_INDEX: Final = tuple(b"\x08" + encode_varint(i) for i in range(256))


def encode_reply(reply: object) -> bytes:
    """The serialized DecideResponse for a bot's answer (see :func:`reply_to_proto`)."""
    if type(reply) is int and 0 <= reply < 256:
        return _REPLY_INDEX[reply]
    if isinstance(reply, Action):
        return _len_field(_REPLY_ACTION, _encode_action(reply))
    return reply_to_proto(reply).SerializeToString()


def decode_reply(data: bytes) -> Action | int:
    """The action or index in a serialized DecideResponse; :class:`MalformedReplyError` if it
    is not a DecideResponse or names no action."""
    if len(data) == 2 and data[0] == 0x08 and data[1] < 0x80:  # the usual answer: a small index
        return data[1]
    try:
        msg = pb.DecideResponse.FromString(data)
    except DecodeError as exc:
        raise MalformedReplyError(f"the reply is not a DecideResponse: {exc}") from None
    return reply_from_proto(msg)
