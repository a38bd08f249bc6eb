"""A connected bot's life after its first connection (issue #14), over real sockets with a
real gateway: another build (other GetInfo) becomes a new version, checked again, and the
matches claimed from then on are its; the old build's connections step aside; retiring the
bot ends its connections and refuses new ones. Fixtures: tests/arena/link/conftest.py;
helpers: tests/helpers/link.py."""

from __future__ import annotations

from typing import Any

import grpc
from helpers.link import Arena, Client, RawLink, bot_id, capacity, decision, link_player, wait_until
from sqlalchemy import select

from arena.store.db import session_scope
from arena.store.models import Bot, BotVersion, Match, MatchSeat
from bots.random_bot import RandomBot
from sdk.link import LinkRefusedError


class NextBuild(RandomBot):
    version = "2.0.0"


def versions(arena: Arena, name: str) -> list[tuple[int, str]]:
    with session_scope(arena.url) as session:
        bot = session.scalars(select(Bot).where(Bot.name == name)).one()
        return [(v.number, v.info.get("version", "")) for v in bot.versions]


def refusal(client: Client) -> LinkRefusedError:
    """How the arena ended the client for good (its run() raised)."""
    client.thread.join(30)
    assert not client.thread.is_alive(), "the client is still connected"
    assert len(client.errors) == 1 and isinstance(client.errors[0], LinkRefusedError), client.errors
    return client.errors[0]


def test_the_same_build_reconnecting_is_the_same_version(arena: Arena, clients: list[Client]) -> None:
    first = Client(arena, "alice", "steady").wait()
    first.stop()
    again = Client(arena, "alice", "steady").wait()
    clients.append(again)
    assert versions(arena, "steady") == [(1, "1.0.0")]
    assert again.link.stats.calls == 1  # only its GetInfo: no admission check again


def test_another_build_is_checked_and_recorded_as_the_next_version(
    arena: Arena, clients: list[Client]
) -> None:
    from arena.runtime.jobs import play_match_job
    from arena.tournaments.lifecycle import create_tournament, start_tournament

    old = Client(arena, "alice", "evolving").wait()
    clients.append(Client(arena, "bob", "rival").wait())
    ids = [bot_id(arena, "evolving"), bot_id(arena, "rival")]
    with session_scope(arena.url) as session:  # entered as version 1
        tournament = create_tournament(
            session, name="t", bot_ids=ids, table_sizes=[2], deals_per_table=1, hands_per_match=1
        )
        start_tournament(session, tournament.id)
        match_ids = session.scalars(select(Match.id).where(Match.tournament_id == tournament.id)).all()

    new = Client(arena, "alice", "evolving", bot=NextBuild, capacity=3).wait()
    clients.append(new)
    assert versions(arena, "evolving") == [(1, "1.0.0"), (2, "2.0.0")]
    assert new.link.stats.calls > 10  # the admission check ran again over the new connection
    # The old build takes no new matches and goes as soon as it plays none: for good, so it
    # does not come back as yet another version.
    error = refusal(old)
    assert error.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "now version 2" in error.details and "played version 1" in error.details
    assert capacity(arena, ids[0]) == 3

    assert play_match_job(match_ids[0], arena.url) == "done"
    with session_scope(arena.url) as session:
        seat_version = session.scalar(
            select(BotVersion.number)
            .join(MatchSeat, MatchSeat.bot_version_id == BotVersion.id)
            .where(MatchSeat.match_id == match_ids[0], MatchSeat.bot_id == ids[0])
        )
        rival = session.scalar(
            select(BotVersion.number)
            .join(MatchSeat, MatchSeat.bot_version_id == BotVersion.id)
            .where(MatchSeat.match_id == match_ids[0], MatchSeat.bot_id == ids[1])
        )
    assert seat_version == 2 and rival == 1  # played by the build connected when it was claimed


