"""Fuzzing the dashboard: every route of the app (pages and /api/v1), with Hypothesis over
paths, query strings, headers and bodies, on SQLite and PostgreSQL seeded as the arena
seeds them. Whatever arrives, the answer is never a 500, an API error is clean JSON
(``{"error": {"code", "message"}}``), and a refused write changes no row of any table.

Host names are resolved by a fake resolver and bot checks are off, so nothing here leaves
the machine; "run" and "resume" go to a backend that only records what it was given.
"""

from __future__ import annotations

import json
import logging
import os
import re
import urllib.parse
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from flask import Flask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from arena.store.db import dispose_engines, session_scope
from arena.store.models import Base

EXAMPLES = int(os.environ.get("TONK_API_FUZZ_EXAMPLES", "150"))


class RecordingBackend:
    """Takes the matches "run" would queue, and plays none of them."""

    def __init__(self) -> None:
        self.submitted: list[int] = []

    def submit(self, match_ids: Sequence[int], *, replace: Collection[int] = ()) -> int:
        self.submitted.extend(match_ids)
        return len(match_ids)

    def close(self, *, cancel: bool = False) -> None:
        pass


def fake_resolver(host: str) -> list[str]:
    # Names never reach DNS here: "*.public.test" is a public address, anything else unknown.
    return ["93.184.216.34"] if host.endswith(".public.test") else []


@dataclass
class Store:
    url: str
    app: Flask
    tokens: dict[str, str]
    ids: dict[str, list[int]] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)

    def count(self, key: str) -> None:
        self.stats[key] = self.stats.get(key, 0) + 1


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """A fresh arena of each kind, seeded like the dashboard tests' (played tournaments, one
    under way, owners alice and bob), that this module alone may write to."""
    from helpers import dashboard_fixtures as fx  # the registered plugin (imported after pytest rewrote it)

    import arena.bots.addresses

    patch = pytest.MonkeyPatch()
    patch.setattr(arena.bots.addresses, "system_resolver", fake_resolver)
    name = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'arena.sqlite'}"
    else:
        name, url = fx._create_pg_database()
    try:
        seeded = fx.seed_arena(url)
        # The leaderboard cache as deployed (refit at most once a second): the fuzzers are
        # after crashes and stray writes, not fresh ratings.
        app = fx.make_app(
            url,
            TOURNAMENT_BACKEND=RecordingBackend(),
            BOT_CHECKS=False,
            CACHE_REFRESH_SECONDS=1.0,
            CACHE_STALE_OK=True,
        )
        tokens = {"operator": fx.OPERATOR_TOKEN, "alice": seeded.alice_token, "bob": seeded.bob_token}
        with session_scope(url) as session:
            from arena.store.models import Match, Tournament

            ids = {
                "tournament": list(session.scalars(select(Tournament.id))),
                "match": list(session.scalars(select(Match.id))),
            }
        yield Store(url, app, tokens, ids)
    finally:
        patch.undo()
        dispose_engines()
        if name is not None:
            fx._drop_pg_database(name)


def row_counts(url: str) -> dict[str, int]:
    with session_scope(url) as session:
        return {
            t.name: session.scalar(select(func.count()).select_from(t)) or 0
            for t in Base.metadata.sorted_tables
        }


# -- what to send -----------------------------------------------------------------------------

JUNK_TEXT = [
    "", " ", "0", "-1", "1.5", "1e3", "0x10", "\uff12", "٣", "NaN", "null", "true", "[]", "{}",
    "a" * 300, "x" * 5000, "\x00", "a\x00b", "😀", "\u202e", "..", "%", "%00", "%2F",
    "'; DROP TABLE bots; --",
    "<script>alert(1)</script>", "random", "croaker", "lowball", "done", "pending", "running",
]  # fmt: skip
HUGE = [2**31 - 1, 2**31, 2**63, 2**64, 10**30, -(2**31), -1, 0]


def id_texts(store: Store, kind: str) -> st.SearchStrategy[str]:
    known = [str(i) for i in store.ids.get(kind, [])]
    return st.one_of(
        st.sampled_from(known or ["1"]),
        st.sampled_from([str(h) for h in HUGE] + ["00001", "+1", " 1", "1 "]),
        st.sampled_from(JUNK_TEXT),
        st.text(max_size=20),
    )


VARIABLE = re.compile(r"<(?:([a-z]+(?:\([^)]*\))?):)?(\w+)>")


def segment(raw: str) -> str:
    return urllib.parse.quote(raw, safe="")


