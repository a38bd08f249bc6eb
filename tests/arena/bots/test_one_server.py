"""Issue 29, points 3 and 4: claim codes are bound to their arena by its claim secret (and
rotatable), and one server has one owner whatever the address is spelled like, refused alike
whether or not another owner's bot is there. Real bots over gRPC, the real checks, SQLite
and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.bots.claims import AddressTakenError, ClaimRequiredError, claim_for
from arena.bots.owners import create_owner
from arena.bots.registry import register_bot
from arena.config import Settings
from arena.errors import ArenaError
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Owner
from arena.store.secrets import rotate_secret
from bots.random_bot import RandomBot
from sdk.server import RunningServer, start_server

#: Loopback bots are all a test can run: allow them, and ask them for claims as if public.
CLAIMED = {"allowed_bot_hosts": ("127.0.0.1", "localhost"), "claim_allowed_hosts": True}


@pytest.fixture
def bots() -> Iterator[list[RunningServer]]:
    servers = [start_server(RandomBot, claim="") for _ in range(3)]
    yield servers
    for server in servers:
        server.stop(0)


def owners(url: str, *names: str) -> list[Owner]:
    with session_scope(url) as session:
        return [create_owner(session, name)[0] for name in names]


def code(url: str, owner: Owner, address: str) -> str:
    with session_scope(url) as session:
        return claim_for(session, owner, address, Settings(database_url=url, **CLAIMED))["code"]


def register(url: str, owner: Owner, name: str, address: str, **settings: object) -> None:
    with session_scope(url) as session:
        register_bot(session, owner, name, address, settings=Settings(database_url=url, **settings))  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_claim_code_of_one_arena_is_worthless_in_another(
    db_url: str, tmp_path: Path, bots: list[RunningServer]
) -> None:
    other_url = f"sqlite:///{tmp_path}/other-arena.sqlite"
    try:
        (x_first,), (y_first,) = owners(db_url, "first"), owners(other_url, "first")
        assert x_first.id == y_first.id == 1  # the first owner of each arena
        bot = bots[0]
        x_code, y_code = code(db_url, x_first, bot.address), code(other_url, y_first, bot.address)
        assert x_code != y_code
        # The bot serves arena X's code: arena Y refuses it for its own first owner.
        bot.servicer.info.claim = x_code
        with pytest.raises(ClaimRequiredError, match="returned another claim code"):
            register(other_url, y_first, "copy", bot.address, **CLAIMED)
        register(db_url, x_first, "mine", bot.address, **CLAIMED)
        # Rotating X's claim secret voids its codes: a bot serving an old one is refused.
        second = bots[1]
        old = code(db_url, x_first, second.address)
        with session_scope(db_url) as session:
            rotate_secret(session, "claim")
        new = code(db_url, x_first, second.address)
        assert new != old
        second.servicer.info.claim = old
        with pytest.raises(ClaimRequiredError, match="returned another claim code"):
            register(db_url, x_first, "second", second.address, **CLAIMED)
        second.servicer.info.claim = new
        register(db_url, x_first, "second", second.address, **CLAIMED)
    finally:
        dispose_engines()


@pytest.mark.slow
def test_another_spelling_of_a_taken_server_is_refused(db_url: str, bots: list[RunningServer]) -> None:
    alice, bob = owners(db_url, "alice", "bob")
    allowed = {"allowed_bot_hosts": ("127.0.0.1", "localhost")}  # no claims asked
    bot = bots[0]
    port = bot.address.rsplit(":", 1)[1]
    try:
        register(db_url, alice, "alices", bot.address, **allowed)
        for spelling in (f"localhost:{port}", f"LOCALHOST:{port}", f"127.0.0.1:{port}"):
            with pytest.raises(AddressTakenError, match="reaches a server another owner's bot") as refused:
                register(db_url, bob, "bobs", spelling, **allowed)
            assert refused.value.status == 409 and "alice" not in str(refused.value)
        # A name resolving to it (DNS) is the same server too.
        with session_scope(db_url) as session, pytest.raises(AddressTakenError):
            register_bot(
                session,
                bob,
                "bobs",
                f"alias.example:{port}",
                settings=Settings(database_url=db_url, allowed_bot_hosts=("127.0.0.1",)),
                resolver=lambda host: ["127.0.0.1"],
            )
        # Alice herself may enter it again under another spelling; another port is another server.
        register(db_url, alice, "alices-too", f"localhost:{port}", **allowed)
        register(db_url, bob, "bobs", bots[1].address, **allowed)
    finally:
        dispose_engines()


def refusal(url: str, owner: Owner, address: str) -> tuple[int, str, str]:
    try:
        register(url, owner, "probe", address, **CLAIMED)
    except ArenaError as error:
        port = address.rsplit(":", 1)[1]
        said = str(error).replace(port, "P").replace(code(url, owner, address), "CODE")
        return error.status, error.code, said
    raise AssertionError(f"{address} was registered")


@pytest.mark.slow
def test_the_refusal_does_not_tell_whether_another_owner_is_there(
    db_url: str, bots: list[RunningServer]
) -> None:
    alice, bob = owners(db_url, "alice", "bob")
    taken, free = bots[0], bots[1]
    try:
        taken.servicer.info.claim = code(db_url, alice, taken.address)
        register(db_url, alice, "alices", taken.address, **CLAIMED)
        free.servicer.info.claim = code(db_url, alice, free.address)  # someone's, not Bob's
        assert refusal(db_url, bob, taken.address) == refusal(db_url, bob, free.address)
        assert refusal(db_url, bob, taken.address)[:2] == (422, "claim_required")
    finally:
        dispose_engines()


@pytest.mark.parametrize(
    ("one", "other", "same"),
    [
        ("localhost:5000", "127.0.0.1:5000", True),
        ("LOCALHOST:5000", "[::1]:5000", True),
        ("[::ffff:127.0.0.1]:5000", "127.0.0.2:5000", True),  # all loopback is one host
        ("0.0.0.0:5000", "localhost:5000", True),
        ("[::ffff:8.8.8.8]:5000", "8.8.8.8:5000", True),
        ("alias.example:5000", "93.184.216.34:5000", True),  # resolves there
        ("alias.example:5000", "alias.example:5001", False),  # another port
        ("8.8.8.8:5000", "8.8.4.4:5000", False),
    ],
)
def test_which_spellings_name_one_server(one: str, other: str, same: bool) -> None:
    from arena.bots.addresses import same_server_keys

    def resolver(host: str) -> list[str]:
        return {"localhost": ["127.0.0.1", "::1"], "alias.example": ["93.184.216.34"]}.get(host, [])

    (a, p), (b, q) = same_server_keys(one, resolver), same_server_keys(other, resolver)
    assert (p == q and bool(a & b)) is same


def test_tonk_owner_rotate_claims_changes_every_code(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sdk.cli import main

    (owner,) = owners(sqlite_url, "ann")
    before = code(sqlite_url, owner, "127.0.0.1:50051")
    monkeypatch.setenv("TONK_DATABASE_URL", sqlite_url)
    try:
        assert main(["owner", "rotate-claims"]) == 0
        assert "every claim code is new" in capsys.readouterr().err
        assert code(sqlite_url, owner, "127.0.0.1:50051") != before
    finally:
        dispose_engines()
