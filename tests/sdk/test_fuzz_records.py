"""Fuzzing tonk-hand/1 records: whatever a file holds, reading, replaying and verifying it
raise nothing but :class:`sdk.errors.TonkError` subclasses, and ``tonk record simulate`` /
``verify`` never print a traceback.

The inputs are valid records (random play under every rule variant, faulted hands, and
tests/data/cases/*.json) with one to four mutations each: wrong types, unknown or
mangled cards, duplicated and moved cards, missing keys, huge and negative numbers,
unicode, and nested junk; plus arbitrary JSON and arbitrary text.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pytest
from helpers.case_files import CASES
from helpers.paths import ROOT
from helpers.record_reference import reference_from_json, reference_from_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sdk.record as record_module
from arena.processes import run_process
from sdk.cards import DECK
from sdk.commands.record import check_file
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.errors import TonkError
from sdk.record import HandRecord
from sdk.rules import STANDARD, Rules

FUZZ_EXAMPLES = int(os.environ.get("TONK_FUZZ_EXAMPLES", "1000"))

VARIANTS = [
    STANDARD,
    Rules(hit_lock=True, book_layoff=True),
    Rules(stock_reshuffle=True, discard_pickup_may_return=True),
    Rules(ace_high_or_low=True, meld_out_double=True, turn_cap=30),
    Rules(tonk_low=0, tonk_high=99, turn_cap=0),
]


# -- valid records to start from -------------------------------------------------------------


def played_record(seed: int, n: int, rules: Rules, fault_at: int | None = None) -> dict[str, Any]:
    rng = random.Random(seed)
    state = HandState.deal(deck_order(seed, 0), n, seed % n, rules)
    steps = 0
    while state.outcome is None:
        if fault_at is not None and steps == fault_at:
            state.forfeit(state.to_act)
            break
        legal = state.legal_actions()
        # Prefer playing on over dropping, so records get melds, lay-offs and long histories.
        choices = [a for a in legal if a.kind != "drop"] or legal
        state.apply(choices[rng.randrange(len(choices))])
        steps += 1
    return HandRecord.from_state(state, [f"p{i}" for i in range(n)]).to_json()


def seed_records() -> list[dict[str, Any]]:
    records = [json.loads(p.read_text()) for p in sorted(CASES.glob("*.json"))]
    for k in range(40):
        records.append(
            played_record(7000 + k, 2 + k % 5, VARIANTS[k % len(VARIANTS)], 3 if k % 8 == 0 else None)
        )
    return records


SEEDS = seed_records()
CARD_TEXTS = [c.text for c in DECK]
BAD_CARDS = [
    "1s",
    "11h",
    "0c",
    "Zz",
    "A",
    "s",
    "10",
    "10S",
    "ts",
    " Ac ",
    "a\u0301c",
    "A♠",
    "🂡",
    "",
    " ",
    "\x00",
]
KNOWN_KEYS = [
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
    "seat",
    "draw",
    "meld",
    "layoff",
    "onto",
    "drop",
    "end",
    "winners",
    "payoffs",
    "totals",
    "faulted",
    "owner",
    "cards",
]
HUGE = [2**31, 2**63, 2**64, -(2**63) - 1, 10**30, -1, -(10**9), 2**1000]
TEXTS = [
    "",
    "standard",
    "custom",
    "deal",
    "position",
    "stock",
    "discard",
    "tonk-hand/1",
    "\u202e\u0000",
    "😀" * 3,
]


class Chooser(Protocol):
    """Where the mutator's choices come from: Hypothesis (shrinkable) or a seeded RNG."""

    def below(self, n: int) -> int: ...


class RandomChooser:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def below(self, n: int) -> int:
        return self.rng.randrange(n)


class DataChooser:
    def __init__(self, data: st.DataObject):
        self.data = data

    def below(self, n: int) -> int:
        return int(self.data.draw(st.integers(0, n - 1)))


def pick(ch: Chooser, options: list[Any]) -> Any:
    return options[ch.below(len(options))]


