"""The ``tonk-hand/1`` hand record (``docs/hand-record.md``): read, write, replay.

Reading then writing a record gives back the same JSON, except that cards come out in their
canonical spelling. Optional fields that were absent stay absent; unknown top-level fields are
kept as they were.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sdk.actions import Action
from sdk.cards import Card, parse_cards
from sdk.engine import HandState, Outcome
from sdk.errors import (
    IllegalActionError,
    NotationError,
    OutcomeMismatchError,
    RecordError,
    RulesError,
)
from sdk.melds import TableMeld, parse_table
from sdk.rules import MAX_PLAYERS, MIN_PLAYERS, STANDARD, Rules

FORMAT = "tonk-hand/1"
_KNOWN = (
    "format",
    "note",
    "rules",
    "players",
    "dealer",
    "start",
    "hands",
    "discard",
    "stock",
    "table",
    "to_act",
    "actions",
    "outcome",
)
_OUTCOME_KEYS = ("end", "winners", "payoffs", "totals")
_OPTIONAL = ("note", "rules", "table", "to_act", "outcome")


@dataclass
class HandRecord:
    """One hand: where it starts, every action, and (optionally) the stored outcome."""

    players: list[str]
    dealer: int
    start: str
    hands: list[list[Card]]
    discard: list[Card]
    stock: list[Card]
    actions: list[tuple[int, Action]]
    rules: Rules = STANDARD
    table: list[TableMeld] | None = None
    to_act: int | None = None
    outcome: dict[str, Any] | None = None
    note: str | None = None
    rules_json: Any = None  # the rules as written, when they were written
    extra: dict[str, Any] = field(default_factory=dict)  # unknown top-level fields, kept
    nulls: tuple[str, ...] = ()  # optional fields written as null, written back as null

    # -- reading --------------------------------------------------------------------------

    @classmethod
    def from_text(cls, text: str | bytes) -> HandRecord:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RecordError(f"not valid JSON: {exc}") from None
        except ValueError:  # a number of thousands of digits (Python's int conversion limit)
            raise RecordError("not valid JSON: a number has too many digits") from None
        except RecursionError:
            raise RecordError("not valid JSON: nested too deeply") from None
        return cls.from_json(data)

    @classmethod
    def from_json(cls, data: Any) -> HandRecord:
        if not isinstance(data, dict):
            raise RecordError(f"a hand record is a JSON object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise RecordError(f"'format' must be {FORMAT!r}, got {data.get('format')!r}")
        for key in ("players", "dealer", "start", "hands", "discard", "stock", "actions"):
            if key not in data:
                raise RecordError(f"missing field {key!r}")
        try:
            rules = Rules.from_json(data.get("rules"))
        except RulesError as exc:
            raise RecordError(f"'rules': {exc}") from None
        players = data["players"]
        if not isinstance(players, list) or not all(isinstance(p, str) for p in players):
            raise RecordError(f"'players' must be a list of names, got {players!r}")
        if not MIN_PLAYERS <= len(players) <= MAX_PLAYERS:
            raise RecordError(
                f"Tonk is played by {MIN_PLAYERS} to {MAX_PLAYERS} players; this record has {len(players)}"
            )
        n = len(players)
        dealer = data["dealer"]
        if type(dealer) is not int or not 0 <= dealer < n:
            raise RecordError(f"'dealer' must be a seat from 0 to {n - 1}, got {dealer!r}")
        start = data["start"]
        if start not in ("deal", "position"):
            raise RecordError(f"'start' must be 'deal' or 'position', got {start!r}")
        hands_raw = data["hands"]
        if not isinstance(hands_raw, list) or len(hands_raw) != n:
            raise RecordError(f"'hands' must hold one list of cards per player ({n}), got {hands_raw!r}")
        hands = [_cards(h, f"hands[{i}]") for i, h in enumerate(hands_raw)]
        discard = _cards(data["discard"], "discard")
        stock = _cards(data["stock"], "stock")
        nulls = tuple(k for k in _OPTIONAL if k in data and data[k] is None)
        table = parse_table(data["table"], n, rules) if data.get("table") is not None else None
        if start == "deal" and any(len(h) != 5 for h in hands):
            raise RecordError("a record that starts from a deal has 5 cards in each hand")
        to_act = data.get("to_act")
        if to_act is not None and (type(to_act) is not int or not 0 <= to_act < n):
            raise RecordError(f"'to_act' must be a seat from 0 to {n - 1}, got {to_act!r}")
        actions_raw = data["actions"]
        if not isinstance(actions_raw, list):
            raise RecordError(f"'actions' must be a list, got {actions_raw!r}")
        actions: list[tuple[int, Action]] = []
        for i, raw in enumerate(actions_raw):
            if not isinstance(raw, dict):
                raise RecordError(f"action {i} must be an object, got {raw!r}")
            seat = raw.get("seat")
            if type(seat) is not int or not 0 <= seat < n:
                raise RecordError(f"action {i}: 'seat' must be a seat from 0 to {n - 1}, got {seat!r}")
            try:
                actions.append((seat, Action.from_json(raw)))
            except NotationError as exc:
                raise RecordError(f"action {i}: {exc}") from None
        outcome = data.get("outcome")
        if outcome is not None:
            _check_outcome_shape(outcome, n)
        note = data.get("note")
        if note is not None and not isinstance(note, str):
            raise RecordError(f"'note' must be text, got {note!r}")
        record = cls(
            players=list(players),
            dealer=dealer,
            start=start,
            hands=hands,
            discard=discard,
            stock=stock,
            actions=actions,
            rules=rules,
            table=table,
            to_act=to_act,
            outcome=outcome,
            note=note,
            rules_json=data.get("rules"),
            extra={k: v for k, v in data.items() if k not in _KNOWN},
            nulls=nulls,
        )
        record.initial_state()  # checks the deck: every card exactly once
        if start == "deal":
            if len(discard) != 1:
                raise RecordError(
                    "a record that starts from a deal has one card in 'discard' (the one turned up), "
                    f"not {len(discard)}"
                )
            if table:
                raise RecordError("a record that starts from a deal has no melds on the table")
        return record

    # -- writing --------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"format": FORMAT}
        if self.note is not None:
            data["note"] = self.note
        if self.rules_json is not None:
            data["rules"] = self.rules_json
        elif self.rules != STANDARD:
            data["rules"] = self.rules.to_json()
        data["players"] = list(self.players)
        data["dealer"] = self.dealer
        data["start"] = self.start
        data["hands"] = [[c.text for c in h] for h in self.hands]
        data["discard"] = [c.text for c in self.discard]
        data["stock"] = [c.text for c in self.stock]
        if self.table is not None:
            data["table"] = [m.to_json() for m in self.table]
        if self.to_act is not None:
            data["to_act"] = self.to_act
        data["actions"] = [{"seat": seat, **action.to_json()} for seat, action in self.actions]
        if self.outcome is not None:
            data["outcome"] = self.outcome
        for key in self.nulls:
            if data.get(key) is None:
                data[key] = None
        data.update(self.extra)
        return data

    def to_text(self, indent: int | None = None) -> str:
        return json.dumps(self.to_json(), indent=indent)

    @classmethod
    def from_state(cls, state: HandState, players: list[str] | None = None) -> HandRecord:
        """The record of a hand played (or being played) on ``state``."""
        init = state.initial
        names = players if players is not None else [f"seat{i}" for i in range(state.players)]
        default_to_act = (state.dealer + 1) % state.players
        return cls(
            players=list(names),
            dealer=state.dealer,
            start=init["start"],
            hands=[list(h) for h in init["hands"]],
            discard=list(init["discard"]),
            stock=list(init["stock"]),
            table=list(init["table"]) if init["table"] else None,
            to_act=None if init["to_act"] == default_to_act else init["to_act"],
            actions=[(e.seat, e.action) for e in state.history],
            rules=state.rules,
            outcome=state.outcome.to_json() if state.outcome else None,
        )

    # -- replaying ------------------------------------------------------------------------

    def initial_state(self) -> HandState:
        """The hand's starting state (checked: every card once, 2 to 6 seats, TONK at a deal)."""
        # The checked starting state is kept (outside the dataclass fields, so it is no part of
        # the record's data) and reused while the start fields still hold what it was built from.
        cache = self.__dict__
        start: HandState | None = cache.get("_start")
        if start is None or not self._start_matches(start):
            start = cache["_start"] = HandState.from_position(
                self.hands,
                self.discard,
                self.stock,
                self.table or (),
                dealer=self.dealer,
                to_act=self.to_act,
                rules=self.rules,
                start="deal" if self.start == "deal" else "position",
            )
        return start.copy()

    def _start_matches(self, state: HandState) -> bool:
        """Whether the start fields still hold what ``state`` was checked and built from."""
        start, hands, discard, stock, table, to_act = state._initial
        return (
            stock == self.stock
            and hands == self.hands
            and discard == self.discard
            and table == (self.table or [])
            and start == self.start
            and state.dealer == self.dealer
            and to_act == (self.to_act if self.to_act is not None else (self.dealer + 1) % len(hands))
            and (state.rules is self.rules or state.rules == self.rules)
        )

    def replay(self) -> HandState:
        """Play every action from the start. An illegal action raises
        :class:`IllegalActionError` with ``action_index`` set; nothing after it is played."""
        state = self.initial_state()
        apply = state.apply
        i = 0  # the index of the action being played
        try:
            for seat, action in self.actions:
                apply(action, seat)
                i += 1
        except IllegalActionError as exc:
            seat, action = self.actions[i]
            if state.outcome is not None and exc.rule == "hand_over":
                raise IllegalActionError(
                    f"action {i}: the hand is already over ({state.outcome.end})",
                    rule="hand_over",
                    action_index=i,
                ) from None
            raise IllegalActionError(
                f"action {i} ({action}, seat {seat}): {exc}", rule=exc.rule, action_index=i
            ) from None
        stored = self.outcome or {}
        if state.outcome is None and stored.get("end") == "fault":
            faulted = stored.get("faulted")
            if type(faulted) is int and 0 <= faulted < state.players:
                state.forfeit(faulted)
        return state

    def verify(self) -> Outcome:
        """Replay and compare with the stored outcome; raise on an illegal action, an
        unfinished hand, or a mismatch (:class:`OutcomeMismatchError` names the fields)."""
        outcome = self.replay().outcome
        if outcome is None:
            raise OutcomeMismatchError("the actions end before the hand is over")
        if self.outcome is None:
            raise OutcomeMismatchError("the record has no stored outcome to compare with")
        stored = self.outcome
        if (
            stored.get("end") == outcome.end
            and stored.get("payoffs") == list(outcome.payoffs)
            and stored.get("winners") == list(outcome.winners)
            and stored.get("totals") == list(outcome.totals)
            and stored.get("faulted") == outcome.faulted
        ):
            return outcome
        got = outcome.to_json()
        wrong = [
            k for k in (*_OUTCOME_KEYS, "faulted") if k in got or k in stored if got.get(k) != stored.get(k)
        ]
        detail = "; ".join(f"{k}: record says {stored.get(k)!r}, replay gives {got.get(k)!r}" for k in wrong)
        raise OutcomeMismatchError(f"stored outcome disagrees with the replay: {detail}")


def _cards(value: Any, where: str) -> list[Card]:
    try:
        return parse_cards(value)
    except NotationError as exc:
        raise RecordError(f"'{where}': {exc}") from None


def _check_outcome_shape(outcome: Any, n: int) -> None:
    if not isinstance(outcome, dict):
        raise RecordError(f"'outcome' must be an object, got {outcome!r}")
    if outcome.get("end") not in ("tonk", "drop", "out", "stock", "cap", "fault"):
        raise RecordError(
            f"outcome 'end' must be tonk, drop, out, stock, cap or fault, got {outcome.get('end')!r}"
        )
    for key in ("winners", "payoffs", "totals"):
        value = outcome.get(key)
        if not isinstance(value, list) or not all(type(v) is int for v in value):
            raise RecordError(f"outcome {key!r} must be a list of integers, got {value!r}")
    for key in ("payoffs", "totals"):
        if len(outcome[key]) != n:
            raise RecordError(f"outcome {key!r} needs one entry per player ({n}), got {outcome[key]!r}")