def paths(store: Store) -> st.SearchStrategy[str]:
    """A path of the app: a route's template with each variable replaced by something."""
    rules = [r for r in store.app.url_map.iter_rules() if r.endpoint != "static"]

    @st.composite
    def build(draw: st.DrawFn) -> str:
        rule = draw(st.sampled_from(rules))

        def fill(m: re.Match[str]) -> str:
            converter, variable = m.group(1) or "", m.group(2)
            if converter == "id":
                kind = "match" if "match" in variable else "tournament"
                value = draw(id_texts(store, kind))
            elif converter == "index":
                value = draw(st.sampled_from(["0", "1", "5", "99", "-1", "2147483648", "x", "\uff11"]))
            elif converter.startswith("any"):
                value = draw(st.sampled_from(["pause", "resume", "run", "stop", "", "PAUSE"]))
            else:
                value = draw(st.one_of(st.sampled_from(JUNK_TEXT), st.text(max_size=40)))
            return segment(value)

        return VARIABLE.sub(fill, rule.rule)

    return build()


def query(draw: st.DrawFn) -> str:
    keys = ["page", "per_page", "status", "bot", "tournament", "hand", "decision", "q", "x"]
    pairs = draw(
        st.lists(
            st.tuples(
                st.sampled_from(keys) | st.text(max_size=8),
                st.sampled_from(JUNK_TEXT + [str(h) for h in HUGE] + ["1", "2", "100", "101"])
                | st.text(max_size=20),
            ),
            max_size=4,
        )
    )
    return urllib.parse.urlencode(pairs)


class Unhandled(logging.Handler):
    """Keeps the exceptions the app logs as unhandled (each 500 it answers)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.errors: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.errors.append(record.exc_info[1])


def send(store: Store, method: str, path: str, **kwargs: Any) -> Any:
    handler = Unhandled()
    logger = store.app.logger
    logger.addHandler(handler)
    try:
        response = store.app.test_client().open(path, method=method, **kwargs)
    finally:
        logger.removeHandler(handler)
    assert response.status_code < 500, (method, path, response.status_code, handler.errors[-1:])
    return response


def assert_clean(path: str, response: Any) -> None:
    assert response.status_code < 500, (path, response.status_code, response.data[:500])
    if path.startswith("/api/") and response.status_code >= 400:
        assert response.mimetype == "application/json", (path, response.status_code, response.mimetype)
        body = response.get_json()
        assert set(body) == {"error"} and body["error"]["code"] and body["error"]["message"], body


# -- reading: every route, any path and query ----------------------------------------------------


def examples(store: Store, share: float = 1.0) -> settings:
    # PostgreSQL answers this dashboard ~3x slower than SQLite: half the cases there.
    n = EXAMPLES if store.url.startswith("sqlite") else EXAMPLES // 2
    return settings(
        max_examples=max(10, int(n * share)), deadline=None, suppress_health_check=list(HealthCheck)
    )


@pytest.mark.slow
def test_get_any_route_never_500(store: Store) -> None:
    @examples(store)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        path = data.draw(paths(store))
        qs = data.draw(st.composite(query)())
        response = send(store, "GET", f"{path}?{qs}" if qs else path)
        assert_clean(path, response)
        store.count(f"get {response.status_code // 100}xx")

    run()


# -- writing: bots and tournaments --------------------------------------------------------------

json_junk = st.recursive(
    st.none() | st.booleans() | st.sampled_from(HUGE) | st.integers(-10, 10) | st.floats()
    | st.sampled_from(JUNK_TEXT) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)  # fmt: skip

BOT_NAMES = [
    "random",
    "lowball",
    "flaky",
    "croaker",
    "newbot",
    "alices-bot",
    "bot-2",
    "bot-3",
    "x",
    "Bad Name",
]
ADDRESSES = [
    "8.8.8.8:50051", "bot.public.test:443", "127.0.0.1:50051", "10.0.0.1:1", "[::1]:5", "nowhere.invalid:1",
    "8.8.8.8:0", "8.8.8.8:70000", "8.8.8.8", ":50051", "http://8.8.8.8:1", "8.8.8.8:50051\x00",
    "[fe80::1%eth0]:1",
]  # fmt: skip


def bot_body(draw: st.DrawFn) -> dict[str, Any]:
    # Mostly well-formed, so that many requests reach the registry and some are accepted.
    body: dict[str, Any] = {}
    if draw(st.integers(0, 4)):
        body["name"] = draw(st.sampled_from(BOT_NAMES) if draw(st.integers(0, 3)) else json_junk)
    if draw(st.integers(0, 4)):
        body["address"] = draw(st.sampled_from(ADDRESSES) if draw(st.integers(0, 3)) else json_junk)
    if draw(st.integers(0, 4)) == 0:
        body[draw(st.text(max_size=8))] = draw(json_junk)
    return body


def tournament_body(draw: st.DrawFn) -> dict[str, Any]:
    small = st.sampled_from([1, 2, 0, -1, 100_001, 2**31, 10**30, "2", 2.0, None])
    fields: dict[str, st.SearchStrategy[Any]] = {
        "name": st.sampled_from(["Cup", "", " ", "a" * 200, "\x00", "Cup\x00", "😀 Cup"])
        | st.text(max_size=20),
        "bots": st.lists(st.sampled_from([*BOT_NAMES[:4], "ghost", "", "a\x00"]), max_size=5) | json_junk,
        "table_sizes": st.lists(st.sampled_from([2, 3, 1, 7, 0, -2, "2", 2**40]), max_size=3) | json_junk,
        "deals_per_table": small,
        "hands_per_match": small,
        "seed": st.sampled_from([None, 0, 1, 2**64 - 1, 2**64, -1, "7", 1.5]),
        "rules": st.sampled_from(["standard", "custom", "nope", {"hit_lock": True}, {"turn_cap": 10**30},
                                  {"tonk_low": -1}, {"bogus": 1}, {"turn_cap": "9"}, None, 5]),
        "config": st.sampled_from([None, {}, {"max_faults": 0}, {"decision_deadline_ms": -5},
                                   {"time_bank_ms": 10**30}, {"max_faults": 2}, {"nope": 1}, "x", [1]]),
    }  # fmt: skip
    body = {k: draw(v) for k, v in fields.items() if draw(st.integers(0, 5)) > 0}
    if draw(st.integers(0, 5)) == 0:
        body[draw(st.text(max_size=8))] = draw(json_junk)
    return body


def sprt_body(draw: st.DrawFn) -> dict[str, Any]:
    """An owner's sequential test (POST /api/v1/sprt): mostly well-formed names and numbers."""
    number = st.sampled_from([0, 5, 20, 300, -5, 1001, 0.05, 0.5, 1e308, "20", True, None, 2**64])
    fields: dict[str, st.SearchStrategy[Any]] = {
        "new": st.sampled_from([*BOT_NAMES[:4], "ghost", "", "a\x00", 7]),
        "old": st.sampled_from([*BOT_NAMES[:4], "ghost", "", "a\x00", 7]),
        "elo0": number, "elo1": number, "alpha": number, "beta": number,
        "batch": st.sampled_from([1, 2, 8, 0, -1, 1001, 2.5, "8"]),
        "hands_per_match": st.sampled_from([1, 2, 20, 0, 51, 10_001, 2**40, "2"]),
        "max_pairs": st.sampled_from([1, 8, 20, 401, 2000, 100_001, 0, "8"]),
    }  # fmt: skip
    body = {k: draw(v) for k, v in fields.items() if draw(st.integers(0, 4)) > 0}
    if draw(st.integers(0, 5)) == 0:
        body[draw(st.text(max_size=8))] = draw(json_junk)
    return body


