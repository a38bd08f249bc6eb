"""Conversions between the SDK's values and the ``tonk.v1`` protobuf messages.

Both directions sit on the decision hot path (the referee encodes an observation per
decision, the bot server decodes it), so the code favours lookups in precomputed tables over
generic reflection, and caches the few values that repeat (rules, actions). The hand-written
wire codec for the hottest messages is :mod:`sdk.wire`; the decision JSON files are
:mod:`sdk.decision_file`.

Values are trusted in the encoding direction (they come from the engine). Decoding checks what
it must to build valid SDK values and raises :class:`ProtocolError` otherwise; a bot's reply
that is not an action raises :class:`MalformedReplyError`.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Final

from sdk.actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, Discard, Event, Layoff, Meld
from sdk.bot import DealMatch, DealSummary, HandResult, MatchInfo, MatchSummary
from sdk.cards import DECK, Card
from sdk.engine import Outcome
from sdk.errors import NotationError, RulesError, TonkError
from sdk.melds import TableMeld, make_meld
from sdk.observation import Observation
from sdk.protocol import PROTOCOL_VERSION
from sdk.protocol import bot_pb2 as pb
from sdk.referee import DecisionRequest
from sdk.rules import STANDARD, Rules


class ProtocolError(ValueError):
    """A protocol message that cannot be turned into an SDK value."""


class MalformedReplyError(ProtocolError):
    """A bot's DecideResponse that names no action, or one that cannot be read."""


# -- cards --------------------------------------------------------------------------------


class _CardTable(dict[str, Card]):
    # Canonical text hits the dict; anything else ("ts", "10S") takes the lenient parser.
    def __missing__(self, text: str) -> Card:
        return Card.parse(text)


CARD_BY_TEXT: Final = _CardTable({c.text: c for c in DECK})


def _cards(texts: Any) -> tuple[Card, ...]:
    try:
        return tuple(map(CARD_BY_TEXT.__getitem__, texts))
    except NotationError as exc:
        raise ProtocolError(str(exc)) from None


def _card(text: str, what: str) -> Card:
    if not text:
        raise ProtocolError(f"{what}: a card is required")
    try:
        return CARD_BY_TEXT[text]
    except NotationError as exc:
        raise ProtocolError(f"{what}: {exc}") from None


# -- rules --------------------------------------------------------------------------------

_RULE_FIELDS: Final = Rules.option_names()
_RULES_BY_KEY: dict[tuple[Any, ...], Rules] = {}
_RULES_MSG: dict[Rules, pb.Rules] = {}


def rules_to_proto(rules: Rules) -> pb.Rules:
    msg = _RULES_MSG.get(rules)
    if msg is None:
        msg = pb.Rules(name=rules.name, **{f: getattr(rules, f) for f in _RULE_FIELDS})
        if len(_RULES_MSG) < 256:  # a handful of rule sets exist; never grow without bound
            _RULES_MSG[rules] = msg
    return msg


def rules_from_proto(msg: pb.Rules) -> Rules:
    key = tuple(getattr(msg, f) for f in _RULE_FIELDS)
    rules = _RULES_BY_KEY.get(key)
    if rules is None:
        try:
            rules = Rules(**dict(zip(_RULE_FIELDS, key, strict=True)))
        except RulesError as exc:
            raise ProtocolError(f"rules: {exc}") from None
        if len(_RULES_BY_KEY) < 256:
            _RULES_BY_KEY[key] = rules
    return rules


# -- actions ------------------------------------------------------------------------------

_SOURCE_TO_PB: Final = {"stock": pb.DRAW_SOURCE_STOCK, "discard": pb.DRAW_SOURCE_DISCARD}
_DRAW_FROM_PB: Final = {pb.DRAW_SOURCE_STOCK: DRAW_STOCK, pb.DRAW_SOURCE_DISCARD: DRAW_DISCARD}
_DISCARD: Final = {c: Discard(c) for c in DECK}


def action_to_proto(action: Action) -> pb.Action:
    kind = action.kind
    if kind == "discard":
        return pb.Action(discard=pb.DiscardAction(card=action.card.text))  # type: ignore[attr-defined]
    if kind == "draw":
        return pb.Action(draw=pb.DrawAction(source=_SOURCE_TO_PB[action.source]))  # type: ignore[attr-defined]
    if kind == "meld":
        return pb.Action(meld=pb.MeldAction(cards=[c.text for c in action.cards]))  # type: ignore[attr-defined]
    if kind == "layoff":
        return pb.Action(
            layoff=pb.LayoffAction(card=action.card.text, onto=action.onto)  # type: ignore[attr-defined]
        )
    if kind == "drop":
        return pb.Action(drop=pb.DropAction())
    raise ProtocolError(f"not an action: {action!r}")


