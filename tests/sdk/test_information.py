"""Information hiding: nothing a bot receives before a hand is over holds another seat's
hidden cards, the stock order or the match seed.

Many seeded matches at 2..6 seats, under several rule variants, are played through the real
referee; every message each seat receives is captured exactly as it goes on the wire
(in-process seats are encoded with sdk.wire, as GrpcPlayer does; a share of the matches
runs over real gRPC and the bot server records the bytes it received). Every decision is
then checked against the true state of the hand, replayed from the referee's record:

* no card hidden from that seat (in another hand or the stock, never face up) is named in
  the message, and no run of the hidden stock appears in any list it holds;
* the observation is exactly ``observe()`` of that state, and ``observe()`` is blind to the
  hidden cards: shuffling them among the other hands and the stock gives the same bytes;
* the seed is in no message but EndMatch (StartMatch has no field for it), which comes last.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from helpers.faultbots import start_fault_server
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bots.greedy import GreedyBot
from bots.heuristic import HeuristicBot
from bots.random_bot import RandomBot
from sdk.actions import Discard, Draw, Layoff, Meld
from sdk.bot import Bot, HandResult, MatchInfo, MatchSummary
from sdk.cards import Card
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.grpc_player import GrpcPlayer
from sdk.messages import (
    hand_result_to_proto,
    match_info_to_proto,
    match_summary_to_proto,
    observation_to_proto,
)
from sdk.observation import Observation, observe
from sdk.protocol import bot_pb2 as pb
from sdk.referee import DecisionRequest, LocalPlayer, MatchResult, Player, RefereeConfig, play_match
from sdk.rules import STANDARD, Rules
from sdk.server import BotServicer
from sdk.wire import encode_decide_request

MIN_DECISIONS = 10_000
MATCHES = 64
GRPC_EVERY = 6  # one match in six runs over real gRPC
HANDS = 14
CONFIG = RefereeConfig(decision_deadline_ms=10_000, time_bank_ms=0, max_faults=3)

RULE_VARIANTS: list[Rules] = [
    STANDARD,
    Rules(hit_lock=True, book_layoff=True),
    Rules(stock_reshuffle=True, discard_pickup_may_return=True),  # the stock is turned discards
    Rules(ace_high_or_low=True, meld_out_double=True, turn_cap=40),
    Rules(tonk_low=0, tonk_high=99, turn_cap=0),  # no TONK: every hand is played out
]

Kind = str  # "start", "decide", "end_hand", "end_match"


# -- capturing what each seat receives -------------------------------------------------------


@dataclass
class Inbox:
    """The messages one seat received, in order, as wire bytes."""

    messages: list[tuple[Kind, bytes]] = field(default_factory=list)
    # In-process only: the Observation objects handed to the bot, for an object-graph check.
    observations: list[Observation] = field(default_factory=list)


class RecordingPlayer:
    """An in-process seat that keeps the exact bytes GrpcPlayer would have sent it."""

    def __init__(self, factory: type[Bot], inbox: Inbox):
        self.inner = LocalPlayer(factory)
        self.inbox = inbox
        self.seat = 0

    def describe(self) -> dict[str, str]:
        return self.inner.describe()

    def match_start(self, info: MatchInfo) -> None:
        self.seat = info.seat
        self.inbox.messages.append(("start", match_info_to_proto(info).SerializeToString()))
        self.inner.match_start(info)

    def act(self, request: DecisionRequest) -> Any:
        self.inbox.messages.append(("decide", encode_decide_request(request)))
        self.inbox.observations.append(request.observation)
        return self.inner.act(request)

    def hand_end(self, result: HandResult) -> None:
        self.inbox.messages.append(("end_hand", hand_result_to_proto(result, self.seat).SerializeToString()))
        self.inner.hand_end(result)

    def match_end(self, summary: MatchSummary) -> None:
        self.inbox.messages.append(
            ("end_match", match_summary_to_proto(summary, self.seat).SerializeToString())
        )
        self.inner.match_end(summary)

    def close(self) -> None:
        pass


class RecordingServicer(BotServicer):
    """A bot server that records every request it receives, per (match id, seat)."""

    def __init__(self, factory: type[Bot]):
        super().__init__(factory)
        self.inboxes: dict[tuple[str, int], Inbox] = {}
        self._lock = threading.Lock()

    def _keep(self, match_id: str, seat: int, kind: Kind, data: bytes) -> None:
        with self._lock:
            self.inboxes.setdefault((match_id, seat), Inbox()).messages.append((kind, data))

    def start_match(self, request: pb.StartMatchRequest, context: grpc.ServicerContext) -> Any:
        self._keep(request.match_id, request.seat, "start", request.SerializeToString())
        return super().start_match(request, context)

    def decide(self, data: bytes, context: grpc.ServicerContext) -> bytes:
        msg = pb.DecideRequest.FromString(data)
        self._keep(msg.match_id, msg.observation.seat, "decide", data)
        return super().decide(data, context)

    def end_hand(self, request: pb.EndHandRequest, context: grpc.ServicerContext) -> Any:
        self._keep(request.match_id, request.seat, "end_hand", request.SerializeToString())
        return super().end_hand(request, context)

    def end_match(self, request: pb.EndMatchRequest, context: grpc.ServicerContext) -> Any:
        self._keep(request.match_id, request.seat, "end_match", request.SerializeToString())
        return super().end_match(request, context)


# -- reading messages ------------------------------------------------------------------------


def walk(msg: Message) -> Iterator[tuple[str, Any]]:
    """Every scalar value set anywhere in ``msg`` (repeated fields one element at a time),
    with its field's full name; lists of strings are also yielded whole under ``list:``."""
    for fd, value in msg.ListFields():
        if fd.type == fd.TYPE_MESSAGE:
            for sub in value if fd.is_repeated else (value,):
                yield from walk(sub)
        elif fd.is_repeated:
            values = list(value)
            if fd.type == fd.TYPE_STRING:
                yield "list:" + fd.full_name, values
            for v in values:
                yield fd.full_name, v
        else:
            yield fd.full_name, value


