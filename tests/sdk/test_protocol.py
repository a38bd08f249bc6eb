"""The tonk.v1 protocol without a network: the .proto contract, the generated code, and every
conversion between SDK values and protobuf messages (both the protobuf-runtime path and the
hand-written wire codecs, which must agree byte for byte)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, json_format
from helpers.case_files import CASES
from helpers.paths import ROOT
from helpers.strategies import rules_st
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk.actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, Discard, Event, Layoff, Meld
from sdk.bot import HandResult, MatchInfo, MatchSummary
from sdk.cards import Card
from sdk.dealing import deck_order
from sdk.decision_file import decision_from_json, decision_to_json
from sdk.engine import HandState
from sdk.messages import (
    MalformedReplyError,
    ProtocolError,
    action_from_proto,
    action_to_proto,
    decision_to_proto,
    hand_result_from_proto,
    hand_result_to_proto,
    match_info_from_proto,
    match_info_to_proto,
    match_summary_from_proto,
    match_summary_to_proto,
    observation_from_proto,
    observation_to_proto,
    record_from_proto,
    record_to_proto,
    reply_from_proto,
    rules_from_proto,
    rules_to_proto,
)
from sdk.observation import Observation, observe
from sdk.protocol import LINK_SERVICE_NAME, PROTOCOL_VERSION, RELAY_SERVICE_NAME, SERVICE_NAME
from sdk.protocol import bot_pb2 as pb
from sdk.protocol import link_pb2 as lpb
from sdk.record import HandRecord
from sdk.referee import DecisionRequest, LocalPlayer, play_match
from sdk.rules import STANDARD, Rules
from sdk.wire import (
    decode_decide_request,
    decode_reply,
    encode_decide_request,
    encode_observation,
    encode_reply,
    encode_varint,
)

PROTO = ROOT / "protos" / "tonk" / "v1" / "bot.proto"


def _gen_proto() -> Any:
    spec = importlib.util.spec_from_file_location("gen_proto", ROOT / "scripts" / "gen_proto.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the generated code and the .proto ---------------------------------------------------------


def test_generated_code_is_up_to_date_and_reproducible(tmp_path: Path) -> None:
    gen = _gen_proto()
    generated = gen.generate(tmp_path / "a")
    again = {p.relative_to(tmp_path / "b"): p.read_bytes() for p in gen.generate(tmp_path / "b")}
    assert {p.relative_to(tmp_path / "a"): p.read_bytes() for p in generated} == again, "not reproducible"
    committed = ROOT / "sdk" / "protocol"
    names = sorted(str(p.relative_to(tmp_path / "a")) for p in generated)
    on_disk = sorted(str(p.relative_to(committed)) for p in (committed / "tonk").rglob("*") if p.is_file())
    on_disk = [n for n in on_disk if "__pycache__" not in n]
    assert names == on_disk, "generated files differ: run scripts/gen_proto.py"
    stale = [n for n in names if (tmp_path / "a" / n).read_bytes() != (committed / n).read_bytes()]
    assert not stale, f"stale generated code {stale}: run `python scripts/gen_proto.py`"


def test_generated_imports_work_from_the_package() -> None:
    from sdk.protocol.tonk.v1 import bot_pb2_grpc

    assert bot_pb2_grpc.tonk_dot_v1_dot_bot__pb2 is pb  # type: ignore[attr-defined]
    assert pb.DESCRIPTOR.package == "tonk.v1"
    assert pb.DESCRIPTOR.services_by_name["BotService"].full_name == SERVICE_NAME


@pytest.fixture(scope="module")
def proto_file() -> descriptor_pb2.FileDescriptorProto:
    from grpc_tools import protoc

    out = ROOT / ".pytest_cache" / "bot_descriptor.pb"
    out.parent.mkdir(exist_ok=True)
    args = ["protoc", f"-I{ROOT / 'protos'}", "--include_source_info", f"--descriptor_set_out={out}"]
    assert protoc.main([*args, "tonk/v1/bot.proto"]) == 0
    files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    return files.file[0]


def _comments(file: descriptor_pb2.FileDescriptorProto) -> dict[tuple[int, ...], str]:
    return {tuple(loc.path): loc.leading_comments.strip() for loc in file.source_code_info.location}


def test_every_rpc_message_field_and_enum_is_commented(
    proto_file: descriptor_pb2.FileDescriptorProto,
) -> None:
    comments = _comments(proto_file)
    missing = []
    # Paths per descriptor.proto: message_type=4 (field=2, oneof_decl=8), enum_type=5
    # (value=2), service=6 (method=2).
    for i, message in enumerate(proto_file.message_type):
        if not comments.get((4, i)):
            missing.append(message.name)
        for j, fld in enumerate(message.field):
            if not comments.get((4, i, 2, j)):
                missing.append(f"{message.name}.{fld.name}")
        for j, oneof in enumerate(message.oneof_decl):
            if not oneof.name.startswith("_") and not comments.get((4, i, 8, j)):
                missing.append(f"{message.name}.{oneof.name} (oneof)")
    for i, enum in enumerate(proto_file.enum_type):
        if not comments.get((5, i)):
            missing.append(enum.name)
        for j, value in enumerate(enum.value):
            if not comments.get((5, i, 2, j)):
                missing.append(value.name)
    for i, service in enumerate(proto_file.service):
        if not comments.get((6, i)):
            missing.append(service.name)
        for j, method in enumerate(service.method):
            if not comments.get((6, i, 2, j)):
                missing.append(f"{service.name}.{method.name}")
    assert not missing, f"uncommented: {missing}"


def _upper_snake(name: str) -> str:
    out = "".join("_" + c if c.isupper() and i else c for i, c in enumerate(name))
    return out.upper()


def test_buf_style_names(proto_file: descriptor_pb2.FileDescriptorProto) -> None:
    assert proto_file.package == "tonk.v1"
    assert proto_file.name == "tonk/v1/bot.proto"
    for enum in proto_file.enum_type:
        prefix = _upper_snake(enum.name) + "_"
        assert enum.value[0].name == prefix + "UNSPECIFIED" and enum.value[0].number == 0
        assert all(v.name.startswith(prefix) for v in enum.value), enum.name
    for message in proto_file.message_type:
        assert message.name[0].isupper() and "_" not in message.name
        for fld in message.field:
            assert fld.name == fld.name.lower(), fld.name
    (service,) = proto_file.service
    assert service.name.endswith("Service")
    used = set()
    for method in service.method:
        assert method.input_type == f".tonk.v1.{method.name}Request"
        assert method.output_type == f".tonk.v1.{method.name}Response"
        used |= {method.input_type, method.output_type}
    assert len(used) == 2 * len(service.method)  # each request/response belongs to one RPC
    names = [m.name for m in service.method]
    assert names == ["GetInfo", "StartMatch", "Decide", "EndHand", "EndMatch", "EndDeal"]


def test_link_rpcs_have_their_own_request_and_response() -> None:
    """Buf STANDARD's RPC rules for link.proto without buf (docs/protocol.md says how to run
    it): each RPC has its own <Rpc>Request and <Rpc>Response. The service and RPC names are
    the gRPC paths bots, gateways and workers of other versions call: they never change."""
    rpcs = {}
    used = set()
    for service in lpb.DESCRIPTOR.services_by_name.values():
        for method in service.methods:
            assert method.input_type.full_name == f"tonk.v1.{method.name}Request"
            assert method.output_type.full_name == f"tonk.v1.{method.name}Response"
            used |= {method.input_type.full_name, method.output_type.full_name}
            rpcs[f"/{service.full_name}/{method.name}"] = (method.client_streaming, method.server_streaming)
    assert len(used) == 2 * len(rpcs)
    assert rpcs == {
        f"/{LINK_SERVICE_NAME}/Connect": (True, True),
        f"/{RELAY_SERVICE_NAME}/Relay": (False, False),
        f"/{RELAY_SERVICE_NAME}/RelayStream": (True, True),
    }


# link.proto messages with their bytes and JSON as the generated code at acea325 wrote them,
# when Connect's messages were BotToArena and ArenaToBot and RelayStream shared Relay's
# RelayRequest and RelayResponse. Message names are not on the wire; everything else is, so
# bots and arena processes built before the rename read these messages the same.
_INFO = pb.GetInfoResponse(name="lefty", version="1.0", protocol_version="tonk.v1")
_LIMITS = lpb.LinkLimits(max_message_bytes=1 << 20, max_calls_in_flight=64, max_stray_replies_per_minute=30)
_WELCOME = lpb.LinkWelcome(connection_id="c1", bot_name="lefty", capacity=4, registered=True, limits=_LIMITS)
_END_DEAL = lpb.LinkCall(call_id=7, deadline_ms=500, end_deal=pb.EndDealRequest(seed=5))
_RELAY_REQUEST: dict[str, Any] = dict(
    bot_id=3, session="m1:0", call=b"\x08\x01", last=True, id=9, timeout_ms=500
)
_RELAY_RESPONSE: dict[str, Any] = dict(
    reply=b"\x08\x07", connection_id="c1", bot_us=0, id=9, code=14, message="gone", bot_error=True
)
_RELAY_REQUEST_WIRE = (
    "080312046d313a301a0208012001280930f403",
    {"botId": "3", "session": "m1:0", "call": "CAE=", "last": True, "id": "9", "timeoutMs": "500"},
)
_RELAY_RESPONSE_WIRE = (
    "0a0208071202633118002009280e3204676f6e653801",
    {
        "reply": "CAc=",
        "connectionId": "c1",
        "botUs": "0",
        "id": "9",
        "code": 14,
        "message": "gone",
        "botError": True,
    },
)
LINK_WIRE: list[tuple[Any, str, dict[str, Any]]] = [
    (
        lpb.ConnectRequest(hello=lpb.LinkHello(bot_name="lefty", capacity=4, info=_INFO)),
        "0a200a056c6566747910041a150a056c656674791203312e302207746f6e6b2e7631",
        {"hello": {"botName": "lefty", "capacity": 4, "info": json_format.MessageToDict(_INFO)}},
    ),
    (
        lpb.ConnectRequest(reply=lpb.LinkReply(call_id=7, decide=pb.DecideResponse(action_index=2))),
        "1206080762020802",
        {"reply": {"callId": "7", "decide": {"actionIndex": 2}}},
    ),
    (
        lpb.ConnectRequest(reply=lpb.LinkReply(call_id=8, error=lpb.LinkError(code=12, message="no"))),
        "120b0808a20106080c12026e6f",
        {"reply": {"callId": "8", "error": {"code": 12, "message": "no"}}},
    ),
    (
        lpb.ConnectResponse(welcome=_WELCOME),
        "0a190a02633112056c65667479180420012a08088080401040181e",
        {
            "welcome": {
                "connectionId": "c1",
                "botName": "lefty",
                "capacity": 4,
                "registered": True,
                "limits": {
                    "maxMessageBytes": 1048576,
                    "maxCallsInFlight": 64,
                    "maxStrayRepliesPerMinute": 30,
                },
            }
        },
    ),
    (
        lpb.ConnectResponse(call=_END_DEAL),
        "1209080710f4037a021005",
        {"call": {"callId": "7", "deadlineMs": 500, "endDeal": {"seed": "5"}}},
    ),
    (
        lpb.ConnectResponse(notice=lpb.LinkNotice(kind="late_reply", message="late")),
        "1a120a0a6c6174655f7265706c7912046c617465",
        {"notice": {"kind": "late_reply", "message": "late"}},
    ),
    (lpb.RelayRequest(**_RELAY_REQUEST), *_RELAY_REQUEST_WIRE),
    (lpb.RelayStreamRequest(**_RELAY_REQUEST), *_RELAY_REQUEST_WIRE),
    (lpb.RelayResponse(**_RELAY_RESPONSE), *_RELAY_RESPONSE_WIRE),
    (lpb.RelayStreamResponse(**_RELAY_RESPONSE), *_RELAY_RESPONSE_WIRE),
]


@pytest.mark.parametrize(
    ("message", "wire", "as_json"), LINK_WIRE, ids=[message.DESCRIPTOR.name for message, *_ in LINK_WIRE]
)
def test_link_messages_keep_their_bytes_and_json(message: Any, wire: str, as_json: dict[str, Any]) -> None:
    assert message.SerializeToString().hex() == wire
    assert type(message).FromString(bytes.fromhex(wire)) == message
    assert json_format.MessageToDict(message) == as_json
    assert json_format.ParseDict(as_json, type(message)()) == message


def _layout(message: Any) -> list[tuple[Any, ...]]:
    return [
        (f.number, f.name, f.json_name, f.type, f.is_repeated, f.has_presence, oneof and oneof.name)
        for f in message.DESCRIPTOR.fields
        for oneof in [f.containing_oneof]
    ]


def test_relay_stream_messages_are_relays_field_for_field() -> None:
    """So the pinned bytes above set every field of both, now and after later edits."""
    assert _layout(lpb.RelayStreamRequest) == _layout(lpb.RelayRequest)
    assert _layout(lpb.RelayStreamResponse) == _layout(lpb.RelayResponse)
    assert [f.name for f in lpb.RelayRequest.DESCRIPTOR.fields] == list(_RELAY_REQUEST)
    assert [f.name for f in lpb.RelayResponse.DESCRIPTOR.fields] == list(_RELAY_RESPONSE)


def test_rules_message_carries_every_rule_option() -> None:
    fields = {f.name for f in pb.Rules.DESCRIPTOR.fields}
    assert set(Rules.option_names()) <= fields


def test_observation_message_carries_every_observation_field() -> None:
    fields = {f.name for f in pb.Observation.DESCRIPTOR.fields}
    assert {f.name for f in dataclasses.fields(Observation)} <= fields


def test_start_match_has_no_seed() -> None:
    names = {f.name for f in pb.StartMatchRequest.DESCRIPTOR.fields}
    assert not any("seed" in n for n in names)
    assert "seed" in {f.name for f in pb.EndMatchRequest.DESCRIPTOR.fields}


# -- observations: random legal play, every seat, every moment ---------------------------------



MAX_ACTIONS = 80  # long enough for full tables and reshuffles; checks grow with the history


def _observations(
    seed: int, players: int, rules: Rules, choice_seed: int, hand_index: int, scores: tuple[int, ...]
) -> list[Observation]:
    """Observations along one hand played at random: the acting seat's at every step, every
    seat's every tenth step and at the end (the finished hand carries the outcome)."""
    rng = random.Random(choice_seed)
    state = HandState.deal(deck_order(seed, hand_index % 50), players, hand_index % players, rules)
    names = tuple(f"bot-{i}-é" for i in range(players))
    out: list[Observation] = []
    for step in range(MAX_ACTIONS + 1):
        over = state.outcome is not None or step == MAX_ACTIONS
        seats = range(players) if over or step % 10 == 0 else (state.to_act,)
        out.extend(observe(state, seat, names, scores, hand_index, hand_index + 300) for seat in seats)
        if over:
            return out
        legal = state.legal_actions()
        # Prefer melds and lay-offs, and playing on over dropping, so hands get long
        # histories, full tables and hit locks.
        plays = [a for a in legal if a.kind in ("meld", "layoff")]
        non_drop = [a for a in legal if a is not DROP] or legal
        if plays and rng.random() < 0.7:
            state.apply(rng.choice(plays))
        else:
            state.apply(rng.choice(non_drop if rng.random() < 0.95 else legal))
    return out


