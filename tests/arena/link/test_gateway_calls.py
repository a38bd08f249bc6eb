"""Calls relayed through the gateway with the LinkPlayer the referee uses: each reaches its
bot, faults are those of a dialled bot, capacities add up, and an offline bot's grace."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import pytest
from helpers.arena import charged_faults
from helpers.link import (
    Arena,
    Client,
    RawLink,
    bot_id,
    capacity,
    decision,
    link_player,
    wait_until,
)
from sqlalchemy import delete, func, select

from arena.link import connection as connection_module
from arena.link import directory
from arena.link.player import LinkPlayer, decide_call
from arena.link.relay_client import RelayTransport, Routes
from arena.play.offline import must_wait
from arena.store.db import session_scope
from arena.store.models import Bot, LinkConnection, Match
from bots.random_bot import RandomBot
from sdk.bot import MatchInfo
from sdk.protocol import link_pb2 as lpb
from sdk.referee import FaultKind, LocalPlayer, PlayerFaultError, RefereeConfig, play_match
from sdk.rules import STANDARD

# -- relaying -------------------------------------------------------------------------------


def test_a_worker_needs_the_gateway_secret(arena: Arena, clients: list[Client]) -> None:
    clients.append(Client(arena, "alice", "secretive").wait())
    from arena.link.relay_client import GatewayRelayError

    transport = RelayTransport(bot_id(arena, "secretive"), Routes(arena.url, "wrong"))
    # The stored secret is used when the gateway made its own; a wrong configured one is not.
    good = LinkPlayer("secretive", transport)
    assert good.describe()["name"] == "random"
    gw_id = arena.gateway.id
    with session_scope(arena.url) as session:
        from arena.store.models import LinkGateway

        session.get(LinkGateway, gw_id).secret = None  # type: ignore[union-attr]
    bad = LinkPlayer("secretive", RelayTransport(bot_id(arena, "secretive"), Routes(arena.url, "wrong")))
    with pytest.raises(GatewayRelayError, match="UNAUTHENTICATED"):
        bad.act(decision())


def test_calls_reach_only_the_bot_they_are_for(arena: Arena, clients: list[Client]) -> None:
    class Named(RandomBot):
        name = "second"

    clients.append(Client(arena, "alice", "first").wait())
    clients.append(Client(arena, "alice", "second", bot=Named).wait())
    assert link_player(arena, "first").describe()["name"] == "random"
    assert link_player(arena, "second").describe()["name"] == "second"


def test_faults_through_the_link_are_those_of_a_dialled_bot(arena: Arena, clients: list[Client]) -> None:
    class Slow(RandomBot):
        match_id = ""

        def start_match(self, info: MatchInfo) -> None:
            self.match_id = info.match_id

        def act(self, obs: Any) -> Any:
            if self.match_id == "faulty" and obs.hand_index == 1:
                time.sleep(0.3)
            if self.match_id == "faulty" and obs.hand_index >= 2:
                raise ValueError("bad hand")
            return super().act(obs)

    clients.append(Client(arena, "alice", "slowpoke", bot=Slow).wait())
    player = link_player(arena, "slowpoke")
    config = RefereeConfig(decision_deadline_ms=150, time_bank_ms=0, max_faults=10)
    # The referee's clock stopped: the in-process RandomBot takes 0 ms however busy the machine
    # (at 150 ms of real time it could time out first and end hand 1 before the slow bot's turn),
    # and the link seat's TIMEOUT can only be the gateway's verdict, the dialled bot's way.
    result = play_match(
        [player, LocalPlayer(RandomBot)], 11, 8, match_id="faulty", config=config, clock=lambda: 0
    )
    kinds = {(f.hand_index, f.kind) for f in result.faults if f.seat == 0}
    assert (1, FaultKind.TIMEOUT) in kinds
    crashes = [f for f in result.faults if f.kind is FaultKind.CRASH]
    assert crashes and all(f.hand_index >= 2 for f in crashes)
    assert "INTERNAL" in crashes[0].reason and "bad hand" in crashes[0].reason
    assert {f.kind for f in result.faults} <= {FaultKind.TIMEOUT, FaultKind.CRASH}


def test_a_bot_that_is_not_connected_is_unreachable(arena: Arena, clients: list[Client]) -> None:
    client = Client(arena, "alice", "gone").wait()
    player = link_player(arena, "gone")
    player.match_start(MatchInfo("m", 0, ("gone", "x"), STANDARD, 1, 0, 1000, 0))
    client.stop()
    deadline = time.monotonic() + 10
    with pytest.raises(PlayerFaultError) as caught:
        while time.monotonic() < deadline:  # until the gateway has seen the stream end
            player.act(decision())
            time.sleep(0.1)
    assert caught.value.kind is FaultKind.UNREACHABLE


def test_capacities_add_up_and_sessions_spread(arena: Arena, clients: list[Client]) -> None:
    a = Client(arena, "alice", "twin", capacity=2).wait()
    b = Client(arena, "alice", "twin", capacity=3).wait()
    clients += [a, b]
    twin = bot_id(arena, "twin")
    with session_scope(arena.url) as session:
        assert directory.connected_capacity(session, twin) == 5
        assert directory.link_status(session, [twin])[twin].connections == 2
    before = (a.link.stats.calls, b.link.stats.calls)
    for _ in range(5):  # five match seats: the gateway fills by capacity
        link_player(arena, "twin").match_start(MatchInfo("m", 0, ("twin", "x"), STANDARD, 1, 0, 1000, 0))
    assert a.link.stats.calls - before[0] == 2 and b.link.stats.calls - before[1] == 3
    b.stop()
    wait_until(lambda: capacity(arena, twin) == 2)
    a.stop()
    wait_until(lambda: capacity(arena, twin) == 0)


def test_a_match_with_an_offline_bot_waits_within_its_grace(arena: Arena, clients: list[Client]) -> None:
    import datetime as dt

    from arena.tournaments.lifecycle import create_tournament

    client = Client(arena, "alice", "sleepy").wait()
    clients.append(Client(arena, "bob", "awake").wait())
    with session_scope(arena.url) as session:
        ids = [bot_id(arena, "sleepy"), bot_id(arena, "awake")]
        tournament = create_tournament(
            session, name="t", bot_ids=ids, table_sizes=[2], deals_per_table=1, hands_per_match=1,
            config={"offline_grace_s": 30},
        )
        match_id = session.scalars(select(Match.id).where(Match.tournament_id == tournament.id)).first()
        assert not must_wait(session, match_id, 60)  # both online: play
    client.stop()
    wait_until(lambda: capacity(arena, ids[0]) == 0)
    with session_scope(arena.url) as session:
        assert must_wait(session, match_id, 60)  # starts the grace period
        since = session.get(Match, match_id).waiting_since  # type: ignore[union-attr]
        assert since is not None
        later = since.replace(tzinfo=dt.UTC) + dt.timedelta(seconds=31)
        assert not must_wait(session, match_id, 60, now=later)  # grace over: play and fault
    with session_scope(arena.url) as session:
        from arena.play.lifecycle import MatchLife
        from arena.tournaments.lifecycle import start_tournament

        start_tournament(session, tournament.id)
        assert MatchLife(arena.url, match_id, "here:1").claim(session) is None
        # Claimed: a later wait (e.g. after its gateway died) gets its whole grace again.
        assert session.get(Match, match_id).waiting_since is None  # type: ignore[union-attr]


def test_a_bot_gone_before_the_store_knows_waits_and_is_charged_only_after_its_grace(
    arena: Arena, clients: list[Client]
) -> None:
    """The store lags a gateway by a moment: a bot killed just now still has its row, so a
    worker claims its match. StartMatch finds it gone: within the grace that is a wait (the
    match is handed back, nothing recorded); once the grace is over it is the bot's fault."""
    import datetime as dt

    from arena.play.lifecycle import Outcome
    from arena.runtime.jobs import play_match_job
    from arena.store.models import FaultRecord
    from arena.tournaments.lifecycle import create_tournament, start_tournament

    client = Client(arena, "alice", "flaky").wait()
    clients.append(Client(arena, "bob", "steady").wait())
    ids = [bot_id(arena, "flaky"), bot_id(arena, "steady")]
    with session_scope(arena.url) as session:
        tournament = create_tournament(
            session, name="t", bot_ids=ids, table_sizes=[2], deals_per_table=1, hands_per_match=1,
            config={"offline_grace_s": 30},
        )
        start_tournament(session, tournament.id)
        match_id = session.scalars(select(Match.id).where(Match.tournament_id == tournament.id)).first()
        owner = session.scalars(select(Bot.owner_id).where(Bot.id == ids[0])).one()
    client.stop()
    wait_until(lambda: capacity(arena, ids[0]) == 0)
    with session_scope(arena.url) as session:  # the store still says it is connected here
        directory.add_connection(session, "stale", arena.gateway.id, ids[0], owner, 1, "gone")

    assert play_match_job(match_id, arena.url) == Outcome.WAITING
    with session_scope(arena.url) as session:
        match = session.get(Match, match_id)
        assert match is not None and match.status == "pending" and match.waiting_since is not None
        assert session.scalar(select(func.count(FaultRecord.id))) == 0
        match.waiting_since = match.waiting_since - dt.timedelta(seconds=31)  # its grace is over

    assert play_match_job(match_id, arena.url) == "done"
    with session_scope(arena.url) as session:
        faults = session.execute(charged_faults(FaultRecord.bot_id, FaultRecord.kind)).all()
        assert faults and set(faults) == {(ids[0], "unreachable")}


