"""Fixtures of the link tests: a real gateway over a fresh store, connected clients, and a
hand-made connection (``raw``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.link import Arena, Client, RawLink, link_player, welcomed
from sqlalchemy import select

from arena.bots.owners import create_owner
from arena.config import Settings
from arena.link import directory, link_service
from arena.link.gateway import Gateway, GatewayThread
from arena.store.db import session_scope
from arena.store.models import Bot, BotVersion, Owner


@pytest.fixture
def arena(sqlite_url: str) -> Iterator[Arena]:
    tokens = {}
    with session_scope(sqlite_url) as session:
        for name in ("alice", "bob"):
            _owner, tokens[name] = create_owner(session, name)
        owner = session.scalars(select(Owner).where(Owner.name == "bob")).one()
        dialled = Bot(name="dialled", owner=owner, address="bots.example.org:50051", status="active")
        dialled.versions.append(BotVersion(number=1, address="bots.example.org:50051", info={}))
        session.add(dialled)
    settings = Settings(database_url=sqlite_url, decision_deadline_ms=2000)
    running = GatewayThread(Gateway(settings, max_connections_per_owner=3))
    gateway = running.start()
    gateway.holdings.started -= directory.GATEWAY_LEASE_S  # as if up a while (see the fresh gateway test)
    try:
        yield Arena(sqlite_url, gateway, tokens)
    finally:
        running.stop()


@pytest.fixture
def clients() -> Iterator[list[Client]]:
    made: list[Client] = []
    yield made
    for client in made:
        client.stop()


@pytest.fixture
def raw(arena: Arena, clients: list[Client]) -> Iterator[RawLink]:
    """A hand-made connection of a registered bot, welcomed, next to a well-behaved bot."""
    clients.append(Client(arena, "bob", "bystander").wait())
    link = RawLink(arena.address, arena.tokens["alice"])
    link.hello("rawbot")
    welcome = welcomed(link)
    assert welcome.registered and welcome.limits.max_message_bytes == link_service.MAX_MESSAGE_BYTES
    yield link
    link.close()
    # The other bot never noticed.
    assert link_player(arena, "bystander").describe()["name"] == "random"