def _check_round_trip(obs: Observation) -> None:
    message = observation_to_proto(obs)
    data = message.SerializeToString()
    assert encode_observation(obs) == data  # the fast encoder is byte-identical to upb
    assert observation_from_proto(pb.Observation.FromString(data)) == obs
    request = DecisionRequest("match-é/1", obs.hand_index, f"match-é/1/{obs.turn}", obs, 1500 + obs.turn)
    wire = encode_decide_request(request)
    assert wire == decision_to_proto(request).SerializeToString()
    assert decode_decide_request(wire) == request


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**64 - 1),
    players=st.integers(2, 6),
    rules=rules_st,
    choice_seed=st.integers(0, 2**32),
    hand_index=st.integers(0, 400),
    scores=st.lists(st.integers(-(2**31), 2**31 - 1), min_size=0, max_size=6),
)
def test_every_observation_round_trips(
    seed: int, players: int, rules: Rules, choice_seed: int, hand_index: int, scores: list[int]
) -> None:
    for obs in _observations(seed, players, rules, choice_seed, hand_index, tuple(scores[:players])):
        _check_round_trip(obs)


def test_round_trip_reaches_every_kind_of_state() -> None:
    """The property above is only as good as the states it sees: make sure random play
    reaches melds, lay-offs, hit locks, pickups and every way a hand ends."""
    seen: set[str] = set()
    rules = Rules(hit_lock=True, book_layoff=True, ace_high_or_low=True, tonk_low=0, tonk_high=200)
    for k in range(16):
        for obs in _observations(k, 2 + k % 5, rules if k % 2 else STANDARD, k, k, ()):
            _check_round_trip(obs)
            seen |= {a.kind for a in obs.legal_actions}
            seen |= {"table"} if obs.table else set()
            seen |= {"locked"} if obs.locked else set()
            seen |= {"picked"} if obs.picked_up else set()
            seen |= {f"end:{obs.outcome.end}"} if obs.outcome else set()
    missing = {"drop", "draw", "meld", "discard", "table", "picked"} - seen
    assert not missing, f"random play never reached {missing}"
    assert {"end:drop", "end:out"} & seen


