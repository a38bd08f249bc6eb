"""An offline connected bot costs its tournament one grace period, not one per match (issue 29,
point 6), and a bot that comes back starts afresh. Real bots connected through a real
gateway, matches played as a worker plays them. Fixtures: tests/arena/link/conftest.py."""

from __future__ import annotations

import datetime as dt
import itertools

from helpers.arena import InlineBackend, charged_faults
from helpers.link import Arena, Client, bot_id, capacity, wait_until
from sqlalchemy import select

from arena.play.offline import must_wait
from arena.runtime.driver import run_tournament
from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import FaultRecord, Match
from arena.tournaments.lifecycle import create_tournament, start_tournament

GRACE_S = 12


def a_tournament(arena: Arena, bots: list[int], deals: int, grace_s: int = GRACE_S) -> tuple[int, list[int]]:
    """A heads-up tournament of ``bots``: its id and its matches' ids."""
    with session_scope(arena.url) as session:
        tournament = create_tournament(
            session, name="t", bot_ids=bots, table_sizes=[2], deals_per_table=deals, hands_per_match=1,
            config={"offline_grace_s": grace_s},
        )  # fmt: skip
        ids = list(session.scalars(select(Match.id).where(Match.tournament_id == tournament.id)))
        return tournament.id, ids


def gone(arena: Arena, client: Client) -> int:
    """Stop the connected bot ``client`` plays; its id once no gateway holds it."""
    bot = bot_id(arena, client.link.name)
    client.stop()
    wait_until(lambda: capacity(arena, bot) == 0)
    return bot


def test_an_offline_bot_holds_its_tournament_up_for_one_grace_not_one_per_match(
    arena: Arena, clients: list[Client]
) -> None:
    """Six matches of a bot gone for good: the first waits out the grace, then the others play
    one after another at once (each faulting UNREACHABLE), instead of each waiting the grace
    again (16 matches took 100 s at a 5 s grace; at the default 60 s, 2,000 took 33 hours)."""
    clients.append(Client(arena, "alice", "stayer").wait())
    leaver = gone(arena, Client(arena, "bob", "leaver").wait())
    stayer = bot_id(arena, "stayer")
    tournament_id, match_ids = a_tournament(arena, [leaver, stayer], deals=3)
    assert len(match_ids) == 6

    progress = run_tournament(arena.url, tournament_id, InlineBackend(arena.url), poll_s=0.1)
    assert progress.done == 6
    with session_scope(arena.url) as session:
        started = sorted(session.scalars(select(Match.started_at).where(Match.id.in_(match_ids))))
        charged = set(session.execute(charged_faults(FaultRecord.bot_id, FaultRecord.kind)).all())
        assert session.scalars(select(Match.waiting_since).where(Match.id.in_(match_ids))).all() == [None] * 6
    assert charged == {(leaver, "unreachable")}
    # A match that waited the grace again would start a whole grace after the one before it.
    gaps = [(later - earlier).total_seconds() for earlier, later in itertools.pairwise(started)]
    assert all(gap < GRACE_S for gap in gaps), gaps


def test_the_grace_is_the_bots_in_its_tournament_and_starts_afresh_when_it_is_back(
    arena: Arena, clients: list[Client]
) -> None:
    """Found offline, a bot's wait starts for all its pending matches of the tournament at once
    (not those of another tournament); once over for one, it is over for all; seen online
    again, its matches' waits are cleared, so a later absence gets its whole grace."""
    clients.append(Client(arena, "alice", "anchor").wait())
    roamer = Client(arena, "bob", "roamer").wait()
    ids = [bot_id(arena, "roamer"), bot_id(arena, "anchor")]
    tournament_id, mine = a_tournament(arena, ids, deals=2)
    _other, theirs = a_tournament(arena, ids, deals=1)
    gone(arena, roamer)

    def stamps(match_ids: list[int]) -> list[dt.datetime | None]:
        with session_scope(arena.url) as session:
            rows = session.execute(select(Match.id, Match.waiting_since).where(Match.id.in_(match_ids)))
            found = {match_id: since for match_id, since in rows}
            return [found[m] for m in match_ids]

    with session_scope(arena.url) as session:
        assert must_wait(session, mine[0], 60)  # its wait starts, for every match of it here
    since = stamps(mine)[0]
    assert since is not None and stamps(mine) == [since] * len(mine)
    assert stamps(theirs) == [None] * len(theirs)  # another tournament's grace is its own
    later = since + dt.timedelta(seconds=GRACE_S + 1)
    with session_scope(arena.url) as session:
        assert not must_wait(session, mine[0], 60, now=later)  # over for the first match...
        assert not must_wait(session, mine[-1], 60, now=later)  # ...and for the others, at once
        assert must_wait(session, theirs[0], 60, now=later)  # the other tournament waits its own

    back = Client(arena, "bob", "roamer").wait()
    clients.append(back)
    with session_scope(arena.url) as session:
        start_tournament(session, tournament_id)
    assert play_match_job(mine[-1], arena.url) == "done"  # back: it plays, and its waits are over
    assert stamps(mine) == [None] * len(mine)
    gone(arena, back)
    with session_scope(arena.url) as session:
        assert must_wait(session, mine[1], 60)  # a new absence: a whole grace again
    again = stamps(mine[:-1])[0]
    assert again is not None and again > since and stamps(mine[:-1]) == [again] * (len(mine) - 1)
