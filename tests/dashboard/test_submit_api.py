"""Bot submission and operator routes of the API, on a fresh SQLite and PostgreSQL store:
authentication, ownership, body checks, and the tournament life cycle."""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Callable, Collection, Sequence
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, update

from arena.bots.owners import create_owner, get_or_create_operator
from arena.bots.registry import BotCheckFailedError, host_bot
from arena.config import Settings
from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import CheckLease, Owner, utcnow

OPERATOR_TOKEN = "operator-secret-for-tests"  # dashboard_fixtures.OPERATOR_TOKEN
PUBLIC = "8.8.8.8:50051"  # a public address: accepted without DNS (checks are off here)


class InlineBackend:
    """Plays submitted matches at once, in this process (what a worker would do)."""

    def __init__(self, url: str):
        self.url = url
        self.played: list[int] = []

    def submit(self, match_ids: Sequence[int], *, replace: Collection[int] = ()) -> int:
        for match_id in match_ids:
            play_match_job(match_id, self.url)
            self.played.append(match_id)
        return len(match_ids)

    def close(self, *, cancel: bool = False) -> None:
        pass


def populate(url: str) -> dict[str, Any]:
    with session_scope(url) as session:
        _alice, alice = create_owner(session, "alice")
        _bob, bob = create_owner(session, "bob")
        house = get_or_create_operator(session, "house")
        host_bot(session, house, "random", "bots.random_bot:RandomBot", check=False)
        host_bot(session, house, "lowball", "helpers.dashboard_fixtures:LowBot", check=False)
    return {"url": url, "alice": alice, "bob": bob}


@pytest.fixture
def store(writable_url: str) -> dict[str, Any]:
    """A fresh store per test: for tests that write."""
    return populate(writable_url)


@pytest.fixture(scope="module")
def shared_store(module_url: str) -> dict[str, Any]:
    """One store per module: for requests that are all refused before anything is written."""
    return populate(module_url)


@pytest.fixture
def api(store: dict[str, Any], app_factory: Callable[..., Flask]) -> Flask:
    return app_factory(store["url"], TOURNAMENT_BACKEND=InlineBackend(store["url"]))


@pytest.fixture
def refusing_api(shared_store: dict[str, Any], app_factory: Callable[..., Flask]) -> Flask:
    return app_factory(shared_store["url"], TOURNAMENT_BACKEND=InlineBackend(shared_store["url"]))