def test_a_connection_row_that_outlived_its_connection_is_pruned(arena: Arena, clients: list[Client]) -> None:
    """However a connection's removal was lost (a cancelled task, a crash between two
    writes), the gateway's heartbeat deletes rows of its own that it does not hold open,
    and leaves those it holds and other gateways' alone."""
    import datetime as dt

    from arena.store.models import LinkGateway, utcnow

    clients.append(Client(arena, "alice", "alive").wait())
    alive = bot_id(arena, "alive")
    with session_scope(arena.url) as session:
        owner = session.scalars(select(Bot.owner_id).where(Bot.id == alive)).one()
        now = utcnow()
        session.add(LinkGateway(id="elsewhere", address="10.0.0.9:1", started_at=now, heartbeat_at=now))
        session.flush()
        directory.add_connection(session, "ghost", arena.gateway.id, alive, owner, 3, "gone")
        directory.add_connection(session, "theirs", "elsewhere", alive, owner, 1, "far")
        old = utcnow() - dt.timedelta(seconds=60)
        for row in session.scalars(select(LinkConnection).where(LinkConnection.id.in_(["ghost", "theirs"]))):
            row.connected_at = old
    wait_until(lambda: capacity(arena, alive) == 2 + 1)  # the ghost's 3 gone: ours 2, theirs 1
    with session_scope(arena.url) as session:
        ids = set(session.scalars(select(LinkConnection.id)))
        assert "ghost" not in ids and "theirs" in ids and len(ids) == 2
        session.execute(delete(LinkConnection).where(LinkConnection.id == "theirs"))
        session.execute(delete(LinkGateway).where(LinkGateway.id == "elsewhere"))