def action_from_proto(msg: pb.Action) -> Action:
    kind = msg.WhichOneof("kind")
    if kind == "discard":
        return _DISCARD[_card(msg.discard.card, "discard")]
    if kind == "draw":
        draw = _DRAW_FROM_PB.get(msg.draw.source)
        if draw is None:
            raise ProtocolError(f"draw: source must be STOCK or DISCARD, got {msg.draw.source}")
        return draw
    if kind == "meld":
        return Meld(_cards(msg.meld.cards))
    if kind == "layoff":
        return Layoff(_card(msg.layoff.card, "layoff"), msg.layoff.onto)
    if kind == "drop":
        return DROP
    raise ProtocolError("an action must set one of drop, draw, meld, layoff, discard")


# -- observation --------------------------------------------------------------------------

PHASE_TO_PB: Final = {"start": pb.PHASE_START, "play": pb.PHASE_PLAY, "over": pb.PHASE_OVER}
PHASE_FROM_PB: Final[dict[int, str]] = {v: k for k, v in PHASE_TO_PB.items()}
_KIND_TO_PB: Final = {"book": pb.MELD_KIND_BOOK, "spread": pb.MELD_KIND_SPREAD}


def table_meld_to_proto(meld: TableMeld) -> pb.TableMeld:
    return pb.TableMeld(owner=meld.owner, kind=_KIND_TO_PB[meld.kind], cards=[c.text for c in meld.cards])


def table_meld_from_proto(msg: pb.TableMeld, rules: Rules) -> TableMeld:
    cards = _cards(msg.cards)
    if msg.kind == pb.MELD_KIND_BOOK and 3 <= len(cards) <= 4:
        return TableMeld(msg.owner, "book", cards)
    if msg.kind == pb.MELD_KIND_SPREAD and len(cards) >= 3:
        # Spreads come low to high, so the ends follow from the first card and the length
        # (an ace above a king is last, never first).
        lo = cards[0].rank
        return TableMeld(msg.owner, "spread", cards, lo, lo + len(cards) - 1)
    try:  # no usable kind (a hand-written request): classify the cards
        return make_meld(msg.owner, cards, rules)
    except TonkError as exc:
        raise ProtocolError(f"table meld: {exc}") from None


def outcome_to_proto(outcome: Outcome) -> pb.Outcome:
    msg = pb.Outcome(end=outcome.end, winners=outcome.winners, payoffs=outcome.payoffs, totals=outcome.totals)
    if outcome.faulted is not None:
        msg.faulted = outcome.faulted
    return msg


def outcome_from_proto(msg: pb.Outcome) -> Outcome:
    if msg.end not in ("tonk", "drop", "out", "stock", "cap", "fault"):
        raise ProtocolError(f"outcome: unknown end {msg.end!r}")
    return Outcome(
        msg.end,  # type: ignore[arg-type]
        tuple(msg.winners),
        tuple(msg.payoffs),
        tuple(msg.totals),
        msg.faulted if msg.HasField("faulted") else None,
    )


def _event_to_proto(event: Event) -> pb.Event:
    card = event.card
    return pb.Event(seat=event.seat, action=action_to_proto(event.action), card=card.text if card else "")


def observation_to_proto(obs: Observation) -> pb.Observation:
    picked = obs.picked_up
    msg = pb.Observation(
        seat=obs.seat,
        players=obs.players,
        rules=rules_to_proto(obs.rules),
        dealer=obs.dealer,
        to_act=obs.to_act,
        phase=PHASE_TO_PB[obs.phase],
        hand=[c.text for c in obs.hand],
        hand_sizes=obs.hand_sizes,
        stock_size=obs.stock_size,
        discard=[c.text for c in obs.discard],
        table=[table_meld_to_proto(m) for m in obs.table],
        history=[_event_to_proto(e) for e in obs.history],
        picked_up=picked.text if picked else "",
        turn=obs.turn,
        locked=obs.locked,
        legal_actions=[action_to_proto(a) for a in obs.legal_actions],
        scores=obs.scores,
        hand_index=obs.hand_index,
        hands_in_match=obs.hands_in_match,
    )
    if obs.outcome is not None:
        msg.outcome.CopyFrom(outcome_to_proto(obs.outcome))
    return msg


