"""A link blip costs nothing (issue #27, point 7): a call mid-match that finds the bot's
connection gone waits a moment for the bot to connect again; back, the match is handed back
to be replayed (BotLinkLostError), never charged; not back, it faults as before, and only the
first call waits. Real bots connected through a real gateway. Fixtures: conftest.py here."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from helpers.link import Arena, Client, bot_id, capacity, decision, wait_until
from sqlalchemy import select, update

from arena.link.player import BotLinkLostError, LinkPlayer
from arena.link.relay_client import RelayTransport, Routes
from arena.play.offline import (
    RELINK_FREE_PER_BOT,
    RELINK_MAX_PER_MATCH,
    RELINK_WAIT_S,
    RELINK_WINDOW,
    relink_wait,
)
from arena.store.db import session_scope
from arena.store.models import RELINK_NOTICE_KIND, FaultRecord, Match, utcnow
from arena.tournaments.lifecycle import create_tournament
from sdk.referee import FaultKind, PlayerFaultError


class Watched:
    """A transport's ``relinked``, with an event set once the player has looked."""

    def __init__(self, transport: RelayTransport):
        self.transport = transport
        self.looked = threading.Event()

    def __call__(self) -> bool:
        self.looked.set()
        return self.transport.relinked()


def a_player(arena: Arena, name: str, wait_s: float) -> tuple[LinkPlayer, Watched]:
    transport = RelayTransport(bot_id(arena, name), Routes(arena.url))
    watched = Watched(transport)
    return LinkPlayer(name, transport, relinked=watched, relink_wait_s=wait_s), watched


def test_a_bot_back_after_its_link_dropped_hands_its_match_back(arena: Arena, clients: list[Client]) -> None:
    first = Client(arena, "bob", "blipper").wait()
    player, watched = a_player(arena, "blipper", wait_s=120)
    player.act(decision())  # the match is under way on the first connection
    assert player.transport.used  # type: ignore[attr-defined]
    first.stop()
    wait_until(lambda: capacity(arena, bot_id(arena, "blipper")) == 0)

    raised: list[BaseException] = []

    def call() -> None:
        try:
            player.act(decision())
        except BaseException as exc:
            raised.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    assert watched.looked.wait(30), "the player did not wait for the bot"
    clients.append(Client(arena, "bob", "blipper").wait())  # back: a new connection
    caller.join(60)
    assert not caller.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], BotLinkLostError), raised


def test_a_bot_not_back_in_time_is_charged_and_waited_for_once(arena: Arena, clients: list[Client]) -> None:
    client = Client(arena, "bob", "leaver").wait()
    player, watched = a_player(arena, "leaver", wait_s=0.5)
    player.act(decision())
    client.stop()
    wait_until(lambda: capacity(arena, bot_id(arena, "leaver")) == 0)
    with pytest.raises(PlayerFaultError) as first:
        player.act(decision())
    assert first.value.kind is FaultKind.UNREACHABLE and watched.looked.is_set()
    watched.looked.clear()
    with pytest.raises(PlayerFaultError) as second:  # the match's one wait is spent
        player.act(decision())
    assert second.value.kind is FaultKind.UNREACHABLE and not watched.looked.is_set()


def test_a_bot_absent_from_the_start_is_not_waited_for_here(arena: Arena, clients: list[Client]) -> None:
    """A bot that never answered this match is the offline grace's business (offline.py),
    which already waited for it: its calls fault at once, not after a relink wait each."""
    gone = Client(arena, "bob", "absent").wait()
    gone.stop()
    wait_until(lambda: capacity(arena, bot_id(arena, "absent")) == 0)
    player, watched = a_player(arena, "absent", wait_s=120)
    with pytest.raises(PlayerFaultError) as fault:
        player.act(decision())
    assert fault.value.kind is FaultKind.UNREACHABLE and not watched.looked.is_set()


def test_the_dropped_connection_itself_does_not_count_as_back(arena: Arena, clients: list[Client]) -> None:
    clients.append(Client(arena, "bob", "stayer").wait())
    transport = RelayTransport(bot_id(arena, "stayer"), Routes(arena.url))
    assert transport.relinked()  # a connection this match has not used
    LinkPlayer("stayer", transport).act(decision())
    assert not transport.relinked()  # only the one it played on: its row may linger after a drop