def test_decide_calls_are_built_by_concatenation_like_the_message() -> None:
    request = b"\x0a\x01m"
    built = lpb.LinkCall.FromString(decide_call(request, 1500))
    assert built.deadline_ms == 1500 and built.decide.match_id == "m" and built.call_id == 0


def test_a_fresh_gateway_does_not_charge_a_bot_that_has_not_reconnected_yet(
    arena: Arena, clients: list[Client]
) -> None:
    from arena.link.player import GatewayLostError

    client = Client(arena, "alice", "returning").wait()
    player = link_player(arena, "returning")
    player.match_start(MatchInfo("m", 0, ("returning", "x"), STANDARD, 1, 0, 1000, 0))
    client.stop()
    wait_until(lambda: capacity(arena, bot_id(arena, "returning")) == 0)
    arena.gateway.holdings.started = time.monotonic()  # as if it had just been restarted
    with pytest.raises(PlayerFaultError) as caught:  # it had reconnected here: its own fault
        player.act(decision())
    assert caught.value.kind is FaultKind.UNREACHABLE
    arena.gateway.holdings.seen.clear()  # as if it had not reconnected since the restart
    transport = RelayTransport(bot_id(arena, "returning"), Routes(arena.url))
    gw = arena.gateway  # where the worker last saw the bot, as a worker's cached route would say
    transport._route = directory.GatewayRoute(gw.id, gw.advertise, gw.secret, 1)
    with pytest.raises(GatewayLostError, match="just started"):
        LinkPlayer("returning", transport).act(decision())