@st.composite
def write_request(draw: st.DrawFn, store: Store) -> tuple[str, str, dict[str, str], bytes]:
    route = draw(st.sampled_from(
        ["post bot", "put bot", "delete bot", "post tournament", "action", "post sprt", "stop sprt"]
    ))
    bot = segment(draw(st.sampled_from(BOT_NAMES) | st.text(max_size=20)))
    tid = segment(draw(id_texts(store, "tournament")))
    method, path = {
        "post bot": ("POST", "/api/v1/bots"),
        "put bot": ("PUT", f"/api/v1/bots/{bot}"),
        "delete bot": ("DELETE", f"/api/v1/bots/{bot}"),
        "post tournament": ("POST", "/api/v1/tournaments"),
        "action": (
            "POST",
            f"/api/v1/tournaments/{tid}/{draw(st.sampled_from(['pause', 'resume', 'run', 'x']))}",
        ),
        "post sprt": ("POST", "/api/v1/sprt"),
        "stop sprt": ("POST", f"/api/v1/sprt/{tid}/stop"),
    }[route]
    # Mostly the caller the route wants, so that most bodies get past authentication.
    wanted = ["operator"] * 4 if route in ("post tournament", "action") else ["alice"] * 3 + ["bob"]
    if "sprt" in route:  # an owner's own test: alice has one bot, an operator may test any two
        wanted = ["operator"] * 3 + ["alice"] * 2
    who = draw(st.sampled_from([*wanted, "operator", "alice", "bob", "none", "junk", "basic", "empty"]))
    headers = {}
    if who in store.tokens:
        headers["Authorization"] = f"Bearer {store.tokens[who]}"
    elif who == "junk":
        # Latin-1 without control characters: what an HTTP header can carry at all.
        printable = st.characters(min_codepoint=32, max_codepoint=255, exclude_characters="\x7f")
        headers["Authorization"] = "Bearer " + draw(st.text(printable, max_size=60))
    elif who == "basic":
        headers["Authorization"] = "Basic YWxpY2U6c2VjcmV0"
    elif who == "empty":
        headers["Authorization"] = ""
    shape = draw(st.integers(0, 13))
    if shape == 0:  # not JSON at all, or not a JSON object
        body = draw(st.sampled_from([b"", b"{", b"[1,2]", b'"text"', b"\xff\xfe\x00", b"null", b'{"a":1}{}']))
    elif shape == 1:  # over the size limit
        body = json.dumps({"name": "big", "address": "8.8.8.8:1", "pad": "x" * 70_000}).encode()
    elif shape == 2:  # nested, but not as deep as the known RecursionError (see below)
        body = b'{"name":' + b"[" * 500 + b"]" * 500 + b"}"
    elif shape == 3:
        body = json.dumps(draw(json_junk)).encode()
    else:
        maker = tournament_body if "tournament" in route else sprt_body if "sprt" in route else bot_body
        payload = draw(st.composite(maker)())
        body = json.dumps(payload).encode()
    headers["Content-Type"] = draw(
        st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded"])
    )
    return method, path, headers, body


