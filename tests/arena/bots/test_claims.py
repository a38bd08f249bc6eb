"""Addresses are private and claimed (arena/bots/claims.py): a bot's address is shown only to its
owner and operators, registering one needs the registrant's claim code back from the bot,
and a copy of another owner's address is refused. Real bots over gRPC, the real checks, the
real dashboard app, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from arena.bots.addresses import redact_addresses
from arena.bots.claims import CLAIM_PREFIX, claim_code
from arena.config import Settings
from bots.random_bot import RandomBot
from sdk.protocol import bot_pb2 as pb
from sdk.server import RunningServer, start_server


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("pg_url" if request.param == "postgres" else "sqlite_url"))


@pytest.fixture
def arena(url: str) -> Iterator[dict[str, Any]]:
    """The dashboard app with real checks, claims asked of loopback bots too (the only ones a
    test can run), and owners alice and bob plus an operator; their tokens and ids."""
    from arena.bots.owners import create_owner
    from arena.store.db import dispose_engines, session_scope
    from dashboard import create_app

    settings = Settings(
        database_url=url,
        allowed_bot_hosts=("127.0.0.1",),
        claim_allowed_hosts=True,
        decision_deadline_ms=1000,
    )
    app = create_app({"DATABASE_URL": url, "SETTINGS": settings, "TESTING": True})
    with session_scope(url) as session:
        made = {n: create_owner(session, n, operator=n == "boss") for n in ("alice", "bob", "boss")}
        ids = {name: owner.id for name, (owner, _token) in made.items()}
        tokens = {name: token for name, (_owner, token) in made.items()}
    yield {"app": app, "tokens": tokens, "ids": ids, "url": url}
    dispose_engines()


@pytest.fixture
def bots() -> Iterator[list[RunningServer]]:
    servers = [start_server(RandomBot, claim="") for _ in range(3)]
    yield servers
    for server in servers:
        server.stop(0)


def call(
    client: FlaskClient, method: str, path: str, token: str | None = None, body: Any = None
) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None if body is None else json.dumps(body)
    response = client.open(path, method=method, headers=headers, data=data, content_type="application/json")
    assert response.mimetype == "application/json", response.data[:300]
    return response.status_code, response.get_json()


def code_of(arena: dict[str, Any], who: str, address: str) -> str:
    """``who``'s claim code for ``address`` in this arena (under its stored claim secret)."""
    from arena.store.db import session_scope
    from arena.store.secrets import arena_secret

    with session_scope(arena["url"]) as session:
        return claim_code(arena_secret(session, "claim"), arena["ids"][who], address)


def bot_names(url: str) -> list[str]:
    from sqlalchemy import select

    from arena.store.db import session_scope
    from arena.store.models import Bot

    with session_scope(url) as session:
        return sorted(session.scalars(select(Bot.name)))


