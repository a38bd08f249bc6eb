"""The plain reading of a ``tonk-hand/1`` record: every check written once, in order, as
sdk/record.py read records before its fast paths (docs/hand-record.md). Tests compare
:meth:`HandRecord.from_text` and :meth:`HandRecord.from_json` with it: the same record for
every record it reads, the same error message for every one it refuses."""

from __future__ import annotations

import json
from typing import Any

from sdk.actions import Action
from sdk.cards import Card, parse_cards
from sdk.errors import NotationError, RecordError, RulesError
from sdk.melds import parse_table
from sdk.record import _KNOWN, _OPTIONAL, FORMAT, HandRecord
from sdk.rules import MAX_PLAYERS, MIN_PLAYERS, Rules


def reference_from_text(text: str | bytes) -> HandRecord:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RecordError(f"not valid JSON: {exc}") from None
    except ValueError:
        raise RecordError("not valid JSON: a number has too many digits") from None
    except RecursionError:
        raise RecordError("not valid JSON: nested too deeply") from None
    return reference_from_json(data)


def reference_from_json(data: Any) -> HandRecord:
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
    record = HandRecord(
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