def _position(hands: list[str], table: list[tuple[int, str]], discard: str, rules: Rules) -> HandState:
    """A hand under way: the given hands and table, one discard, every other card in stock."""
    from sdk.cards import DECK
    from sdk.melds import make_meld

    held = [[Card.parse(t) for t in h.split()] for h in hands]
    melds = [make_meld(owner, [Card.parse(t) for t in cards.split()], rules) for owner, cards in table]
    used = {c for h in held for c in h} | {c for m in melds for c in m.cards} | {Card.parse(discard)}
    stock = [c for c in DECK if c not in used]
    return HandState.from_position(held, [Card.parse(discard)], stock, melds, rules=rules, to_act=1)


def test_round_trip_through_a_lay_off_and_a_hit_lock() -> None:
    rules = Rules(hit_lock=True, book_layoff=True)
    hands = ["2c 3c 9d Kd", "8h Jc Qc Kc 4s", "2d 2s 5d"]
    state = _position(hands, [(0, "5h 6h 7h"), (2, "9s 9h 9c")], "Ad", rules)
    clubs = Meld((Card.parse("Jc"), Card.parse("Qc"), Card.parse("Kc")))
    steps = [DRAW_DISCARD, Layoff(Card.parse("8h"), 0), clubs]
    for action in steps:
        state.apply(action)
        for seat in range(3):
            _check_round_trip(observe(state, seat))
    assert state.locked == {0}
    state.apply(Discard(Card.parse("4s")))  # Ad was picked up: it may not go back
    state.apply(DRAW_STOCK)
    state.apply(Discard(state.hands[2][0]))
    obs = observe(state, 0)
    assert obs.locked == (0,) and not obs.can_drop() and obs.table[0].cards[-1] == Card.parse("8h")
    _check_round_trip(obs)