def junk(ch: Chooser, depth: int = 0) -> Any:
    """A value of some JSON type, often one that is almost right."""
    kind = ch.below(12 if depth < 4 else 9)
    if kind == 0:
        return None
    if kind == 1:
        return bool(ch.below(2))
    if kind == 2:
        return ch.below(20) - 5
    if kind == 3:
        return pick(ch, HUGE)
    if kind == 4:
        return pick(ch, [0.5, -0.0, 1e308, -1e308, 3.0, math.inf, -math.inf, math.nan])
    if kind == 5:
        return pick(ch, CARD_TEXTS)
    if kind == 6:
        return pick(ch, BAD_CARDS)
    if kind == 7:
        return pick(ch, TEXTS)
    if kind == 8:
        return "x" * pick(ch, [1, 1000, 100_000])
    if kind == 9:
        return [junk(ch, depth + 1) for _ in range(ch.below(4))]
    if kind == 10:
        return [pick(ch, CARD_TEXTS + BAD_CARDS) for _ in range(ch.below(8))]
    return {pick(ch, KNOWN_KEYS + TEXTS): junk(ch, depth + 1) for _ in range(ch.below(4))}


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON tree (a path of keys and indices), the root included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, sub in value.items():
            found += paths(sub, (*prefix, key))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            found += paths(sub, (*prefix, i))
    return found


def get(tree: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        tree = tree[key]
    return tree


CARD_FIELDS = ("hands", "discard", "stock")


def card_places(record: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Paths of the cards of a record's starting position."""
    places: list[tuple[Any, ...]] = []
    for name in CARD_FIELDS:
        value = record.get(name)
        if isinstance(value, list):
            places += [p for p in paths(value, (name,)) if isinstance(get(record, p), str)]
    return places


def random_action(ch: Chooser, n: int) -> dict[str, Any]:
    seat = ch.below(n + 1) if ch.below(8) else pick(ch, HUGE)
    kind = ch.below(6)
    if kind == 0:
        return {"seat": seat, "draw": pick(ch, ["stock", "discard"])}
    if kind == 1:
        return {"seat": seat, "discard": pick(ch, CARD_TEXTS)}
    if kind == 2:
        return {"seat": seat, "meld": [pick(ch, CARD_TEXTS) for _ in range(2 + ch.below(4))]}
    if kind == 3:
        return {"seat": seat, "layoff": pick(ch, CARD_TEXTS), "onto": ch.below(4)}
    if kind == 4:
        return {"seat": seat, "drop": True}
    return {"seat": seat, pick(ch, ["draw", "meld", "layoff", "discard", "drop"]): junk(ch)}


def mutate(ch: Chooser, record: dict[str, Any]) -> Any:
    """One mutation of ``record`` (in place where possible); returns the new root."""
    op = ch.below(16)
    players = record.get("players")
    n = len(players) if isinstance(players, list) else 3
    actions = record.get("actions")
    if op >= 11 and isinstance(actions, list):
        # Structure-preserving edits, so that many mutants get past reading into replay.
        if op == 11:  # swap two cards of the deal: still one deck, a different hand
            places = card_places(record)
            if len(places) >= 2:
                a, b = pick(ch, places), pick(ch, places)
                pa, pb = get(record, a[:-1]), get(record, b[:-1])
                pa[a[-1]], pb[b[-1]] = pb[b[-1]], pa[a[-1]]
                return record
        elif op == 12:  # an action replaced or inserted
            at = ch.below(len(actions) + 1)
            if at < len(actions) and ch.below(2):
                actions[at] = random_action(ch, n)
            else:
                actions.insert(at, random_action(ch, n))
            return record
        elif op == 13 and actions:  # the hand cut short, or an action dropped
            if ch.below(2):
                del actions[ch.below(len(actions)) :]
            else:
                del actions[ch.below(len(actions))]
            return record
        elif op == 14 and isinstance(record.get("outcome"), dict):  # the stored outcome edited
            outcome = record["outcome"]
            field = pick(ch, ["end", "winners", "payoffs", "totals", "faulted"])
            outcome[field] = pick(ch, [junk(ch), [0] * n, list(range(n)), ch.below(n + 2) - 1, "fault"])
            return record
        elif op == 15 and actions:  # an action by the wrong seat
            index = ch.below(len(actions))
            if isinstance(actions[index], dict):
                actions[index]["seat"] = ch.below(max(n, 1))  # (players may be [] by now)
            return record
    places = paths(record)
    path = pick(ch, places[1:]) if len(places) > 1 else ()
    if not path:
        return junk(ch)
    parent = get(record, path[:-1])
    key = path[-1]
    value = parent[key]
    if op == 0:  # wrong type / junk in place
        parent[key] = junk(ch)
    elif op == 1:  # missing key / element
        del parent[key]
    elif op == 2 and isinstance(parent, list):  # duplicate an element (a card twice)
        parent.insert(key, copy.deepcopy(value))
    elif op == 3:  # a card from elsewhere in the deck: the deck breaks
        parent[key] = pick(ch, CARD_TEXTS)
    elif op == 4 and isinstance(value, int) and not isinstance(value, bool):  # numbers at the edges
        parent[key] = pick(ch, [value + 1, value - 1, -value, value + 2**32, *HUGE])
    elif op == 5:  # wrapped in a list or an object
        parent[key] = [value] if ch.below(2) else {"value": value}
    elif op == 6:  # nested junk, moderately deep
        nested: Any = value
        for _ in range(ch.below(60)):
            nested = [nested] if ch.below(2) else {"k": nested}
        parent[key] = nested
    elif op == 7 and isinstance(parent, dict):  # an unknown or misplaced key
        parent[pick(ch, KNOWN_KEYS + TEXTS)] = junk(ch)
    elif op == 8 and isinstance(value, str):  # unicode and case games on text
        parent[key] = pick(ch, [value.upper(), value.lower(), value + "\u0301", " " + value, value * 3, ""])
    elif op == 9 and isinstance(parent, list) and len(parent) > 1:  # reorder
        other = ch.below(len(parent))
        parent[key], parent[other] = parent[other], parent[key]
    else:  # a whole known field replaced by junk
        record[pick(ch, KNOWN_KEYS)] = junk(ch)
    return record


def mutated(ch: Chooser) -> Any:
    record: Any = copy.deepcopy(pick(ch, SEEDS))
    for _ in range(1 + ch.below(4)):
        if not isinstance(record, dict):
            break
        record = mutate(ch, record)
    return record


# -- the properties --------------------------------------------------------------------------


def exercise(data: Any) -> str:
    """Read, replay and verify ``data``; only TonkError may escape. Returns what happened."""
    try:
        record = HandRecord.from_json(data)
    except TonkError:
        return "refused"
    try:
        state = record.replay()
    except TonkError:
        return "illegal"
    try:
        record.verify()
    except TonkError:
        return "mismatch" if state.outcome is not None else "unfinished"
    # An accepted record writes back out as JSON that reads back to the same record.
    text = json.dumps(record.to_json())
    assert json.dumps(HandRecord.from_text(text).to_json()) == text
    return "verified"


def test_seed_records_are_valid() -> None:
    assert len(SEEDS) >= 40
    outcomes = [exercise(copy.deepcopy(r)) for r in SEEDS]
    assert outcomes == ["verified"] * len(SEEDS)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, 2**64 - 1))