def test_the_old_build_plays_its_match_to_the_end_before_it_goes(arena: Arena, clients: list[Client]) -> None:
    from sdk.bot import MatchInfo, MatchSummary
    from sdk.rules import STANDARD

    old = Client(arena, "alice", "handover").wait()
    seat = link_player(arena, "handover")  # a match seat, pinned to the old build's connection
    seat.match_start(MatchInfo("m", 0, ("handover", "x"), STANDARD, 1, 0, 1000, 0))
    clients.append(Client(arena, "alice", "handover", bot=NextBuild).wait())
    calls = old.link.stats.calls
    seat.act(decision())  # still the old build's match: it answers, nobody is charged
    assert old.link.stats.calls == calls + 1 and old.link.connected.is_set()
    assert link_player(arena, "handover").describe()["version"] == "2.0.0"  # a new seat: the new build
    assert old.link.stats.calls == calls + 1
    seat.match_end(MatchSummary("m", (0, 0)))
    error = refusal(old)  # its last match over: it goes at the next heartbeat
    assert error.code == grpc.StatusCode.FAILED_PRECONDITION and "now version 2" in error.details


def test_a_new_build_that_fails_the_check_is_refused_and_recorded_nowhere(
    arena: Arena, clients: list[Client]
) -> None:
    class Broken(RandomBot):
        version = "3.0.0-broken"

        def act(self, obs: Any) -> int:
            raise RuntimeError("regressed")

    good = Client(arena, "alice", "careful").wait()
    clients.append(good)
    broken = Client(arena, "alice", "careful", bot=Broken)
    error = refusal(broken)
    assert error.code == grpc.StatusCode.FAILED_PRECONDITION and "regressed" in error.details
    assert versions(arena, "careful") == [(1, "1.0.0")]
    assert good.link.connected.is_set() and capacity(arena, bot_id(arena, "careful")) == 2


def test_retiring_a_connected_bot_ends_its_connections_and_refuses_new_ones(
    arena: Arena, clients: list[Client]
) -> None:
    from dashboard import create_app

    one = Client(arena, "alice", "leaving", capacity=1).wait()
    two = Client(arena, "alice", "leaving", capacity=1).wait()
    clients.append(Client(arena, "bob", "staying").wait())
    web = create_app({"DATABASE_URL": arena.url, "TESTING": True}).test_client()
    answer = web.delete("/api/v1/bots/leaving", headers={"Authorization": f"Bearer {arena.tokens['alice']}"})
    assert answer.status_code == 200 and answer.get_json()["bot"]["status"] == "retired"

    for client in (one, two):  # the gateway learns it from the store on its heartbeat
        error = refusal(client)
        assert error.code == grpc.StatusCode.FAILED_PRECONDITION and "is retired" in error.details
    wait_until(lambda: capacity(arena, bot_id(arena, "leaving")) == 0)
    link = RawLink(arena.address, arena.tokens["alice"])
    try:
        link.hello("leaving")
        error = link.closed_with()
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "'leaving' is retired" in (error.details() or "")
    finally:
        link.close()
    assert capacity(arena, bot_id(arena, "staying")) == 2  # another bot plays on

    page = web.get("/bots/leaving").get_data(as_text=True)
    assert "Retired: it enters no new tournament and may not connect" in page
    assert "<code>tonk restore leaving</code>" in page
    # Its owner brings it back: it may connect again, as the version it was (same build).
    answer = web.post(
        "/api/v1/bots/leaving/restore", headers={"Authorization": f"Bearer {arena.tokens['alice']}"}
    )
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["bot"]["status"] == "active" and answer.get_json()["bot"]["connected"] is True
    back = Client(arena, "alice", "leaving", capacity=1).wait()
    clients.append(back)
    assert back.link.stats.calls == 1  # its GetInfo only: the same build is not checked again
    assert versions(arena, "leaving") == [(1, "1.0.0")]
    assert capacity(arena, bot_id(arena, "leaving")) == 1
    assert "tonk restore" not in web.get("/bots/leaving").get_data(as_text=True)


def test_a_retired_bot_is_refused_before_any_call(arena: Arena) -> None:
    from arena.bots.registry import retire_bot
    from arena.store.models import Owner

    owner = "alice"
    Client(arena, owner, "shelved", capacity=1).wait().stop()
    with session_scope(arena.url) as session:
        retire_bot(session, session.scalars(select(Owner).where(Owner.name == owner)).one(), "shelved")
    link = RawLink(arena.address, arena.tokens[owner])
    try:
        link.hello("shelved")
        item = link.next()
        assert isinstance(item, grpc.RpcError), item  # no GetInfo, no check: refused at once
        assert item.code() == grpc.StatusCode.FAILED_PRECONDITION and "retired" in (item.details() or "")
    finally:
        link.close()