def test_round_trip_of_a_forfeited_hand() -> None:
    state = HandState.deal(deck_order(3, 0), 3)
    state.apply(DRAW_STOCK)
    state.forfeit(0)
    obs = observe(state, 1)
    assert obs.outcome is not None and obs.outcome.faulted == 0
    _check_round_trip(obs)


# -- the decoder's fallback: valid but unusual encodings decode the same -----------------------


def _sample_request() -> DecisionRequest:
    state = HandState.deal(deck_order(11, 0), 3, rules=Rules(tonk_low=0, tonk_high=200))
    state.apply(DRAW_DISCARD)
    obs = observe(state, state.to_act, ("a", "b", "c"), (3, -1, -2), 2, 10)
    return DecisionRequest("m", 2, "m/2/1", obs, 900)


def test_decoder_accepts_lenient_card_spellings() -> None:
    request = _sample_request()
    message = decision_to_proto(request)
    hand = list(message.observation.hand)
    del message.observation.hand[:]
    message.observation.hand.extend(h.lower().replace("10", "T") for h in hand)
    assert decode_decide_request(message.SerializeToString()) == request


def test_decoder_ignores_unknown_fields_like_the_protobuf_runtime() -> None:
    request = _sample_request()
    unknown = b"\xfa\x07\x03abc"  # field 127, length-delimited: from a newer referee
    assert decode_decide_request(encode_decide_request(request) + unknown) == request
    obs_unknown = pb.DecideRequest(observation=observation_to_proto(request.observation))
    data = obs_unknown.SerializeToString()
    assert decode_decide_request(data).observation == request.observation