def observation_from_proto(msg: pb.Observation) -> Observation:
    if not msg.HasField("rules"):
        raise ProtocolError("observation: rules are required")
    rules = rules_from_proto(msg.rules)
    phase = PHASE_FROM_PB.get(msg.phase)
    if phase is None:
        raise ProtocolError(f"observation: unknown phase {msg.phase}")
    _act = action_from_proto
    picked = msg.picked_up
    return Observation(
        seat=msg.seat,
        players=tuple(msg.players),
        rules=rules,
        dealer=msg.dealer,
        to_act=msg.to_act,
        phase=phase,
        hand=_cards(msg.hand),
        hand_sizes=tuple(msg.hand_sizes),
        stock_size=msg.stock_size,
        discard=_cards(msg.discard),
        table=tuple(table_meld_from_proto(m, rules) for m in msg.table),
        history=tuple(
            Event(e.seat, _act(e.action), CARD_BY_TEXT[e.card] if e.card else None) for e in msg.history
        ),
        picked_up=_card(picked, "picked_up") if picked else None,
        turn=msg.turn,
        locked=tuple(msg.locked),
        legal_actions=tuple(map(_act, msg.legal_actions)),
        scores=tuple(msg.scores),
        hand_index=msg.hand_index,
        hands_in_match=msg.hands_in_match,
        outcome=outcome_from_proto(msg.outcome) if msg.HasField("outcome") else None,
    )


# -- decisions ----------------------------------------------------------------------------


def decision_to_proto(request: DecisionRequest) -> pb.DecideRequest:
    return pb.DecideRequest(
        match_id=request.match_id,
        hand_index=request.hand_index,
        decision_id=request.decision_id,
        deadline_ms=request.deadline_ms,
        observation=observation_to_proto(request.observation),
    )


def decision_from_proto(msg: pb.DecideRequest) -> DecisionRequest:
    obs = observation_from_proto(msg.observation)
    return DecisionRequest(msg.match_id, msg.hand_index, msg.decision_id, obs, msg.deadline_ms)


_INT32_MAX: Final = 2**31 - 1


def reply_to_proto(reply: object) -> pb.DecideResponse:
    """A bot's answer as a DecideResponse. Anything that is neither an index nor an action
    gives an empty response, which the referee reports as MALFORMED, as it would in-process."""
    if type(reply) is int:
        # An index too large for int32 is out of range anyway; -1 keeps it an ILLEGAL index.
        return pb.DecideResponse(action_index=reply if -_INT32_MAX <= reply <= _INT32_MAX else -1)
    if isinstance(reply, Action):
        return pb.DecideResponse(action=action_to_proto(reply))
    return pb.DecideResponse()


def reply_from_proto(msg: pb.DecideResponse) -> Action | int:
    """The action or index a DecideResponse names; :class:`MalformedReplyError` if none."""
    choice = msg.WhichOneof("choice")
    if choice == "action_index":
        return msg.action_index
    try:
        if choice == "action":
            return action_from_proto(msg.action)
        if choice == "text":
            return Action.parse(msg.text)
    except (ProtocolError, NotationError) as exc:
        raise MalformedReplyError(f"unreadable action: {exc}") from None
    raise MalformedReplyError("the reply names no action (set action_index, action or text)")


# -- match lifecycle ----------------------------------------------------------------------


def match_info_to_proto(info: MatchInfo) -> pb.StartMatchRequest:
    return pb.StartMatchRequest(
        match_id=info.match_id,
        seat=info.seat,
        players=info.players,
        rules=rules_to_proto(info.rules),
        hands=info.hands,
        first_dealer=info.first_dealer,
        decision_deadline_ms=info.decision_deadline_ms,
        time_bank_ms=info.time_bank_ms,
        protocol_version=PROTOCOL_VERSION,
    )


def match_info_from_proto(msg: pb.StartMatchRequest) -> MatchInfo:
    return MatchInfo(
        match_id=msg.match_id,
        seat=msg.seat,
        players=tuple(msg.players),
        rules=rules_from_proto(msg.rules) if msg.HasField("rules") else STANDARD,
        hands=msg.hands,
        first_dealer=msg.first_dealer,
        decision_deadline_ms=msg.decision_deadline_ms,
        time_bank_ms=msg.time_bank_ms,
    )


def record_to_proto(record: dict[str, Any]) -> pb.HandRecord:
    """The structured form of a ``tonk-hand/1`` record (a dict as ``HandRecord.to_json`` gives)."""
    try:
        rules = Rules.from_json(record.get("rules"))
        players = record["players"]
        dealer = record["dealer"]
        msg = pb.HandRecord(
            players=players,
            rules=rules_to_proto(rules),
            dealer=dealer,
            start=record["start"],
            hands=[pb.Cards(cards=h) for h in record["hands"]],
            discard=record["discard"],
            stock=record["stock"],
            table=[
                table_meld_to_proto(make_meld(m["owner"], [CARD_BY_TEXT[t] for t in m["cards"]], rules))
                for m in record.get("table") or ()
            ],
            to_act=record.get("to_act", (dealer + 1) % len(players)),
            actions=[
                pb.RecordAction(seat=a["seat"], action=action_to_proto(Action.from_json(a)))
                for a in record["actions"]
            ],
        )
        outcome = record.get("outcome")
        if outcome is not None:
            msg.outcome.CopyFrom(
                pb.Outcome(
                    end=outcome["end"],
                    winners=outcome["winners"],
                    payoffs=outcome["payoffs"],
                    totals=outcome["totals"],
                    faulted=outcome.get("faulted"),
                )
            )
    except (KeyError, TypeError, TonkError) as exc:
        raise ProtocolError(f"hand record: {exc!r}") from None
    return msg