def call(client: FlaskClient, method: str, url: str, token: str | None = None, body: Any = None,
         raw: bytes | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = raw if raw is not None else (None if body is None else json.dumps(body))
    response = client.open(url, method=method, headers=headers, data=data, content_type="application/json")
    assert response.mimetype == "application/json", response.data[:200]
    return response.status_code, response.get_json()


def test_register_update_and_retire_a_bot(api: Flask, store: dict[str, Any]) -> None:
    client = api.test_client()
    status, body = call(client, "POST", "/api/v1/bots", store["alice"], {"name": "goblin", "address": PUBLIC})
    assert status == 201, body
    assert body["bot"]["name"] == "goblin" and body["bot"]["owner"] == "alice"
    assert body["bot"]["version"]["number"] == 1
    assert client.get("/api/v1/bots/goblin").status_code == 200
    status, body = call(client, "PUT", "/api/v1/bots/goblin", store["alice"], {"address": "8.8.4.4:50052"})
    assert status == 200 and body["bot"]["version"]["number"] == 2
    assert body["bot"]["address"] == "8.8.4.4:50052"
    status, body = call(client, "DELETE", "/api/v1/bots/goblin", store["alice"])
    assert status == 200 and body["bot"]["status"] == "retired"
    # A retired bot keeps its name.
    status, body = call(client, "POST", "/api/v1/bots", store["bob"], {"name": "goblin", "address": PUBLIC})
    assert status == 409 and body["error"]["code"] == "name_taken"
    # Only its owner brings it back, checked again at its address: unchanged (the same address
    # and GetInfo), so the same version, whose rating goes on.
    status, body = call(client, "POST", "/api/v1/bots/goblin/restore", store["bob"])
    assert status == 403 and body["error"]["code"] == "not_owner"
    status, body = call(client, "POST", "/api/v1/bots/goblin/restore", store["alice"])
    assert status == 200 and body["bot"]["status"] == "active" and body["bot"]["version"]["number"] == 2
    assert body["bot"]["address"] == "8.8.4.4:50052" and body["bot"]["connected"] is False
    assert call(client, "POST", "/api/v1/bots/nobody/restore", store["alice"])[0] == 404


def test_only_the_owner_or_an_operator_may_change_a_bot(api: Flask, store: dict[str, Any]) -> None:
    client = api.test_client()
    assert call(client, "POST", "/api/v1/bots", store["alice"], {"name": "elmo", "address": PUBLIC})[0] == 201
    status, body = call(client, "PUT", "/api/v1/bots/elmo", store["bob"], {"address": PUBLIC})
    assert status == 403 and body["error"]["code"] == "not_owner"
    assert call(client, "DELETE", "/api/v1/bots/elmo", store["bob"])[0] == 403
    assert call(client, "DELETE", "/api/v1/bots/elmo", OPERATOR_TOKEN)[0] == 200
    assert call(client, "PUT", "/api/v1/bots/nobody", store["alice"], {"address": PUBLIC})[0] == 404
    assert call(client, "DELETE", "/api/v1/bots/nobody", store["alice"])[0] == 404


@pytest.mark.parametrize(
    "token, body, raw, status, code",
    [
        (None, {"name": "a1", "address": PUBLIC}, None, 401, "unauthenticated"),
        ("tonk_not-a-real-token", {"name": "a1", "address": PUBLIC}, None, 401, "unauthenticated"),
        ("alice", None, b"{not json", 400, "malformed_json"),
        ("alice", None, b"", 400, "malformed_json"),
        ("alice", None, b"\xff\xfe", 400, "malformed_json"),
        ("alice", ["a list"], None, 400, "invalid_parameter"),
        ("alice", {"address": PUBLIC}, None, 400, "invalid_parameter"),
        ("alice", {"name": "a1"}, None, 400, "invalid_parameter"),
        ("alice", {"name": 7, "address": PUBLIC}, None, 400, "invalid_parameter"),
        ("alice", {"name": "Bad Name!", "address": PUBLIC}, None, 400, "invalid_bot_name"),
        ("alice", {"name": "a1", "address": "no-port"}, None, 400, "invalid_address"),
        ("alice", {"name": "a1", "address": "10.0.0.1:5000"}, None, 422, "address_not_allowed"),
        ("alice", None, b'{"name": "' + b"x" * 100_000 + b'"}', 413, "too_large"),
    ],
)
def test_bad_submissions(refusing_api: Flask, shared_store: dict[str, Any], token: str | None, body: Any,
                         raw: bytes | None, status: int, code: str) -> None:
    real = shared_store.get(token, token) if token else None
    got, answer = call(refusing_api.test_client(), "POST", "/api/v1/bots", real, body, raw)
    assert (got, answer["error"]["code"]) == (status, code), answer


def test_a_bot_that_fails_its_checks_is_refused(
    shared_store: dict[str, Any], app_factory: Callable[..., Flask]
) -> None:
    def refuse(address: str, settings: Settings) -> dict[str, Any]:
        raise BotCheckFailedError(f"the bot at {address} did not answer")

    app = app_factory(shared_store["url"], BOT_CHECKS=True, BOT_CHECKER=refuse)
    status, body = call(app.test_client(), "POST", "/api/v1/bots", shared_store["alice"],
                        {"name": "silent", "address": PUBLIC})
    assert status == 422 and body["error"]["code"] == "bot_check_failed"
    assert app.test_client().get("/api/v1/bots/silent").status_code == 404  # nothing was written


def test_operator_creates_and_runs_a_tournament(api: Flask, store: dict[str, Any]) -> None:
    client = api.test_client()
    spec = {"name": "Cup", "bots": ["random", "lowball"], "table_sizes": [2], "deals_per_table": 2,
            "hands_per_match": 3, "seed": 7}
    assert call(client, "POST", "/api/v1/tournaments", store["alice"], spec)[0] == 403
    assert call(client, "POST", "/api/v1/tournaments", None, spec)[0] == 401
    status, body = call(client, "POST", "/api/v1/tournaments", OPERATOR_TOKEN, spec)
    assert status == 201, body
    tid = body["tournament"]["id"]
    assert body["tournament"]["status"] == "created" and body["tournament"]["matches"]["total"] == 4
    status, body = call(client, "POST", f"/api/v1/tournaments/{tid}/resume", OPERATOR_TOKEN)
    assert status == 409 and body["error"]["code"] == "tournament_state"  # not paused
    status, body = call(client, "POST", f"/api/v1/tournaments/{tid}/run", OPERATOR_TOKEN)
    assert status == 200, body
    assert body["tournament"]["status"] == "finished" and body["tournament"]["matches"]["done"] == 4
    assert call(client, "POST", f"/api/v1/tournaments/{tid}/pause", OPERATOR_TOKEN)[0] == 409
    assert call(client, "POST", f"/api/v1/tournaments/{tid}/run", store["bob"])[0] == 403
    assert call(client, "POST", "/api/v1/tournaments/999999/run", OPERATOR_TOKEN)[0] == 404
    assert call(client, "POST", "/api/v1/tournaments/abc/run", OPERATOR_TOKEN)[0] == 400
    assert call(client, "POST", f"/api/v1/tournaments/{tid}/explode", OPERATOR_TOKEN)[0] == 404
    leaderboard = client.get("/api/v1/leaderboard").get_json()["leaderboard"]
    assert {r["bot"] for r in leaderboard if r["rating"]} == {"random", "lowball"}


def test_pause_and_resume(api: Flask, store: dict[str, Any]) -> None:
    client = api.test_client()
    spec = {"name": "Long", "bots": ["random", "lowball"], "table_sizes": [2], "deals_per_table": 1,
            "hands_per_match": 2}
    tid = call(client, "POST", "/api/v1/tournaments", OPERATOR_TOKEN, spec)[1]["tournament"]["id"]
    status, body = call(client, "POST", f"/api/v1/tournaments/{tid}/pause", OPERATOR_TOKEN)
    assert status == 200 and body["tournament"]["status"] == "paused"
    status, body = call(client, "POST", f"/api/v1/tournaments/{tid}/resume", OPERATOR_TOKEN)
    assert status == 200 and body["tournament"]["status"] == "finished"


def test_the_old_field_name_of_deals_per_table_is_still_understood(api: Flask, store: dict[str, Any]) -> None:
    """`matches_per_table` (alias: its name before 0007, in tonk.v1 clients) creates the same
    tournament, and reads give both names; both at once is a clear 400 that creates nothing."""
    client = api.test_client()
    spec = {"name": "Old", "bots": ["random", "lowball"], "table_sizes": [2], "hands_per_match": 2}
    status, body = call(client, "POST", "/api/v1/tournaments", OPERATOR_TOKEN,
                        {**spec, "matches_per_table": 2})  # alias: the old client's field
    assert status == 201 and body["tournament"]["matches"]["total"] == 4, body
    detail = client.get(f"/api/v1/tournaments/{body['tournament']['id']}").get_json()["tournament"]
    assert detail["deals_per_table"] == detail["matches_per_table"] == 2  # alias: read back
    before = client.get("/api/v1/tournaments").get_json()["total"]
    status, body = call(client, "POST", "/api/v1/tournaments", OPERATOR_TOKEN,
                        {**spec, "deals_per_table": 1, "matches_per_table": 1})  # alias: both
    assert status == 400 and "not both" in body["error"]["message"], body
    assert client.get("/api/v1/tournaments").get_json()["total"] == before


@pytest.mark.parametrize(
    "spec, status, code",
    [
        ({"name": "X", "bots": ["random", "nobody"], "table_sizes": [2], "deals_per_table": 1,
          "hands_per_match": 2}, 404, "bot_not_found"),
        ({"name": "X", "bots": ["random"], "table_sizes": [2], "deals_per_table": 1,
          "hands_per_match": 2}, 400, "invalid_tournament"),
        ({"name": "X", "bots": "random", "table_sizes": [2], "deals_per_table": 1,
          "hands_per_match": 2}, 400, "invalid_parameter"),
        ({"name": "X", "bots": ["random", "lowball"], "table_sizes": [2], "deals_per_table": "1",
          "hands_per_match": 2}, 400, "invalid_parameter"),
        ({"name": "X", "bots": ["random", "lowball"], "table_sizes": [2], "deals_per_table": 1,
          "hands_per_match": 2, "rules": {"no_such_rule": True}}, 400, "invalid_parameter"),
        ({"name": "X", "bots": ["random", "lowball"], "table_sizes": [2], "deals_per_table": 1,
          "hands_per_match": 2, "colour": "blue"}, 400, "invalid_parameter"),
        ({"name": "X", "bots": ["random", "lowball"], "table_sizes": [9], "deals_per_table": 1,
          "hands_per_match": 2}, 400, "invalid_tournament"),
    ],
)
def test_bad_tournament_specs(refusing_api: Flask, spec: dict[str, Any], status: int, code: str) -> None:
    got, body = call(refusing_api.test_client(), "POST", "/api/v1/tournaments", OPERATOR_TOKEN, spec)
    assert (got, body["error"]["code"]) == (status, code), body


def test_bot_checks_are_bounded_per_owner_and_in_all(
    store: dict[str, Any], app_factory: Callable[..., Flask]
) -> None:
    """A check runs inside the request (seconds of a thread): one at a time per owner, at most
    BOT_CHECK_SLOTS at once; a request past either bound is a 429 with Retry-After that
    writes nothing, and a slot comes back when its check ends, passed or failed."""
    started, release = threading.Event(), threading.Event()

    def slow(address: str, settings: Settings) -> dict[str, Any]:
        if address.startswith("8.8.4.4"):
            raise BotCheckFailedError(f"the bot at {address} did not answer")
        started.set()
        assert release.wait(10), "the test never released the check"
        return {"name": "slow", "version": "1", "author": "", "protocol_version": "tonk.v1"}

    app = app_factory(store["url"], BOT_CHECKS=True, BOT_CHECKER=slow, BOT_CHECK_SLOTS=1)
    first: dict[str, Any] = {}

    def register_first() -> None:
        first["answer"] = call(app.test_client(), "POST", "/api/v1/bots", store["alice"],
                               {"name": "patient", "address": PUBLIC})

    worker = threading.Thread(target=register_first)
    worker.start()
    try:
        assert started.wait(10)
        client = app.test_client()
        for who, name, why in (("alice", "eager", "still running"), ("bob", "other", "already checking 1")):
            response = client.post("/api/v1/bots", json={"name": name, "address": PUBLIC},
                                   headers={"Authorization": f"Bearer {store[who]}"})
            assert response.status_code == 429 and response.headers["Retry-After"] == "5"
            error = response.get_json()["error"]
            assert error["code"] == "too_many_requests" and why in error["message"], error
            assert client.get(f"/api/v1/bots/{name}").status_code == 404  # nothing was written
        # Updating a bot runs a check too: refused at the gate before anything is looked up.
        status, body = call(client, "PUT", "/api/v1/bots/patient", store["bob"], {"address": PUBLIC})
        assert status == 429 and body["error"]["code"] == "too_many_requests", body
        # Another dashboard process (its own app and gate) on the same store counts it too.
        elsewhere = app_factory(store["url"], BOT_CHECKS=True, BOT_CHECKER=slow, BOT_CHECK_SLOTS=1)
        status, body = call(elsewhere.test_client(), "POST", "/api/v1/bots", store["bob"],
                            {"name": "other", "address": PUBLIC})
        assert status == 429 and "already checking 1" in body["error"]["message"], body
    finally:
        release.set()
        worker.join(10)
    assert first["answer"][0] == 201, first
    client = app.test_client()
    # The slot is free again, also after a check that fails.
    broken = {"name": "broken", "address": "8.8.4.4:50051"}
    status, body = call(client, "POST", "/api/v1/bots", store["bob"], broken)
    assert status == 422 and body["error"]["code"] == "bot_check_failed", body
    started.clear()
    release.set()
    # (At an address of its own: alice's bot is registered at PUBLIC, and addresses are claimed.)
    own = {"name": "other", "address": "8.8.8.8:50053"}
    status, body = call(client, "POST", "/api/v1/bots", store["bob"], own)
    assert status == 201, body
    with session_scope(store["url"]) as db:
        assert db.scalars(select(CheckLease)).all() == []  # every lease was given back


def test_the_operator_token_registers_a_checked_bot_on_its_first_use(
    store: dict[str, Any], app_factory: Callable[..., Flask]
) -> None:
    """The operator owner is created by the request that first uses its token; the check's
    lease (its own transaction) must be able to name it."""

    def quick(address: str, settings: Settings) -> dict[str, Any]:
        return {"name": "quick", "version": "1", "author": "", "protocol_version": "tonk.v1"}

    with session_scope(store["url"]) as db:
        assert db.scalars(select(Owner).where(Owner.name == "operator")).first() is None
    app = app_factory(store["url"], BOT_CHECKS=True, BOT_CHECKER=quick)
    body = {"name": "house-quick", "address": PUBLIC}
    status, answer = call(app.test_client(), "POST", "/api/v1/bots", OPERATOR_TOKEN, body)
    assert status == 201, answer
    assert answer["bot"]["owner"] == "operator", answer


def test_a_bot_check_lease_of_a_dead_dashboard_process_lapses(
    store: dict[str, Any], app_factory: Callable[..., Flask]
) -> None:
    """A process killed mid-check cannot give its lease back: the lease holds its slot until
    it expires, then the next admission clears it."""

    def quick(address: str, settings: Settings) -> dict[str, Any]:
        return {"name": "quick", "version": "1", "author": "", "protocol_version": "tonk.v1"}

    app = app_factory(store["url"], BOT_CHECKS=True, BOT_CHECKER=quick, BOT_CHECK_SLOTS=1)
    with session_scope(store["url"]) as db:
        alice = db.scalars(select(Owner).where(Owner.name == "alice")).one()
        expires = utcnow() + dt.timedelta(minutes=5)
        db.add(CheckLease(slot=0, owner_id=alice.id, holder="dead", expires_at=expires))
    client = app.test_client()
    status, body = call(client, "POST", "/api/v1/bots", store["bob"], {"name": "bobs", "address": PUBLIC})
    assert status == 429 and "already checking 1" in body["error"]["message"], body
    with session_scope(store["url"]) as db:
        db.execute(update(CheckLease).values(expires_at=utcnow() - dt.timedelta(seconds=1)))
    status, body = call(client, "POST", "/api/v1/bots", store["bob"], {"name": "bobs", "address": PUBLIC})
    assert status == 201, body
    with session_scope(store["url"]) as db:
        assert db.scalars(select(CheckLease)).all() == []


def test_operator_creates_a_sequential_test_and_its_page_shows_the_llr(
    api: Flask, store: dict[str, Any]
) -> None:
    client = api.test_client()
    spec = {"name": "v2?", "bots": ["lowball", "random"], "table_sizes": [2], "deals_per_table": 1,
            "hands_per_match": 3, "kind": "sprt", "sprt": {"elo0": 0}}
    status, body = call(client, "POST", "/api/v1/tournaments", OPERATOR_TOKEN, spec)
    assert status == 400 and "'sprt' needs elo1" in body["error"]["message"]
    status, body = call(client, "POST", "/api/v1/tournaments", OPERATOR_TOKEN,
                        {**spec, "sprt": {"elo0": 0, "elo1": 20, "alpha": 0.7}})
    assert status == 400 and "alpha must be between 0 and 0.5, got 0.7" in body["error"]["message"]
    status, body = call(client, "POST", "/api/v1/tournaments", OPERATOR_TOKEN,
                        {**spec, "sprt": {"elo0": 0, "elo1": 20, "batch": 2}})
    assert status == 201 and body["tournament"]["matches"]["total"] == 4, body  # the first 2 pairs
    tid = body["tournament"]["id"]
    assert call(client, "POST", f"/api/v1/tournaments/{tid}/run", OPERATOR_TOKEN)[0] == 200
    detail = client.get(f"/api/v1/tournaments/{tid}").get_json()["tournament"]
    assert detail["kind"] == "sprt" and detail["challenger"] == "lowball"
    test = detail["sprt"]
    assert test["pairs"] >= 2 and test["lower"] < 0 < test["upper"] and test["elo1"] == 20
    html = client.get(f"/tournaments/{tid}").get_data(as_text=True)
    assert "Sequential test" in html and "sprt-chart" in html and f"LLR <strong>{test['llr']:.2f}" in html
    estimate = test["estimate"]
    assert estimate["pairs"] == test["pairs"] and estimate["low"] <= estimate["elo"] <= estimate["high"], test
    assert f"<strong>{estimate['elo']:+.0f} Elo</strong> against the other (95% interval" in html
    # The live poll carries the state without the history (the page draws it on load).
    history = test.pop("history")
    assert history["points"][-1]["llr"] == test["llr"] and history["points"][-1]["pairs"] == test["pairs"]
    assert client.get(f"/api/v1/tournaments/{tid}/progress").get_json()["progress"]["sprt"] == test
    gauntlet = {"name": "g", "bots": ["lowball", "random"], "table_sizes": [2], "deals_per_table": 1,
                "hands_per_match": 2, "kind": "gauntlet"}
    status, body = call(client, "POST", "/api/v1/tournaments", OPERATOR_TOKEN, gauntlet)
    assert status == 201 and body["tournament"]["matches"]["total"] == 2, body
    detail = client.get(f"/api/v1/tournaments/{body['tournament']['id']}").get_json()["tournament"]
    assert (detail["kind"], detail["challenger"]) == ("gauntlet", "lowball")
    status, body = call(client, "POST", "/api/v1/tournaments", OPERATOR_TOKEN, {**gauntlet, "kind": "swiss"})
    assert status == 400 and "kind 'swiss' is not round-robin, gauntlet or sprt" in body["error"]["message"]
    # A ladder is a kind of its own, made by POST /api/v1/ladders (it has no fixed tables).
    status, body = call(client, "POST", "/api/v1/tournaments", OPERATOR_TOKEN, {**gauntlet, "kind": "ladder"})
    assert status == 400 and "tonk ladder create" in body["error"]["message"]