def test_decoder_accepts_unpacked_repeated_ints() -> None:
    request = _sample_request()
    data = encode_decide_request(request)
    # Re-encode: observation without scores, then scores as three unpacked varint fields.
    message = decision_to_proto(request)
    del message.observation.scores[:]
    obs_bytes = message.observation.SerializeToString() + b"".join(
        b"\x88\x01" + encode_varint(v) for v in request.observation.scores
    )
    outer = pb.DecideRequest(match_id="m", hand_index=2, decision_id="m/2/1", deadline_ms=900)
    rebuilt = outer.SerializeToString() + b"\x2a" + encode_varint(len(obs_bytes)) + obs_bytes
    assert pb.DecideRequest.FromString(rebuilt) == pb.DecideRequest.FromString(data)
    assert decode_decide_request(rebuilt) == request


@pytest.mark.parametrize(
    "data",
    [b"\xff\xff\xff", b"\x2a\x10abc", b"", pb.DecideRequest(match_id="m").SerializeToString()],
    ids=["garbage", "truncated", "empty", "no-observation"],
)
def test_decoder_rejects_what_is_not_a_decide_request(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_decide_request(data)


def test_decoder_rejects_bad_values_with_protocol_error() -> None:
    message = decision_to_proto(_sample_request())
    message.observation.hand.append("11s")
    with pytest.raises(ProtocolError, match="11s"):
        decode_decide_request(message.SerializeToString())
    message = decision_to_proto(_sample_request())
    message.observation.rules.tonk_high = 0
    with pytest.raises(ProtocolError, match="rules"):
        decode_decide_request(message.SerializeToString())
    message = decision_to_proto(_sample_request())
    message.observation.phase = pb.PHASE_UNSPECIFIED
    with pytest.raises(ProtocolError, match="phase"):
        decode_decide_request(message.SerializeToString())


def test_table_meld_without_kind_is_classified() -> None:
    request = _sample_request()
    message = decision_to_proto(request)
    meld = message.observation.table.add(owner=1, cards=["Qh", "Kh", "Ah"])
    assert meld.kind == pb.MELD_KIND_UNSPECIFIED
    with pytest.raises(ProtocolError):  # Q K A is no spread under the standard rules
        decode_decide_request(message.SerializeToString())
    message.observation.rules.ace_high_or_low = True
    decoded = decode_decide_request(message.SerializeToString())
    assert decoded.observation.table[-1].kind == "spread"
    assert (decoded.observation.table[-1].lo, decoded.observation.table[-1].hi) == (12, 14)


# -- replies ----------------------------------------------------------------------------------

ACTIONS: list[Action] = [
    DROP,
    DRAW_STOCK,
    DRAW_DISCARD,
    Meld((Card.parse("8h"), Card.parse("8d"), Card.parse("8s"))),
    Meld((Card.parse("Qs"), Card.parse("Ks"), Card.parse("As"))),
    Layoff(Card.parse("10c"), 3),
    Discard(Card.parse("Ac")),
]


@pytest.mark.parametrize("action", ACTIONS, ids=str)
def test_action_round_trips(action: Action) -> None:
    assert action_from_proto(action_to_proto(action)) == action
    decoded = decode_reply(encode_reply(action))
    assert decoded == action
    if isinstance(action, Meld):
        assert decoded.cards == action.cards  # type: ignore[attr-defined]
    assert decode_reply(pb.DecideResponse(text=str(action)).SerializeToString()) == action


@pytest.mark.parametrize("index", [0, 1, 127, 128, 255, 256, 70_000, -1])
def test_index_replies_round_trip(index: int) -> None:
    data = encode_reply(index)
    assert data == pb.DecideResponse(action_index=index).SerializeToString()
    assert decode_reply(data) == index


def test_index_beyond_int32_stays_out_of_range() -> None:
    assert decode_reply(encode_reply(2**40)) == -1


@pytest.mark.parametrize("reply", ["draw stock", None, 1.5, True, object()])
def test_a_non_action_reply_encodes_as_an_empty_response(reply: object) -> None:
    assert encode_reply(reply) == b""
    with pytest.raises(MalformedReplyError, match="names no action"):
        decode_reply(encode_reply(reply))


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (pb.DecideResponse(), "names no action"),
        (pb.DecideResponse(text="discard 11s"), "unreadable action"),
        (pb.DecideResponse(text="fold"), "unreadable action"),
        (pb.DecideResponse(action=pb.Action()), "unreadable action"),
        (pb.DecideResponse(action=pb.Action(draw=pb.DrawAction())), "unreadable action"),
        (pb.DecideResponse(action=pb.Action(discard=pb.DiscardAction(card="Zz"))), "unreadable action"),
        (pb.DecideResponse(action=pb.Action(layoff=pb.LayoffAction(onto=1))), "unreadable action"),
    ],
)
def test_unreadable_replies_are_malformed(response: pb.DecideResponse, message: str) -> None:
    with pytest.raises(MalformedReplyError, match=message):
        reply_from_proto(response)