def _notes(match_id: int, bot: int, count: int) -> list[FaultRecord]:
    return [
        FaultRecord(match_id=match_id, seat=0, bot_id=bot, hand_index=0, decision=-4,
                    kind=RELINK_NOTICE_KIND, reason="link dropped")
        for _ in range(count)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("grace_s", "claims", "match_relinks", "one_relinks", "expected"),
    [
        (600, 1, 0, 0, {"one": RELINK_WAIT_S, "two": RELINK_WAIT_S}),
        (4, 1, 0, 0, {"one": 4.0, "two": 4.0}),
        (0, 1, 0, 0, {"one": 0.0, "two": 0.0}),
        # Claims for other reasons (a gateway lost, a bot offline at the start) cost nothing.
        (600, 7, 0, 0, {"one": RELINK_WAIT_S, "two": RELINK_WAIT_S}),
        (600, 2, RELINK_MAX_PER_MATCH - 1, 0, {"one": RELINK_WAIT_S, "two": RELINK_WAIT_S}),
        (600, 3, RELINK_MAX_PER_MATCH, 0, {}),
        # A bot that used up its free replays elsewhere in the tournament: its drops are
        # charged, its opponent's still replayed.
        (600, 1, 0, RELINK_FREE_PER_BOT - 1, {"one": RELINK_WAIT_S, "two": RELINK_WAIT_S}),
        (600, 1, 0, RELINK_FREE_PER_BOT, {"two": RELINK_WAIT_S}),
        # ... in the last day: a ladder runs for ever, and a blip a week is no strategy.
        (600, 1, 0, -RELINK_FREE_PER_BOT, {"one": RELINK_WAIT_S, "two": RELINK_WAIT_S}),
    ],
)
def test_the_wait_is_bounded_by_the_grace_and_the_replays_per_match_and_per_bot(
    arena: Arena, clients: list[Client], grace_s: int, claims: int, match_relinks: int,
    one_relinks: int, expected: dict[str, float],
) -> None:  # fmt: skip
    clients.append(Client(arena, "alice", "one").wait())
    clients.append(Client(arena, "bob", "two").wait())
    one, two = bot_id(arena, "one"), bot_id(arena, "two")
    with session_scope(arena.url) as session:
        tournament = create_tournament(
            session, name="t", bot_ids=[one, two], table_sizes=[2], deals_per_table=2, hands_per_match=1,
            deal_mode="independent", config={"offline_grace_s": grace_s},
        )  # fmt: skip
        ids = session.scalars(select(Match.id).where(Match.tournament_id == tournament.id)).all()
        match_id, other = ids[:2]
        session.execute(update(Match).where(Match.id == match_id).values(attempts=claims))
        # one_relinks < 0: that many, on a match last started over a day ago.
        started = utcnow() - (RELINK_WINDOW + dt.timedelta(hours=1) if one_relinks < 0 else dt.timedelta(0))
        session.execute(update(Match).where(Match.id == other).values(started_at=started))
        session.add_all(_notes(match_id, two, match_relinks) + _notes(other, one, abs(one_relinks)))
    names = {one: "one", two: "two"}
    with session_scope(arena.url) as session:
        waits = relink_wait(session, match_id, default_grace_s=60)
    assert {names[bot]: wait for bot, wait in waits.items()} == expected


def test_a_drop_in_a_duplicate_deal_is_waited_for_too(arena: Arena, clients: list[Client]) -> None:
    # A replay is dealt afresh and so leaves its duplicate deal to be a deal of its own
    # (arena/play/cuts.py): a rotation's drop is waited for as any other's.
    clients.append(Client(arena, "alice", "one").wait())
    clients.append(Client(arena, "bob", "two").wait())
    with session_scope(arena.url) as session:
        tournament = create_tournament(
            session, name="t", bot_ids=[bot_id(arena, "one"), bot_id(arena, "two")], table_sizes=[2],
            deals_per_table=1, hands_per_match=2, deal_mode="duplicate",
        )  # fmt: skip
        ids = session.scalars(select(Match.id).where(Match.tournament_id == tournament.id)).all()
    assert len(ids) == 2
    with session_scope(arena.url) as session:
        waits = [relink_wait(session, m, default_grace_s=60) for m in ids]
    assert [sorted(w.values()) for w in waits] == [[RELINK_WAIT_S, RELINK_WAIT_S]] * 2