def test_mutated_records_raise_only_tonk_errors(seed: int) -> None:
    # Hypothesis picks the seed; a seeded RNG makes the mutator's many small choices (drawing
    # each from Hypothesis costs ~20x more). A failure prints its seed, which replays it.
    record = mutated(RandomChooser(random.Random(seed)))
    exercise(record)
    # The same bytes through the text reader (what the CLI and the arena read).
    with contextlib.suppress(TonkError):
        HandRecord.from_text(json.dumps(record))


ODD_TEXTS = ["{", "[]", "null", '{"format": "tonk-hand/1"}', "\ufeff{}", "NaN", "1e999", '"\\ud800"']
_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
_keys = st.sampled_from(KNOWN_KEYS) | st.text(max_size=6)
json_values = st.recursive(
    _scalars | st.sampled_from(CARD_TEXTS),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(_keys, inner, max_size=8),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(json_values)
def test_arbitrary_json_raises_only_tonk_errors(value: Any) -> None:
    exercise(value)
    if isinstance(value, dict):
        exercise({**value, "format": "tonk-hand/1"})


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.one_of(
        st.text(), st.binary(), st.sampled_from(["{", "[]", "null", '{"format": "tonk-hand/1"}', "\ufeff{}"])
    )
)
def test_arbitrary_text_raises_only_tonk_errors(text: str | bytes) -> None:
    with contextlib.suppress(TonkError):
        HandRecord.from_text(text)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_record_commands_never_raise(data: st.DataObject) -> None:
    """What ``tonk record simulate|verify`` does per file, in-process: a JSON line, always.
    (Choices drawn from Hypothesis here, so a failure shrinks to a small mutation.)"""
    record = mutated(DataChooser(data))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "r.json"
        path.write_text(json.dumps(record), encoding="utf-8")
        for compare in (False, True):
            line = check_file(str(path), compare)
            assert ("outcome" in line) != ("error" in line)
            json.dumps(line)