def cards_named(msg: Message) -> set[Card]:
    return scan(msg)[0]


def scan(msg: Message) -> tuple[set[Card], list[list[str]], list[int]]:
    """One pass over ``msg``: the cards any string names, every list of strings, every int."""
    named: set[Card] = set()
    lists: list[list[str]] = []
    ints: list[int] = []
    for _, value in walk(msg):
        if type(value) is str:
            card = _CARD_TEXT.get(value)
            if card is not None:
                named.add(card)
            elif " " in value:  # a text action ("meld 8h 8d 8s") or any other prose
                named.update(_CARD_TEXT[w] for w in value.split() if w in _CARD_TEXT)
        elif type(value) is int:
            ints.append(value)
        elif type(value) is list:
            lists.append(value)
    return named, lists, ints


_CARD_TEXT: dict[str, Card] = {c.text: c for c in (Card.from_index(i) for i in range(52))}


def reachable_cards(obj: Any) -> set[Card]:
    """Every Card reachable from ``obj`` through attributes and containers; fails if a
    HandState (the referee's full state) is reachable."""
    seen: set[int] = set()
    found: set[Card] = set()
    stack = [obj]
    while stack:
        item = stack.pop()
        if id(item) in seen or item is None or isinstance(item, str | int | float | bytes):
            continue
        seen.add(id(item))
        assert not isinstance(item, HandState), "an observation reaches the referee's HandState"
        if isinstance(item, Card):
            found.add(item)
        elif isinstance(item, tuple | list | set | frozenset):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif hasattr(item, "__slots__") or hasattr(item, "__dict__"):
            if type(item).__module__ in ("builtins", "enum") or isinstance(item, type):
                continue
            for cls in type(item).__mro__:
                for name in getattr(cls, "__slots__", ()):
                    if hasattr(item, name):
                        stack.append(getattr(item, name))
            stack.extend(getattr(item, "__dict__", {}).values())
    return found