@pytest.mark.slow
def test_writes_never_500_and_refusals_write_nothing(store: Store) -> None:
    @examples(store, share=0.7)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        method, path, headers, body = data.draw(write_request(store))
        before = row_counts(store.url)
        response = send(store, method, path, headers=headers, data=body)
        assert_clean(path, response)
        if response.status_code >= 400:
            assert row_counts(store.url) == before, (method, path, response.status_code, body[:200])
            store.count(f"refused {response.status_code}")
        else:
            store.count(f"accepted {method} {path.split('/')[3]}")

    run()
    print(f"api fuzz writes on {store.url.split(':')[0]}: {sorted(store.stats.items())}")


def test_deeply_nested_body_is_a_400(store: Store) -> None:
    body = b'{"name":' + b"[" * 20_000 + b"]" * 20_000 + b"}"  # deep, yet under the size limit
    before = row_counts(store.url)
    headers = {"Authorization": f"Bearer {store.tokens['alice']}", "Content-Type": "application/json"}
    response = store.app.test_client().post("/api/v1/bots", headers=headers, data=body)
    assert row_counts(store.url) == before
    assert response.status_code == 400


OPERATOR = "fuzz-operator-token"
CUP: dict[str, Any] = {"name": "Cup", "bots": ["random", "greedy"], "table_sizes": [2]}
CUP |= {"deals_per_table": 1, "hands_per_match": 1}


def fresh_app(url: str) -> Flask:
    """An app on a new store holding just two house bots (the fuzzers may have retired any
    bot of theirs)."""
    from helpers import dashboard_fixtures as fx

    from arena.bots.owners import get_or_create_operator
    from arena.bots.registry import host_bot

    with session_scope(url) as session:
        house = get_or_create_operator(session, "house")
        for name, spec in (("random", "bots.random_bot:RandomBot"), ("greedy", "bots.greedy:GreedyBot")):
            host_bot(session, house, name, spec, check=False)
    return fx.make_app(url, OPERATOR_TOKEN=OPERATOR, BOT_CHECKS=False)


def post_tournament(app: Flask, url: str, body: dict[str, Any]) -> int:
    before = row_counts(url)
    headers = {"Authorization": f"Bearer {OPERATOR}", "Content-Type": "application/json"}
    response = app.test_client().post("/api/v1/tournaments", headers=headers, data=json.dumps(body))
    if response.status_code >= 400:
        assert row_counts(url) == before
    return int(response.status_code)


def test_a_valid_tournament_is_created(sqlite_url: str) -> None:
    assert post_tournament(fresh_app(sqlite_url), sqlite_url, CUP) == 201


@pytest.mark.parametrize("body", [{**CUP, "name": "Cup\x00"}, {**CUP, "bots": ["random", "a\x00"]}])
def test_nul_in_a_tournament_is_a_400(pg_url: str, body: dict[str, Any]) -> None:
    try:
        assert post_tournament(fresh_app(pg_url), pg_url, body) == 400
    finally:
        dispose_engines()


@pytest.mark.parametrize(
    "extra",
    [
        {"rules": {"turn_cap": 2**31}},
        {"rules": {"tonk_high": 2**40}},
        {"config": {"time_bank_ms": 2**31}},
        {"config": {"decision_deadline_ms": 10**30}},
    ],
)
def test_out_of_range_rules_and_settings_are_a_400(sqlite_url: str, extra: dict[str, Any]) -> None:
    assert post_tournament(fresh_app(sqlite_url), sqlite_url, {**CUP, **extra}) == 400


@pytest.mark.parametrize("sizes", [[None, False], [2, "3"], [2, 2.0]])
def test_table_sizes_of_mixed_types_are_a_400(sqlite_url: str, sizes: list[Any]) -> None:
    # Found by the write fuzzer: sorted() before the type check made these a TypeError (500).
    assert post_tournament(fresh_app(sqlite_url), sqlite_url, {**CUP, "table_sizes": sizes}) == 400