def test_garbage_reply_bytes_are_malformed() -> None:
    with pytest.raises(MalformedReplyError, match="not a DecideResponse"):
        decode_reply(b"\x12\x10abc")


def test_lenient_reply_cards() -> None:
    reply = pb.DecideResponse(action=pb.Action(discard=pb.DiscardAction(card="ts")))
    assert reply_from_proto(reply) == Discard(Card.parse("10s"))


# -- match lifecycle ----------------------------------------------------------------------------


@pytest.mark.parametrize("rules", [STANDARD, Rules(hit_lock=True, turn_cap=0, tonk_low=3)])
def test_match_info_round_trips(rules: Rules) -> None:
    info = MatchInfo("m-1", 2, ("a", "b", "c"), rules, 50, 1, 750, 3000)
    message = match_info_to_proto(info)
    assert message.protocol_version == PROTOCOL_VERSION
    assert match_info_from_proto(pb.StartMatchRequest.FromString(message.SerializeToString())) == info
    assert rules_from_proto(rules_to_proto(rules)) == rules
    assert rules_to_proto(rules).name == rules.name


def _played_results() -> list[HandResult]:
    from bots.random_bot import RandomBot

    results: list[HandResult] = []

    class Keep(LocalPlayer):
        def hand_end(self, result: HandResult) -> None:
            results.append(result)

    rules = Rules(book_layoff=True, tonk_low=0, tonk_high=200)
    play_match([Keep(RandomBot), LocalPlayer(RandomBot), LocalPlayer(RandomBot)], 5, 12, rules=rules)
    return results