def seed_forms(seed: int) -> list[bytes]:
    """Ways a seed could be spelled on the wire: decimal and hex text, fixed64 either way,
    and the protobuf varint (as a uint64 field would carry it)."""
    varint = bytearray()
    value = seed
    while True:
        byte, value = value & 0x7F, value >> 7
        varint.append(byte | (0x80 if value else 0))
        if not value:
            break
    return [
        str(seed).encode(),
        f"{seed:x}".encode(),
        seed.to_bytes(8, "little"),
        seed.to_bytes(8, "big"),
        bytes(varint),
    ]


def assert_no_seed(data: bytes, forms: list[bytes], where: str) -> None:
    # A protobuf field carries an integer as a varint or fixed64, and text verbatim: a seed
    # none of whose forms is in the bytes is in no field.
    for form in forms:
        assert form not in data, f"{where}: the seed is in the message"


# -- the true state of a hand at each decision -----------------------------------------------


def face_up(state: HandState) -> set[Card]:
    """Cards that have been face up in this hand so far (the seat may have seen them)."""
    up = set(state.initial["discard"])
    for meld in state.initial["table"]:
        up.update(meld.cards)
    for event in state.history:
        action = event.action
        if isinstance(action, Discard):
            up.add(action.card)
        elif isinstance(action, Meld):
            up.update(action.cards)
        elif isinstance(action, Layoff):
            up.add(action.card)
        elif isinstance(action, Draw) and action.source == "discard" and event.card is not None:
            up.add(event.card)
    return up


def hidden_from(state: HandState, seat: int) -> set[Card]:
    others: set[Card] = set(state.stock)
    for s, hand in enumerate(state.hands):
        if s != seat:
            others.update(hand)
    return others - face_up(state) - set(state.hands[seat])


def shuffled_hidden(state: HandState, seat: int, rng: random.Random) -> HandState:
    """The same position with the cards ``seat`` cannot see dealt differently among the
    other hands and the stock (sizes kept): to ``seat`` it is indistinguishable."""
    hidden = hidden_from(state, seat)
    other = state.copy()
    slots: list[tuple[int, int]] = []  # (pile, position); pile -1 is the stock
    for s, hand in enumerate(other.hands):
        if s != seat:
            slots += [(s, i) for i, c in enumerate(hand) if c in hidden]
    slots += [(-1, i) for i, c in enumerate(other._stock) if c in hidden]
    cards = [other.hands[p][i] if p >= 0 else other._stock[i] for p, i in slots]
    rng.shuffle(cards)
    for (p, i), card in zip(slots, cards, strict=True):
        if p >= 0:
            other.hands[p][i] = card
        else:
            other._stock[i] = card
    return other


def encoded(obs: Observation) -> bytes:
    return observation_to_proto(obs).SerializeToString()


def contains_run(values: list[str], run: list[str]) -> bool:
    k = len(run)
    return any(values[i : i + k] == run for i in range(len(values) - k + 1))


# -- checking one match ----------------------------------------------------------------------


@dataclass
class Tally:
    decisions: int = 0
    shuffles: int = 0
    lifecycle: int = 0
    grpc_decisions: int = 0
    scans: int = 0  # decisions whose fields had to be read one by one


@dataclass
class Received:
    """One DecideRequest as a seat received it."""

    seat: int
    data: bytes
    msg: Any  # pb.DecideRequest
    obj: Observation | None  # the object an in-process bot was handed