@pytest.mark.slow
def test_registering_an_address_needs_the_claim_code_back_from_the_bot(
    arena: dict[str, Any], bots: list[RunningServer]
) -> None:
    client: FlaskClient = arena["app"].test_client()
    alice, bob, boss = (arena["tokens"][n] for n in ("alice", "bob", "boss"))
    bot, other, third = bots
    code = code_of(arena, "alice", bot.address)

    # A first attempt without the code is refused, says the code, and stores nothing.
    status, body = call(client, "POST", "/api/v1/bots", alice, {"name": "mine", "address": bot.address})
    assert status == 422 and body["error"]["code"] == "claim_required", body
    assert body["error"]["details"] == {"claim": code, "address": bot.address}
    assert f"--claim {code}" in body["error"]["message"] and "TONK_CLAIM" in body["error"]["message"]
    assert bot_names(arena["url"]) == []
    # The code can also be asked for first; it is the same, and only for its owner.
    status, body = call(client, "POST", "/api/v1/claims", alice, {"address": bot.address})
    assert status == 200 and body["claim"] == {"address": bot.address, "code": code}
    assert code.startswith(CLAIM_PREFIX)
    assert call(client, "POST", "/api/v1/claims", None, {"address": bot.address})[0] == 401
    assert call(client, "POST", "/api/v1/claims", alice, {"address": "127.0.0.1"})[0] == 400

    # Served with it (among other arenas' codes), the bot is registered.
    bot.servicer.info.claim = f"tonk-claim-of-another-arena {code}"
    status, body = call(client, "POST", "/api/v1/bots", alice, {"name": "mine", "address": bot.address})
    assert status == 201, body

    # Bob copies the address under a new name: refused, as any bot not returning his code is.
    status, body = call(client, "POST", "/api/v1/bots", bob, {"name": "copycat", "address": bot.address})
    assert status == 422 and body["error"]["code"] == "claim_required", body
    # Bob's bot returning Alice's code (read off her bot's GetInfo) proves nothing for Bob.
    other.servicer.info.claim = code_of(arena, "alice", other.address)
    status, body = call(client, "POST", "/api/v1/bots", bob, {"name": "bobs", "address": other.address})
    assert status == 422 and body["error"]["code"] == "claim_required"
    assert "another claim code" in body["error"]["message"]
    # Alice cannot point her bot at Bob's address by an update either.
    other.servicer.info.claim = code_of(arena, "bob", other.address)
    assert call(client, "POST", "/api/v1/bots", bob, {"name": "bobs", "address": other.address})[0] == 201
    status, body = call(client, "PUT", "/api/v1/bots/mine", alice, {"address": other.address})
    assert status == 422 and body["error"]["code"] == "claim_required"
    # Even if the bot there returned her code too (she runs it with Bob): one server, one owner.
    both = (code_of(arena, "bob", other.address), code_of(arena, "alice", other.address))
    other.servicer.info.claim = " ".join(both)
    status, body = call(client, "PUT", "/api/v1/bots/mine", alice, {"address": other.address})
    assert status == 409 and body["error"]["code"] == "address_taken"
    # An operator is trusted: no claim needed.
    assert call(client, "POST", "/api/v1/bots", boss, {"name": "house", "address": third.address})[0] == 201
    assert bot_names(arena["url"]) == ["bobs", "house", "mine"]


@pytest.mark.slow
def test_allow_listed_addresses_need_no_claim_unless_asked(url: str, bots: list[RunningServer]) -> None:
    """The operator's own network (TONK_ALLOWED_BOT_HOSTS: tonk demo, compose) is exempt by
    default: existing flows keep working. A public address always needs the claim."""
    from arena.bots.claims import ClaimRequiredError
    from arena.bots.owners import create_owner
    from arena.bots.registry import check_served_bot, register_bot
    from arena.store.db import dispose_engines, session_scope

    settings = Settings(database_url=url, allowed_bot_hosts=("127.0.0.1",), decision_deadline_ms=1000)
    try:
        with session_scope(url) as session:
            owner, _token = create_owner(session, "carol")
            register_bot(session, owner, "carols", bots[0].address, settings=settings)
        # check_served_bot with a claim asked: the refusal comes at GetInfo, before any match.
        with pytest.raises(ClaimRequiredError, match="returned no claim code"):
            check_served_bot(bots[1].address, settings, claim="tonk-claim-0")
    finally:
        dispose_engines()
    assert bot_names(url) == ["carols"]


def test_a_bot_serves_its_claim_from_the_flag_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import grpc

    from sdk.protocol import bot_pb2_grpc

    monkeypatch.setenv("TONK_CLAIM", " tonk-claim-from-env ")
    servers = [start_server(RandomBot), start_server(RandomBot, claim="tonk-claim-flag")]
    try:
        claims = []
        for server in servers:
            with grpc.insecure_channel(server.address) as channel:
                reply = bot_pb2_grpc.BotServiceStub(channel).GetInfo(pb.GetInfoRequest(), timeout=5)
                claims.append(reply.claim)
    finally:
        for server in servers:
            server.stop(0)
    assert claims == ["tonk-claim-from-env", "tonk-claim-flag"]


# -- privacy ---------------------------------------------------------------------------------