def test_the_dashboard_shows_how_a_connected_bot_plays(arena: Arena, clients: list[Client]) -> None:
    from dashboard import create_app

    app = create_app({"DATABASE_URL": arena.url, "TESTING": True, "CACHE_REFRESH_SECONDS": 0.0})
    web = app.test_client()
    client = Client(arena, "alice", "shown", capacity=3).wait()
    detail = web.get("/api/v1/bots/shown").get_json()["bot"]
    assert detail["plays"] == "connected"
    assert detail["link"] == {"online": True, "connections": 1, "capacity": 3}
    page = web.get("/bots/shown").get_data(as_text=True)
    assert "connected now" in page and "capacity 3" in page
    assert web.get("/api/v1/bots/dialled").get_json()["bot"]["plays"] == "dialled"
    board = {r["bot"]: r for r in web.get("/api/v1/leaderboard").get_json()["leaderboard"]}
    assert board["shown"]["connected"] and board["shown"]["online"]
    client.stop()
    wait_until(lambda: capacity(arena, bot_id(arena, "shown")) == 0)
    board = {r["bot"]: r for r in web.get("/api/v1/leaderboard").get_json()["leaderboard"]}
    assert board["shown"]["online"] is False and board["dialled"]["online"] is None
    assert "offline" in web.get("/").get_data(as_text=True)
    assert "offline" in web.get("/bots/shown").get_data(as_text=True)


def test_calls_in_flight_per_connection_are_limited(
    raw: RawLink, arena: Arena, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection_module, "MAX_CALLS_IN_FLIGHT", 2)
    request = decision()
    slow = dataclasses.replace(request, deadline_ms=1500)
    faults: list[PlayerFaultError] = []

    def ask() -> None:  # the raw bot never answers
        try:
            link_player(arena, "rawbot").act(slow)
        except PlayerFaultError as exc:
            faults.append(exc)

    callers = [threading.Thread(target=ask) for _ in range(2)]
    for t in callers:
        t.start()
    wait_until(lambda: raw.received.qsize() >= 2)  # both calls are out, unanswered
    with pytest.raises(PlayerFaultError) as third:
        link_player(arena, "rawbot").act(request)
    assert third.value.kind is FaultKind.UNREACHABLE and "2 calls unanswered" in third.value.reason
    for t in callers:
        t.join()
    assert [f.kind for f in faults] == [FaultKind.TIMEOUT, FaultKind.TIMEOUT]


def test_tonk_serve_connect_fails_clearly(
    arena: Arena, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdk.cli import main as tonk

    monkeypatch.delenv("TONK_TOKEN", raising=False)
    monkeypatch.delenv("TONK_ARENA", raising=False)
    assert tonk(["serve", "random", "--connect", "--link", arena.address, "--name", "x1"]) == 2
    assert "--token" in capsys.readouterr().err
    code = tonk(["serve", "random", "--connect", "--link", arena.address, "--token", "wrong", "--name", "x1"])
    assert code == 1
    assert "UNAUTHENTICATED" in capsys.readouterr().err
    code = tonk(["serve", "random", "--connect", "--arena", "http://127.0.0.1:9", "--token", "t"])
    assert code == 1 and "cannot read" in capsys.readouterr().err