def test_hand_result_round_trips_with_structured_record() -> None:
    for result in _played_results():
        message = pb.EndHandRequest.FromString(hand_result_to_proto(result, seat=1).SerializeToString())
        assert message.seat == 1
        assert hand_result_from_proto(message) == result
        assert json.loads(message.record_json) == result.record
        # The structured record says the same as the JSON text.
        rebuilt = record_from_proto(message.record)
        assert HandRecord.from_json(rebuilt).verify() == HandRecord.from_json(result.record).verify()
        assert record_to_proto(rebuilt) == message.record
        # A referee that sends only the structured form is understood too.
        message.record_json = ""
        only_structured = hand_result_from_proto(message)
        assert HandRecord.from_json(only_structured.record).verify().payoffs == result.payoffs


def test_hand_result_from_a_position_record_with_a_table() -> None:
    record = HandRecord.from_text((CASES / "seed-example-2.json").read_text())
    data = record.to_json()
    message = record_to_proto(data)
    assert [list(m.cards) for m in message.table] == [m["cards"] for m in data.get("table", [])]
    assert HandRecord.from_json(record_from_proto(message)).verify() == record.verify()


@pytest.mark.parametrize(
    "summary",
    [
        MatchSummary("m", (4, -2, -2), 2**64 - 1, ()),
        MatchSummary("m", (0, 0), 0, (1,)),
        MatchSummary("m", (1, -1), None, ()),
    ],
)
def test_match_summary_round_trips(summary: MatchSummary) -> None:
    message = match_summary_to_proto(summary, seat=0)
    assert match_summary_from_proto(pb.EndMatchRequest.FromString(message.SerializeToString())) == summary