def write_corpus(folder: Path, count: int) -> list[Path]:
    rng = RandomChooser(random.Random(77))
    files = []
    for i in range(count):
        path = folder / f"case-{i:04d}.json"
        if i % 10 == 9:  # some files that are not JSON at all
            path.write_bytes(bytes(rng.below(256) for _ in range(rng.below(64))))
        else:
            path.write_text(json.dumps(mutated(rng)), encoding="utf-8")
        files.append(path)
    files.append(folder / "does-not-exist.json")
    return files


@pytest.mark.slow
def test_record_cli_prints_no_traceback(tmp_path: Path) -> None:
    files = write_corpus(tmp_path, 200)
    for command in ("simulate", "verify"):
        run = run_process(
            [sys.executable, "-m", "sdk.cli", "record", command, *map(str, files)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert "Traceback" not in run.stderr, run.stderr[-2000:]
        assert run.returncode in (0, 1), run.stderr[-2000:]
        lines = [json.loads(line) for line in run.stdout.splitlines()]
        assert [line["file"] for line in lines] == [str(f) for f in files]
        assert all(("outcome" in line) != ("error" in line) for line in lines)


# -- found by fuzzing: reported to the engine's owner ----------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


def test_deeply_nested_text_is_a_record_error() -> None:
    with pytest.raises(TonkError):
        HandRecord.from_text(DEEP)


def test_record_cli_on_deeply_nested_file(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"format": "tonk-hand/1", "note": ' + DEEP + "}")
    run = run_process(
        [sys.executable, "-m", "sdk.cli", "record", "simulate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert "Traceback" not in run.stderr
    assert json.loads(run.stdout)["error"]["action"] is None


def test_an_object_is_not_a_list_of_cards() -> None:
    record = copy.deepcopy(SEEDS[0])
    record["hands"][0] = {card: 1 for card in record["hands"][0]}
    with pytest.raises(TonkError):
        HandRecord.from_json(record)


# -- the reader's fast paths against the plain reading ---------------------------------------
# HandRecord.from_json takes shortcuts for the usual record, and from_text reads with orjson
# when it is installed. Neither may change what is read or what an error says: both are
# compared with tests/helpers/record_reference.py, the checks written once each, in order.

try:
    import orjson

    ORJSON: list[Any] = [orjson.loads]
except ImportError:  # the bot author's install: only the standard library's reading
    ORJSON = []


def what_reading_gives(read: Callable[[Any], HandRecord], value: Any) -> tuple[Any, ...]:
    """The record read (written out, with its checked start) or the error, comparably."""
    try:
        record = read(value)
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc))
    start = record.initial_state()
    written = json.dumps(record.to_json())  # a float where an int was shows here (1.0 == 1)
    state = [getattr(start, name) for name in ("_initial", "hands", "discard", "_stock", "table")]
    state += [start.to_act, start.phase, start.outcome, start.rules, start.dealer]
    return ("record", written, repr(record), record, state)


def text_readers() -> list[Callable[[str | bytes], HandRecord]]:
    """HandRecord.from_text with each JSON reader: the standard library's, orjson's."""

    def reader(loads: Any) -> Callable[[str | bytes], HandRecord]:
        def read(text: str | bytes) -> HandRecord:
            saved = record_module._orjson_loads
            record_module._orjson_loads = loads
            try:
                return HandRecord.from_text(text)
            finally:
                record_module._orjson_loads = saved

        return read

    return [reader(None), *map(reader, ORJSON)]


def assert_read_alike(text: str | bytes) -> tuple[Any, ...]:
    expected = what_reading_gives(reference_from_text, text)
    for read in text_readers():
        assert what_reading_gives(read, text) == expected
    return expected


@settings(max_examples=FUZZ_EXAMPLES // 2, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, 2**64 - 1))
def test_the_reader_agrees_with_the_plain_reading(seed: int) -> None:
    record = mutated(RandomChooser(random.Random(seed)))
    expected = what_reading_gives(reference_from_json, copy.deepcopy(record))
    assert what_reading_gives(HandRecord.from_json, copy.deepcopy(record)) == expected
    with contextlib.suppress(ValueError):  # NaN and the like, which JSON text cannot hold
        text = json.dumps(record, allow_nan=False)
        assert_read_alike(text)
        assert_read_alike(text.encode())


def test_valid_records_read_alike_every_way() -> None:
    for record in SEEDS:
        text = json.dumps(record)
        assert assert_read_alike(text)[0] == "record"
        assert assert_read_alike(text.encode())[0] == "record"
        assert what_reading_gives(HandRecord.from_json, copy.deepcopy(record)) == what_reading_gives(
            reference_from_json, copy.deepcopy(record)
        )


def with_field(key: str, value_text: str, record: dict[str, Any] | None = None) -> str:
    """A valid record's text with ``key`` set to the JSON ``value_text``, written verbatim."""
    base = dict(record or SEEDS[0])
    base[key] = "@@"
    return json.dumps(base).replace('"@@"', value_text)


# Where orjson and the standard library part ways: a number past 64 bits (orjson reads a
# float), NaN and Infinity (the standard library reads them), nesting between the standard
# library's recursion limit and orjson's 1024, byte order marks, UTF-16, lone surrogates.
ODD_FIELDS = [
    str(2**64),
    str(-(2**63) - 1),
    "9" * 30,
    "1" * 5000,
    "[1, 18446744073709551616]",
    '{"k": [0, 99999999999999999999]}',
    "1e400",
    "NaN",
    "-Infinity",
    "0.5",
    "-0",
    "[" * 990 + "]" * 990,
    "[" * 1020 + "]" * 1020,
    "[" * 1100 + "]" * 1100,
    '{"a": ' * 500 + "1" + "}" * 500,
    '"\\ud800"',
    '"caf\\u00e9 \\ud83d\\ude00"',
    '{"a": 1, "a": [2]}',
]


ODD_PLACES = ["extra", "faulted", "note", "dealer", "players", "outcome", "rules", "actions"]


@pytest.mark.parametrize("value", ODD_FIELDS, ids=lambda v: v[:24])
@pytest.mark.parametrize("key", ODD_PLACES)
def test_where_json_readers_differ_the_standard_library_decides(key: str, value: str) -> None:
    if key == "faulted":  # an outcome key that is kept unchecked
        outcome = json.dumps(SEEDS[0]["outcome"])
        assert_read_alike(with_field("outcome", outcome[:-1] + ', "faulted": ' + value + "}"))
    else:
        assert_read_alike(with_field(key, value))


def test_odd_texts_read_alike() -> None:
    text = json.dumps(SEEDS[0])
    for odd in [
        *ODD_TEXTS,
        DEEP,
        text.encode("utf-8-sig"),  # a BOM: the standard library reads bytes with one
        "\ufeff" + text,  # and refuses a str with one
        text.encode("utf-16"),
        text.replace('"p0"', '"\\ud800"'),
        text.replace('"p0"', '"\ud800"'),  # a lone surrogate in the str itself
        text.encode() + b"\xff",
        text + " \n\t",
        text + " x",
        text.replace(", ", " ,\r\n  "),
    ]:
        assert_read_alike(odd)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.text(), st.binary(), json_values.map(json.dumps)))
def test_arbitrary_texts_read_alike(text: str | bytes) -> None:
    assert_read_alike(text)


def test_the_sdk_reads_records_without_orjson() -> None:
    """The bot author's install has no orjson: the standard library reads every record."""
    case = sorted(CASES.glob("*.json"))[0]
    code = (
        "import sys; sys.modules['orjson'] = None\n"
        "import sdk.record as r\n"
        "assert r._orjson_loads is None\n"
        f"print(r.HandRecord.from_text(open({str(case)!r}, 'rb').read()).verify().end)\n"
    )
    run = run_process([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() in ("tonk", "drop", "out", "stock", "cap", "fault")
