"""House bots served on loopback (as real processes and in-process), and registered once."""

from __future__ import annotations

import dataclasses
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from arena.bots.hosting import HOUSE_OWNER, HostedBots, HostingError, ensure_house_bots, house_bots
from arena.bots.registry import register_bot
from arena.config import Settings
from arena.play.plan import SeatPlan, make_seat_player
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Bot, BotVersion, Owner
from sdk.grpc_player import GrpcPlayer
from sdk.health import check_health
from sdk.protocol import PROTOCOL_VERSION
from sdk.referee import LocalPlayer, play_match


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); HostedBots.stop() waits for its children, so none remain.
    return True


def test_house_bots_include_the_core_three() -> None:
    bots = house_bots()
    assert {"random", "greedy", "heuristic"} <= set(bots)
    assert bots["greedy"] == "bots.greedy:GreedyBot"


def test_house_bots_as_processes_play_over_grpc() -> None:
    wanted = {"random": "bots.random_bot:RandomBot", "greedy": "bots.greedy:GreedyBot"}
    hosted = HostedBots(wanted, mode="subprocess")
    with hosted as addresses:
        assert set(addresses) == set(wanted)
        pids = {name: hosted.pid(name) for name in wanted}
        for name, address in addresses.items():
            assert address.startswith("127.0.0.1:")
            assert check_health(address)
            info = GrpcPlayer(address).describe()
            assert (info["name"], info["protocol_version"]) == (name, PROTOCOL_VERSION)
        players = [GrpcPlayer(addresses["greedy"]), GrpcPlayer(addresses["random"])]
        result = play_match(players, seed=7, hands=3)
        for player in players:
            player.close()
        assert result.faults == [] and len(result.hands) == 3
    for name, address in zip(wanted, [addresses[n] for n in wanted], strict=True):
        pid = pids[name]
        assert pid is not None and not _alive(pid), f"{name} still running"
        assert not check_health(address, timeout_s=0.5)
    assert hosted.addresses == {}
    hosted.stop()  # twice is harmless


def test_in_process_servers() -> None:
    with HostedBots({"random": "random"}, mode="thread") as addresses:
        assert check_health(addresses["random"])
    assert not check_health(addresses["random"], timeout_s=0.5)


def test_a_bot_that_cannot_start_is_reported_and_nothing_is_left_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(HostingError, match="nope"):  # refused before any process starts
        HostedBots({"nope": "bots.nope:Nope"}).start()

    # A class that imports fine but dies when the bot process builds it.
    (tmp_path / "fragile_bot.py").write_text(
        textwrap.dedent(
            """
            from sdk.bot import Bot

            class FragileBot(Bot):
                name = "fragile"

                def __init__(self):
                    raise RuntimeError("fragile bot cannot start")
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    hosted = HostedBots({"random": "random", "fragile": "fragile_bot:FragileBot"})
    with pytest.raises(HostingError, match="fragile bot cannot start"):
        hosted.start()
    assert hosted.addresses == {} and hosted.pid("random") is None


def test_invalid_mode() -> None:
    with pytest.raises(ValueError, match="mode"):
        HostedBots({}, mode="fork")  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> Iterator[str]:
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    yield url
    dispose_engines()


def test_ensure_house_bots_is_idempotent(db_url: str) -> None:
    settings = Settings(allowed_bot_hosts=("127.0.0.1",))
    with session_scope(db_url) as session:
        bots = ensure_house_bots(session, settings)
        assert [b.name for b in bots] == sorted(house_bots())
    with session_scope(db_url) as session:
        ensure_house_bots(session, settings)  # again: nothing new
        owners = list(session.scalars(select(Owner)))
        assert [(o.name, o.is_operator) for o in owners] == [(HOUSE_OWNER, True)]
        rows = list(session.scalars(select(Bot).order_by(Bot.name)))
        assert [(b.name, b.hosted, b.address, b.status) for b in rows] == [
            (name, path, None, "active") for name, path in sorted(house_bots().items())
        ]
        assert session.scalar(select(BotVersion).where(BotVersion.number > 1)) is None
        greedy = next(b for b in rows if b.name == "greedy")
        assert greedy.versions[0].info["name"] == "greedy"

        # Played in-process by default, or over gRPC when served, by the one seat factory.
        hosted = SeatPlan(greedy.id, greedy.versions[0].id, "greedy", None, greedy.hosted)
        assert isinstance(make_seat_player(hosted), LocalPlayer)
        with HostedBots({"greedy": greedy.hosted or ""}, mode="thread") as addresses:
            seat = dataclasses.replace(hosted, address=addresses["greedy"], served_here=True)
            player = make_seat_player(seat)
            assert isinstance(player, GrpcPlayer) and player.address == addresses["greedy"]
            player.close()
            remote = register_bot(session, owners[0], "served", addresses["greedy"], settings=settings)
            remote_seat = SeatPlan(remote.id, remote.versions[0].id, "served", remote.address, None)
            remote_player = make_seat_player(remote_seat, ("127.0.0.1",))
            assert isinstance(remote_player, GrpcPlayer), remote_player
            assert remote_player.address.startswith(addresses["greedy"])  # dialled at its checked IP
            remote_player.close()