def test_a_bots_address_is_shown_only_to_its_owner_and_operators(arena: dict[str, Any]) -> None:
    from arena.bots.owners import authenticate
    from arena.bots.registry import register_bot
    from arena.store.db import session_scope

    app: Flask = arena["app"]
    tokens = arena["tokens"]
    address = "127.0.0.1:50999"
    with session_scope(arena["url"]) as session:
        alice = authenticate(session, tokens["alice"])
        register_bot(session, alice, "secretive", address, settings=app.config["SETTINGS"], check=False)
    client = app.test_client()
    for who, sees in ((None, False), ("bob", False), ("alice", True), ("boss", True)):
        headers = {"Authorization": f"Bearer {tokens[who]}"} if who else {}
        api = client.get("/api/v1/bots/secretive", headers=headers)
        assert api.status_code == 200
        bot = api.get_json()["bot"]
        assert ("address" in bot) is sees and all(("address" in v) is sees for v in bot["versions"]), who
        assert (address in api.get_data(as_text=True)) is sees, who
        page = client.get("/bots/secretive", headers=headers)
        assert page.status_code == 200 and (address in page.get_data(as_text=True)) is sees, who
    # A wrong token is refused rather than quietly treated as nobody.
    wrong = {"Authorization": "Bearer tonk_nope"}
    assert client.get("/api/v1/bots/secretive", headers=wrong).status_code == 401
    assert address not in client.get("/api/v1/bots").get_data(as_text=True)


def test_fault_reasons_are_stored_without_addresses() -> None:
    reason = "Decide: cannot reach the bot at bots.example.org:50051 (93.184.216.34:50051): refused"
    assert redact_addresses(reason, ["bots.example.org:50051"]) == (
        "Decide: cannot reach the bot at <address> (<address>): refused"
    )
    assert redact_addresses("at [2001:db8::7]:50051 and 10.0.0.1", []) == "at <address> and <address>"


@pytest.mark.slow
def test_tonk_submit_prints_the_claim_code_and_succeeds_once_the_bot_serves_it(
    arena: dict[str, Any], bots: list[RunningServer], capsys: pytest.CaptureFixture[str]
) -> None:
    """The real dashboard on a loopback port, the real `tonk submit`."""
    from werkzeug.serving import make_server

    from sdk.cli import main

    server = make_server("127.0.0.1", 0, arena["app"], threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    bot = bots[0]
    code = code_of(arena, "alice", bot.address)
    base = ["--arena", f"http://127.0.0.1:{server.server_port}", "--token", arena["tokens"]["alice"]]
    try:
        assert main(["submit", "--name", "claimed", "--address", bot.address, *base]) == 1
        err = capsys.readouterr().err
        assert "refused (422 claim_required)" in err
        assert f"your claim code for {bot.address}: {code}" in err and f"tonk serve BOT --claim {code}" in err
        assert main(["submit", "--name", "claimed", "--address", bot.address, "--show-claim", *base]) == 0
        assert capsys.readouterr().out.strip() == code
        bot.servicer.info.claim = code
        assert main(["submit", "--name", "claimed", "--address", bot.address, *base]) == 0
        assert "registered bot 'claimed' (version 1)" in capsys.readouterr().out
    finally:
        server.shutdown()
        thread.join(10)


@pytest.mark.parametrize(
    ("address", "allowed", "resolved", "allow_listed"),
    [
        ("8.8.8.8:50051", (), [], False),  # a public IP literal
        ("bots.example.org:50051", (), ["93.184.216.34"], False),  # a public name
        ("127.0.0.1:50051", ("127.0.0.1",), [], True),  # an internal IP the operator allows
        ("bot-random:50051", ("bot-random",), [], True),  # a name the operator allows
        ("inside.example.org:50051", ("10.0.0.0/8",), ["10.1.2.3"], True),  # resolves inside, allowed
        ("8.8.8.8:50051", ("8.8.8.0/24",), [], False),  # public stays public, even if listed
    ],
)
def test_which_addresses_need_a_claim(
    address: str, allowed: tuple[str, ...], resolved: list[str], allow_listed: bool, sqlite_url: str
) -> None:
    from arena.bots.addresses import pin_address
    from arena.bots.claims import required_claim
    from arena.store.models import Owner

    normalised, target = pin_address(address, allowed, resolver=lambda host: resolved)
    assert target.allow_listed is allow_listed
    owner, operator = Owner(id=7, name="ann", is_operator=False), Owner(id=8, name="op", is_operator=True)
    plain = Settings(allowed_bot_hosts=allowed)
    strict = Settings(allowed_bot_hosts=allowed, claim_allowed_hosts=True)
    from arena.store.db import dispose_engines, session_scope
    from arena.store.secrets import arena_secret

    with session_scope(sqlite_url) as session:
        code = claim_code(arena_secret(session, "claim"), 7, normalised)
        expected = None if allow_listed else code
        assert required_claim(session, owner, normalised, target, plain) == expected
        assert required_claim(session, owner, normalised, target, strict) == code
        assert required_claim(session, operator, normalised, target, strict) is None
    dispose_engines()