def check_match(
    result: MatchResult, inboxes: list[Inbox], seed: int, tally: Tally, rng: random.Random, over_grpc: bool
) -> None:
    n = len(inboxes)
    players = tuple(result.players)
    match_id = result.match_id
    by_hand: dict[int, dict[int, Received]] = {}
    forms = seed_forms(seed)
    for seat, inbox in enumerate(inboxes):
        kinds = [k for k, _ in inbox.messages]
        assert kinds[0] == "start" and kinds[-1] == "end_match", kinds[:3]
        assert kinds.count("start") == 1 and kinds.count("end_match") == 1
        objects = iter(inbox.observations)
        hands_ended = 0
        for kind, data in inbox.messages[:-1]:
            where = f"{match_id} seat {seat} {kind}"
            if kind != "decide":
                assert_no_seed(data, forms, where)
                tally.lifecycle += 1
                hands_ended += kind == "end_hand"
                continue
            msg = pb.DecideRequest.FromString(data)
            # A decision of hand h comes after EndHand h-1 and before EndHand h.
            assert msg.hand_index == hands_ended, where
            mid, hand_text, d_text = msg.decision_id.rsplit("/", 2)
            assert (mid, int(hand_text), msg.match_id) == (match_id, msg.hand_index, match_id)
            decisions = by_hand.setdefault(msg.hand_index, {})
            assert int(d_text) not in decisions
            decisions[int(d_text)] = Received(seat, data, msg, next(objects, None))
        end = pb.EndMatchRequest.FromString(inbox.messages[-1][1])
        assert end.HasField("seed") and end.seed == seed, "EndMatch must reveal the seed"
        tally.lifecycle += 1

    scores = [0] * n
    for h, log in enumerate(result.hands):
        record = log.record
        state = record.initial_state()  # the referee's own record, replayed action by action
        decisions = by_hand.get(h, {})
        assert sorted(decisions) == list(range(len(record.actions) + len(log.faults)))
        for d in range(len(decisions)):
            got = decisions[d]
            seat, msg = got.seat, got.msg
            where = f"{match_id} hand {h} decision {d} seat {seat}"
            assert state.to_act == seat, where
            hidden = hidden_from(state, seat)
            assert_no_seed(got.data, forms, where)
            # Any string field naming a card carries its text verbatim, so a hidden card whose
            # text is nowhere in the bytes is not in the message; a text that is (maybe by
            # coincidence inside other bytes) is settled by reading the message's fields.
            if any(c.text.encode() in got.data for c in hidden):
                named, lists, _ = scan(msg)
                assert not named & hidden, f"{where}: told hidden cards {named & hidden}"
                stock = [c.text for c in state.stock if c in hidden]
                if len(stock) >= 2:
                    assert not any(contains_run(v, stock[:2]) for v in lists), f"{where}: stock order"
                tally.scans += 1
            assert all(c.text.encode() in got.data for c in state.hands[seat])  # its own cards are
            # The observation is exactly observe() of the true state (the in-process object,
            # or the bytes that crossed gRPC)...
            expected = observe(state, seat, players, tuple(scores), h, result.hands_planned)
            if got.obj is not None:
                assert got.obj == expected, where
            else:
                assert msg.observation.SerializeToString() == encoded(expected), where
            # ...and observe() cannot tell the hidden cards apart.
            if hidden and d % 3 == 0:
                twin = shuffled_hidden(state, seat, rng)
                assert observe(twin, seat, players, tuple(scores), h, result.hands_planned) == expected
                tally.shuffles += 1
            if got.obj is not None and d % 5 == 1:
                assert not reachable_cards(got.obj) & hidden, f"{where}: the Observation reaches hidden cards"
            tally.decisions += 1
            tally.grpc_decisions += over_grpc
            if d < len(record.actions):
                state.apply(record.actions[d][1], record.actions[d][0])
        payoffs = (record.outcome or {})["payoffs"]
        scores = [scores[s] + payoffs[s] for s in range(n)]


# -- the matches -----------------------------------------------------------------------------


def seat_bots(k: int, n: int) -> list[type[Bot]]:
    bots: list[type[Bot]] = [GreedyBot if (k + s) % 3 else RandomBot for s in range(n)]
    if k == 5:
        bots[0] = HeuristicBot  # slow (~10 ms a decision): one seat of one match
    return bots