def record_from_proto(msg: pb.HandRecord) -> dict[str, Any]:
    """A ``tonk-hand/1`` dict from the structured form (used when no JSON text was sent)."""
    rules = rules_from_proto(msg.rules) if msg.HasField("rules") else STANDARD
    data: dict[str, Any] = {"format": "tonk-hand/1"}
    if rules != STANDARD:
        data["rules"] = rules.to_json()
    data.update(
        players=list(msg.players),
        dealer=msg.dealer,
        start=msg.start,
        hands=[list(h.cards) for h in msg.hands],
        discard=list(msg.discard),
        stock=list(msg.stock),
    )
    if msg.table:
        data["table"] = [{"owner": m.owner, "cards": list(m.cards)} for m in msg.table]
    data["to_act"] = msg.to_act
    data["actions"] = [{"seat": a.seat, **action_from_proto(a.action).to_json()} for a in msg.actions]
    if msg.HasField("outcome"):
        data["outcome"] = outcome_from_proto(msg.outcome).to_json()
    return data


def hand_result_to_proto(result: HandResult, seat: int) -> pb.EndHandRequest:
    message = pb.EndHandRequest(
        match_id=result.match_id,
        seat=seat,
        hand_index=result.hand_index,
        payoffs=result.payoffs,
        scores=result.scores,
        shown=[pb.Cards(cards=[c.text for c in hand]) for hand in result.shown],
        record_withheld=result.record_withheld,
    )
    if result.view is not None:
        message.view.CopyFrom(observation_to_proto(result.view))
    if result.record and not result.record_withheld:
        message.record_json = json.dumps(result.record, separators=(",", ":"))
        # The JSON text is the record of reference; the structured copy is a convenience.
        with contextlib.suppress(ProtocolError):
            message.record.CopyFrom(record_to_proto(result.record))
    return message


def hand_result_from_proto(msg: pb.EndHandRequest) -> HandResult:
    record: dict[str, Any] = {}
    if msg.record_json:
        try:
            record = json.loads(msg.record_json)
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"record_json: {exc}") from None
    elif msg.HasField("record"):
        record = record_from_proto(msg.record)
    return HandResult(
        msg.match_id,
        msg.hand_index,
        record,
        tuple(msg.payoffs),
        tuple(msg.scores),
        observation_from_proto(msg.view) if msg.HasField("view") else None,
        tuple(_cards(hand.cards) for hand in msg.shown),
        msg.record_withheld,
    )


def deal_summary_to_proto(deal: DealSummary) -> pb.EndDealRequest:
    return pb.EndDealRequest(
        matches=[
            pb.DealMatch(
                match_id=m.match_id,
                players=m.players,
                seats=m.seats,
                scores=m.scores,
                record_json=[json.dumps(r, separators=(",", ":")) for r in m.records],
                records_omitted=m.records_omitted,
            )
            for m in deal.matches
        ],
        seed=deal.seed,
    )


def deal_summary_from_proto(msg: pb.EndDealRequest) -> DealSummary:
    matches = []
    for m in msg.matches:
        try:
            records = tuple(json.loads(text) for text in m.record_json)
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"record_json of match {m.match_id!r:.80}: {exc}") from None
        players, seats, scores = tuple(m.players), tuple(m.seats), tuple(m.scores)
        matches.append(DealMatch(m.match_id, players, seats, scores, records, m.records_omitted))
    return DealSummary(tuple(matches), msg.seed if msg.HasField("seed") else None)


def match_summary_to_proto(summary: MatchSummary, seat: int) -> pb.EndMatchRequest:
    return pb.EndMatchRequest(
        match_id=summary.match_id,
        seat=seat,
        scores=summary.scores,
        seed=summary.seed,
        forfeited=summary.forfeited,
    )


def match_summary_from_proto(msg: pb.EndMatchRequest) -> MatchSummary:
    return MatchSummary(
        msg.match_id,
        tuple(msg.scores),
        msg.seed if msg.HasField("seed") else None,
        tuple(msg.forfeited),
    )
