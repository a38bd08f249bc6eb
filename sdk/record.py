"""The ``tonk-hand/1`` hand record (``docs/hand-record.md``): read, write, replay.

Reading then writing a record gives back the same JSON, except that cards come out in their
canonical spelling. Optional fields that were absent stay absent; unknown top-level fields are
kept as they were.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Final

from sdk.actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, Layoff, Meld, discard_of
from sdk.cards import DECK, Card, parse_cards
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

# orjson's reader, an optional accelerator (the arena extra installs it), or None: the
# standard library's only (tests and bench/engine.py set it to compare the two).
_orjson_loads: Callable[[str | bytes], Any] | None
try:
    from orjson import loads as _orjson_loads
except ImportError:  # the bot author's install
    _orjson_loads = None

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
_REQUIRED = ("players", "dealer", "start", "hands", "discard", "stock", "actions")
_REQUIRED_SET: Final = frozenset(_REQUIRED)
_KNOWN_SET: Final = frozenset(_KNOWN)
_STR: Final = frozenset((str,))
_INT: Final = frozenset((int,))
_FIVE: Final = frozenset((5,))
_LIST: Final = frozenset((list,))
_SCALARS: Final = frozenset((str, int, bool, type(None)))
_PLAIN_DEPTH = 100  # nesting that the standard library reads at any stack depth a caller has
_CARD_BY_TEXT: Final[dict[str, Card]] = {card.text: card for card in DECK}
# key -> text value -> the action, for the actions written as Action.to_json writes them whose
# value is text (actions are immutable, so every record shares these)
_TEXT_ACTIONS: Final[dict[str, dict[str, Action]]] = {
    "draw": {"stock": DRAW_STOCK, "discard": DRAW_DISCARD},
    "discard": {card.text: discard_of(card) for card in DECK},
}


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
        """Read and check a record's JSON text (see :meth:`from_json`). With ``orjson``
        installed it reads the text several times faster; the result, and the error for a
        text that is not a record, are the same as the standard library's."""
        loads = _orjson_loads
        if loads is not None and (type(text) is bytes or type(text) is str):
            try:
                record = cls.from_json(loads(text))
            except Exception:  # not JSON to orjson, or not a record: read again below
                pass
            else:
                if record._reads_the_same():
                    return record
        # The standard library's reading is the reference: its errors name what is wrong.
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RecordError(f"not valid JSON: {exc}") from None
        except ValueError:  # a number of thousands of digits (Python's int conversion limit)
            raise RecordError("not valid JSON: a number has too many digits") from None
        except RecursionError:
            raise RecordError("not valid JSON: nested too deeply") from None
        return cls.from_json(data)

    def _reads_the_same(self) -> bool:
        """Whether the standard library reads this record's text as orjson did. The fields
        :meth:`from_json` checks only take strings, booleans and small integers, which both
        read alike; the values it keeps unchecked (unknown fields, outcome keys past the four)
        must hold no float (orjson reads an integer past 64 bits as one) and no deep nesting
        (the standard library's recursion limit)."""
        extra, outcome = self.extra, self.outcome
        if extra and not all(_plain(v, 0) for v in extra.values()):
            return False
        if outcome is not None and len(outcome) > len(_OUTCOME_KEYS):
            return all(_plain(v, 0) for k, v in outcome.items() if k not in _OUTCOME_KEYS)
        return True

    @classmethod
    def from_json(cls, data: Any) -> HandRecord:
        """Read and check a record's JSON value; :class:`RecordError` names the first problem.

        Each field is checked where it is read, in the order of docs/hand-record.md. The usual
        record (52 cards in canonical spelling, actions written as ``to_json`` writes them)
        takes fast paths; anything else goes through the field's full checks, which say what
        is wrong with it."""
        if not isinstance(data, dict):
            raise RecordError(f"a hand record is a JSON object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise RecordError(f"'format' must be {FORMAT!r}, got {data.get('format')!r}")
        if not data.keys() >= _REQUIRED_SET:
            for key in _REQUIRED:
                if key not in data:
                    raise RecordError(f"missing field {key!r}")
        rules_json = data.get("rules")
        if rules_json is None:
            rules = STANDARD
        else:
            try:
                rules = Rules.from_json(rules_json)
            except RulesError as exc:
                raise RecordError(f"'rules': {exc}") from None
        players = data["players"]
        # {str}.issuperset(map(type, ...)): the all() below, in C, for a list of plain strings
        if not (type(players) is list and _STR.issuperset(map(type, players))) and (
            not isinstance(players, list) or not all(isinstance(p, str) for p in players)
        ):
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
        discard_raw, stock_raw, table_raw = data["discard"], data["stock"], data.get("table")
        # With no table, a whole deck in canonical spelling reads in a few C loops, and is
        # then known to be one deck (the check initial_state would make).
        parts = None if table_raw else _whole_deck(hands_raw, discard_raw, stock_raw)
        if parts is not None:
            stock = parts.pop()
            discard = parts.pop()
            hands = parts
        else:
            hands = [_cards(h, f"hands[{i}]") for i, h in enumerate(hands_raw)]
            discard = _cards(discard_raw, "discard")
            stock = _cards(stock_raw, "stock")
        nulls = tuple(k for k in _OPTIONAL if k in data and data[k] is None) if None in data.values() else ()
        table = parse_table(table_raw, n, rules) if table_raw is not None else None
        if start == "deal" and not _FIVE.issuperset(map(len, hands)):
            raise RecordError("a record that starts from a deal has 5 cards in each hand")
        to_act = data.get("to_act")
        if to_act is not None and (type(to_act) is not int or not 0 <= to_act < n):
            raise RecordError(f"'to_act' must be a seat from 0 to {n - 1}, got {to_act!r}")
        actions_raw = data["actions"]
        if not isinstance(actions_raw, list):
            raise RecordError(f"'actions' must be a list, got {actions_raw!r}")
        actions = _read_actions(actions_raw, n)
        outcome = data.get("outcome")
        if outcome is not None:
            _check_outcome_shape(outcome, n)
        note = data.get("note")
        if note is not None and not isinstance(note, str):
            raise RecordError(f"'note' must be text, got {note!r}")
        record = cls(  # positional (the fields' order): cheaper than 15 keywords, once per record
            list(players), dealer, start, hands, discard, stock, actions, rules, table, to_act,
            outcome, note, rules_json,
            {} if _KNOWN_SET.issuperset(data) else {k: v for k, v in data.items() if k not in _KNOWN},
            nulls,
        )  # fmt: skip
        if parts is not None:  # one deck, checked above: build the start as initial_state would
            if not all(hands):
                i = next(i for i, h in enumerate(hands) if not h)
                raise RecordError(f"hands[{i}] is empty: a player with no cards has already gone out")
            record.__dict__["_start"] = HandState._build(
                rules, n, dealer, "deal" if start == "deal" else "position",
                [h[:] for h in hands], discard[:], stock[:], [],
                (dealer + 1) % n if to_act is None else to_act,
            )  # fmt: skip
        else:
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


def _whole_deck(hands: list[Any], discard: Any, stock: Any) -> list[list[Card]] | None:
    """The cards of ``hands``, ``discard`` and ``stock`` (in that order, one list each) when
    they are lists of the 52 cards, each once, in canonical spelling: the usual record. None
    for anything else, which the field-by-field checks then read (or say what is wrong)."""
    if type(discard) is not list or type(stock) is not list or not _LIST.issuperset(map(type, hands)):
        return None
    texts: list[Any] = []
    for hand in hands:
        texts += hand
    texts += discard
    texts += stock
    if len(texts) != 52:
        return None
    try:  # the 52 look-ups in one C call (an itemgetter of 52 keys gives a tuple)
        cards = itemgetter(*texts)(_CARD_BY_TEXT)
    except (KeyError, TypeError):  # not a card in canonical spelling (or not even text)
        return None
    if len(set(texts)) != 52:  # a card twice (the texts' hashes are cached by now)
        return None
    parts = []
    i = 0
    for hand in hands:
        j = i + len(hand)
        parts.append([*cards[i:j]])
        i = j
    j = i + len(discard)
    parts.append([*cards[i:j]])
    parts.append([*cards[j:]])
    return parts


def _read_actions(actions: list[Any], n: int) -> list[tuple[int, Action]]:
    """The ``(seat, action)`` list of a record's ``actions``. An action written as
    :meth:`Action.to_json` writes it (seat first, canonical cards) is read with a look-up or
    two; any other goes through :func:`_read_action`, which reads it or says what is wrong."""
    read: list[tuple[int, Action]] = []
    append = read.append
    by_key = _TEXT_ACTIONS.get
    card = _CARD_BY_TEXT.get
    for raw in actions:
        if type(raw) is dict:
            size = len(raw)
            if size == 2:
                (key0, seat), (kind, value) = raw.items()
                if key0 == "seat" and type(seat) is int and 0 <= seat < n:
                    if type(value) is str:
                        texts = by_key(kind)
                        action = texts.get(value) if texts is not None else None
                        if action is not None:
                            append((seat, action))
                            continue
                    elif value is True and kind == "drop":
                        append((seat, DROP))
                        continue
                    elif kind == "meld" and type(value) is list:
                        try:
                            append((seat, Meld(tuple(map(_CARD_BY_TEXT.__getitem__, value)))))
                            continue
                        except (KeyError, TypeError):
                            pass
            elif size == 3:
                (key0, seat), (kind, value), (key2, onto) = raw.items()
                if (
                    key0 == "seat" and kind == "layoff" and key2 == "onto"
                    and type(seat) is int and 0 <= seat < n
                    and type(onto) is int and onto >= 0 and type(value) is str
                ):  # fmt: skip
                    laid = card(value)
                    if laid is not None:
                        append((seat, Layoff(laid, onto)))
                        continue
        append(_read_action(len(read), raw, n))  # one read a raw action: its index
    return read


def _read_action(i: int, raw: Any, n: int) -> tuple[int, Action]:
    """Action ``i`` of a record, any way it may be written, fully checked."""
    if not isinstance(raw, dict):
        raise RecordError(f"action {i} must be an object, got {raw!r}")
    seat = raw.get("seat")
    if type(seat) is not int or not 0 <= seat < n:
        raise RecordError(f"action {i}: 'seat' must be a seat from 0 to {n - 1}, got {seat!r}")
    try:
        return seat, Action.from_json(raw)
    except NotationError as exc:
        raise RecordError(f"action {i}: {exc}") from None


def _check_outcome_shape(outcome: Any, n: int) -> None:
    if not isinstance(outcome, dict):
        raise RecordError(f"'outcome' must be an object, got {outcome!r}")
    if outcome.get("end") not in ("tonk", "drop", "out", "stock", "cap", "fault"):
        raise RecordError(
            f"outcome 'end' must be tonk, drop, out, stock, cap or fault, got {outcome.get('end')!r}"
        )
    for key in ("winners", "payoffs", "totals"):
        value = outcome.get(key)
        # {int}.issuperset(map(type, value)): every element's type is int, checked in C
        if not isinstance(value, list) or not _INT.issuperset(map(type, value)):
            raise RecordError(f"outcome {key!r} must be a list of integers, got {value!r}")
    for key in ("payoffs", "totals"):
        if len(outcome[key]) != n:
            raise RecordError(f"outcome {key!r} needs one entry per player ({n}), got {outcome[key]!r}")


def _plain(value: Any, depth: int) -> bool:
    """Whether ``value`` (read by orjson) holds no float and nests at most ``_PLAIN_DEPTH``
    levels deep: then the standard library reads its text as the same value."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if depth >= _PLAIN_DEPTH:
        return False
    if kind is list:
        return _SCALARS.issuperset(map(type, value)) or all(_plain(v, depth + 1) for v in value)
    if kind is dict:
        values = value.values()
        return _SCALARS.issuperset(map(type, values)) or all(_plain(v, depth + 1) for v in values)
    return False  # a float