@pytest.mark.slow
def test_no_bot_message_leaks_hidden_cards_stock_or_seed() -> None:
    rng = random.Random(20240607)
    tally = Tally()
    recorders: dict[type[Bot], RecordingServicer] = {
        cls: RecordingServicer(cls) for cls in (RandomBot, GreedyBot, HeuristicBot)
    }
    running = {cls: start_fault_server(servicer) for cls, servicer in recorders.items()}
    try:
        for k in range(MATCHES):
            n = 2 + k % 5
            seed = rng.getrandbits(64)
            rules = RULE_VARIANTS[(k // 5) % len(RULE_VARIANTS)]
            bots = seat_bots(k, n)
            over_grpc = k % GRPC_EVERY == 0
            match_id = f"info-{k}"
            inboxes = [Inbox() for _ in range(n)]
            players: list[Player]
            if over_grpc:
                players = [GrpcPlayer(f"127.0.0.1:{running[cls][1]}") for cls in bots]
            else:
                players = [RecordingPlayer(cls, inboxes[s]) for s, cls in enumerate(bots)]
            try:
                result = play_match(players, seed, HANDS, match_id=match_id, rules=rules, config=CONFIG)
            finally:
                for p in players:
                    p.close()
            if over_grpc:
                inboxes = [recorders[cls].inboxes.pop((match_id, s)) for s, cls in enumerate(bots)]
            assert not result.faults
            check_match(result, inboxes, seed, tally, rng, over_grpc)
    finally:
        for server, _ in running.values():
            server.stop(0)
    assert tally.decisions >= MIN_DECISIONS, tally
    assert tally.grpc_decisions >= 1000, tally
    print(f"information: {tally}")


def test_start_match_has_no_seed_field() -> None:
    assert "seed" not in pb.StartMatchRequest.DESCRIPTOR.fields_by_name
    assert "seed" not in pb.DecideRequest.DESCRIPTOR.fields_by_name
    assert "seed" not in pb.EndHandRequest.DESCRIPTOR.fields_by_name
    assert not any("seed" in f for f in MatchInfo.__dataclass_fields__)
    assert "seed" in pb.EndMatchRequest.DESCRIPTOR.fields_by_name


# -- observe() directly, on arbitrary positions ----------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**64 - 1),
    n=st.integers(2, 6),
    steps=st.integers(0, 120),
    variant=st.integers(0, len(RULE_VARIANTS) - 1),
    shuffle_seed=st.integers(0, 2**32),
)
def test_observe_is_blind_to_hidden_cards(
    seed: int, n: int, steps: int, variant: int, shuffle_seed: int
) -> None:
    """At any point of any hand, every seat's observation is the same whatever the cards it
    cannot see are, and names none of them."""
    rng = random.Random(shuffle_seed)
    state = HandState.deal(deck_order(seed, 0), n, seed % n, RULE_VARIANTS[variant])
    assume(state.outcome is None)  # TONK on the deal: nobody is ever asked anything
    for _ in range(steps):  # random play, stopping before the hand ends (bots see no more)
        legal = state.legal_actions()
        after = state.copy()
        after.apply(legal[rng.randrange(len(legal))])
        if after.outcome is not None:
            break
        state = after
    for seat in range(n):
        hidden = hidden_from(state, seat)
        obs = observe(state, seat)
        data = observation_to_proto(obs).SerializeToString()
        assert not cards_named(pb.Observation.FromString(data)) & hidden
        assert not reachable_cards(obs) & hidden
        twin = shuffled_hidden(state, seat, rng)
        assert observation_to_proto(observe(twin, seat)).SerializeToString() == data


# -- the checker itself catches leaks --------------------------------------------------------


SMALL_SEED = 0xC0FFEE_1234_5678


def _small_match() -> tuple[MatchResult, list[Inbox], int]:
    seed = SMALL_SEED
    inboxes = [Inbox() for _ in range(3)]
    players = [RecordingPlayer(GreedyBot, inbox) for inbox in inboxes]
    result = play_match(players, seed, 3, match_id="tamper", rules=RULE_VARIANTS[4], config=CONFIG)
    return result, inboxes, seed


def _tamper(inbox: Inbox, kind: Kind, change: Any) -> None:
    i = next(i for i, (k, _) in enumerate(inbox.messages) if k == kind)
    cls: Any = {
        "start": pb.StartMatchRequest,
        "decide": pb.DecideRequest,
        "end_hand": pb.EndHandRequest,
        "end_match": pb.EndMatchRequest,
    }[kind]
    msg = cls.FromString(inbox.messages[i][1])
    change(msg)
    inbox.messages[i] = (kind, msg.SerializeToString())


def test_the_checker_catches_a_leak() -> None:
    result, inboxes, seed = _small_match()
    check_match(result, inboxes, seed, Tally(), random.Random(1), False)  # untouched: clean

    # The first decision of the first hand, told the bottom card of the stock.
    first = result.hands[0].record
    to_act = first.to_act if first.to_act is not None else (first.dealer + 1) % 3
    bottom = first.stock[-1].text
    result, inboxes, seed = _small_match()
    _tamper(inboxes[to_act], "decide", lambda m: m.observation.discard.append(bottom))
    with pytest.raises(AssertionError, match="hidden cards"):
        check_match(result, inboxes, seed, Tally(), random.Random(1), False)

    for kind, change in [
        ("start", lambda m: setattr(m, "protocol_version", f"tonk.v1+{SMALL_SEED}")),
        ("decide", lambda m: m.observation.players.__setitem__(0, f"bot-{SMALL_SEED:x}")),
        ("end_hand", lambda m: setattr(m, "record_json", m.record_json[:-1] + f',"x":{SMALL_SEED}}}')),
        ("end_match", lambda m: m.ClearField("seed")),
    ]:
        result, inboxes, seed = _small_match()
        _tamper(inboxes[1], kind, change)
        with pytest.raises(AssertionError, match="seed"):
            check_match(result, inboxes, seed, Tally(), random.Random(1), False)


# -- the dashboard API: seeds and hands stay hidden until the match is over ------------------


def test_api_reveals_no_seed_or_hand_of_an_unfinished_match(seeded: Any, client: Any) -> None:
    """Pending, running and failed matches (and their unfinished tournament) show no seed in
    any API response or page, and their replay, hand records and decisions are refused."""
    from sqlalchemy import select

    from arena.store.db import session_scope
    from arena.store.models import Match, Tournament

    unfinished = [seeded.pending_match, seeded.running_match, seeded.failed_match]
    with session_scope(seeded.url) as session:
        secrets = {m.id: m.seed for m in session.scalars(select(Match).where(Match.id.in_(unfinished)))}
        tournament = session.get(Tournament, seeded.tournaments["summer"])
        assert tournament is not None and tournament.status != "finished"
        secrets[0] = tournament.seed
    forms = [text for seed in secrets.values() for text in (str(seed), f"{seed:x}")]

    def no_seed(url: str) -> Any:
        response = client.get(url)
        assert response.status_code < 500, url
        body = response.get_data(as_text=True)
        for form in forms:
            assert form not in body, f"{url} shows a secret seed"
        return response

    # The check can see a seed: a done match shows its own.
    with session_scope(seeded.url) as session:
        done = session.get(Match, seeded.done_match)
        assert done is not None
        assert str(done.seed) in client.get(f"/api/v1/matches/{done.id}").get_data(as_text=True)

    tid = seeded.tournaments["summer"]
    for url in (
        f"/api/v1/tournaments/{tid}",
        f"/api/v1/tournaments/{tid}/progress",
        f"/api/v1/matches?tournament={tid}",
        "/api/v1/matches?per_page=100",
        "/api/v1/tournaments",
        f"/tournaments/{tid}",
        f"/matches/?tournament={tid}",
        f"/api/v1/tournaments/{tid}/live?html=1",
        f"/api/v1/tournaments/{tid}/hands",
    ):
        assert no_seed(url).status_code == 200, url
    for match_id in unfinished:
        assert no_seed(f"/api/v1/matches/{match_id}").status_code == 200
        assert no_seed(f"/matches/{match_id}").status_code == 200
        for hidden in ("replay", "steps", "hands/0", "hands/0/decisions/0"):
            response = no_seed(f"/api/v1/matches/{match_id}/{hidden}")
            assert 400 <= response.status_code < 500, (match_id, hidden, response.status_code)