# -- decision files -----------------------------------------------------------------------------


def test_decision_json_round_trips() -> None:
    request = _sample_request()
    data = json.loads(json.dumps(decision_to_json(request)))
    assert decision_from_json(data) == dataclasses.replace(request)
    # A bare observation is a decision too (ids and deadline get defaults).
    bare = decision_from_json(request.observation.to_json())
    assert bare.observation == request.observation
    with pytest.raises(ProtocolError):
        decision_from_json({"observation": {"seat": 0}})
    with pytest.raises(ProtocolError):
        decision_from_json([1, 2])


def test_hidden_stock_draws_stay_hidden_on_the_wire() -> None:
    state = HandState.deal(deck_order(21, 0), 2, rules=Rules(tonk_low=0, tonk_high=200))
    state.apply(DRAW_STOCK)  # seat 1 draws: seat 0 must not learn the card
    drawn = state.history[-1].card
    assert drawn is not None
    for seat, visible in ((0, False), (1, True)):
        obs = observe(state, seat)
        message = pb.Observation.FromString(encode_observation(obs))
        assert (message.history[-1].card == drawn.text) is visible
        assert Event(1, DRAW_STOCK, drawn if visible else None) == obs.history[-1]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def test_decoding_a_whole_match_in_play_order() -> None:
    """The decoder remembers each seat's last history; requests in the order a bot server
    receives them (hands ending, seats interleaved, the same match id throughout) must all
    decode exactly, memo hits and misses alike."""
    from bots.random_bot import RandomBot
    from sdk.conformance import SparringBot

    requests: list[DecisionRequest] = []

    class Keep(LocalPlayer):
        def act(self, request: DecisionRequest) -> Any:
            requests.append(request)
            return super().act(request)

    rules = Rules(tonk_low=0, tonk_high=999, hit_lock=True)
    play_match([Keep(SparringBot), Keep(RandomBot), Keep(SparringBot)], 12, 8, match_id="memo", rules=rules)
    assert len({r.hand_index for r in requests}) == 8
    for request in requests:
        assert decode_decide_request(encode_decide_request(request)) == request
    # A history that is not a continuation (another hand, same match and seat) decodes too.
    for request in reversed(requests[-40:]):
        assert decode_decide_request(encode_decide_request(request)) == request


@pytest.mark.parametrize(
    "event",
    [
        pb.Event(seat=0, action=pb.Action(draw=pb.DrawAction(source=pb.DRAW_SOURCE_STOCK))),
        pb.Event(seat=3, action=pb.Action(draw=pb.DrawAction(source=pb.DRAW_SOURCE_DISCARD)), card="10s"),
        pb.Event(seat=5, action=pb.Action(meld=pb.MeldAction(cards=["8h", "8d", "8s"]))),
        pb.Event(seat=1, action=pb.Action(layoff=pb.LayoffAction(card="Qs", onto=200))),
        pb.Event(seat=2, action=pb.Action(discard=pb.DiscardAction(card="Ah"))),
        pb.Event(seat=1, action=pb.Action(draw=pb.DrawAction(source=pb.DRAW_SOURCE_DISCARD)), card="ts"),
        pb.Event(seat=300, action=pb.Action(drop=pb.DropAction())),
    ],
    ids=["hidden-draw", "pickup", "meld", "layoff-onto-200", "discard", "lenient-card", "seat-300"],
)
def test_event_decoder_agrees_with_the_protobuf_runtime(event: pb.Event) -> None:
    from sdk import wire

    raw = event.SerializeToString()
    wire._event_by_bytes.clear()
    wire._action_by_bytes.clear()
    assert wire._decode_event(raw) == wire._decode_event_slowly(raw)
