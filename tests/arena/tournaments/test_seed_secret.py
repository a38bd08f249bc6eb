"""Issue 29, point 2: a finished tournament's seed, given again, re-deals nothing its bots
have seen. The arena's deal secret enters every seed, so the new tournament deals other
cards under other match ids, and another arena given the same seed deals other cards too."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest
from helpers.arena import SETTINGS, InlineBackend, grpc_bots
from sqlalchemy import select

from arena.queries.tournaments import get_tournament
from arena.runtime.driver import run_tournament
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Match
from arena.store.secrets import arena_secret
from arena.tournaments.layout import keyed_seed
from arena.tournaments.lifecycle import create_tournament
from arena.tournaments.settings import InvalidTournamentError
from bots.random_bot import RandomBot
from sdk.bot import DealSummary, MatchInfo, MatchSummary
from sdk.server import start_server


class Rememberer(RandomBot):
    """A bot that keeps what it is told: every match id it starts, every seed revealed to it
    (at a match's end and a deal's end), as a bot on its author's machine can."""

    name = "rememberer"
    ids: ClassVar[set[str]] = set()
    seeds: ClassVar[set[int]] = set()
    lock: ClassVar[threading.Lock] = threading.Lock()

    def on_match_start(self, info: MatchInfo) -> None:
        with self.lock:
            self.ids.add(info.match_id)

    def on_match_end(self, summary: MatchSummary) -> None:
        with self.lock:
            self.seeds.update([summary.seed] if summary.seed is not None else [])

    def on_deal_end(self, deal: DealSummary) -> None:
        with self.lock:
            self.seeds.update([deal.seed] if deal.seed is not None else [])

    @classmethod
    def forget(cls) -> tuple[set[str], set[int]]:
        with cls.lock:
            kept = (set(cls.ids), set(cls.seeds))
            cls.ids.clear()
            cls.seeds.clear()
        return kept


def create(url: str, ids: list[int], seed: int) -> int:
    with session_scope(url) as session:
        return create_tournament(
            session, name="t", bot_ids=ids, table_sizes=[2], deals_per_table=3, hands_per_match=2,
            seed=seed, settings=SETTINGS,
        ).id


def dealt(url: str, tid: int) -> tuple[set[int], set[str]]:
    with session_scope(url) as session:
        rows = session.execute(select(Match.seed, Match.public_id).where(Match.tournament_id == tid)).all()
    return {seed for seed, _ in rows}, {str(public) for _, public in rows}


@pytest.fixture
def servers() -> Iterator[dict[str, str]]:
    running = {"keeper-a": start_server(Rememberer), "keeper-b": start_server(Rememberer)}
    Rememberer.forget()
    yield {name: server.address for name, server in running.items()}
    for server in running.values():
        server.stop(0)


def test_a_revealed_seed_given_again_deals_other_cards(
    sqlite_url: str, tmp_path_factory: pytest.TempPathFactory, servers: dict[str, str]
) -> None:
    """Bots served over real gRPC, dialled by the arena, keep every id and seed they are told."""
    ids = grpc_bots(sqlite_url, servers)
    first = create(sqlite_url, ids, seed=4242)
    assert run_tournament(sqlite_url, first, InlineBackend(sqlite_url)).unfinished == 0
    seen_ids, seen_seeds = Rememberer.forget()
    seeds, public = dealt(sqlite_url, first)
    assert seen_ids == public and seen_seeds == seeds  # the bots were told every id and seed
    with session_scope(sqlite_url) as session:
        revealed = get_tournament(session, first).seed
        assert revealed is not None and revealed == keyed_seed(arena_secret(session, "deal"), 4242)
    # The revealed seed given again: nothing the bots kept is dealt or named again.
    again = create(sqlite_url, ids, seed=revealed)
    assert run_tournament(sqlite_url, again, InlineBackend(sqlite_url)).unfinished == 0
    again_ids, again_seeds = Rememberer.forget()
    assert again_ids and again_seeds
    assert not again_ids & seen_ids and not again_seeds & seen_seeds
    # The seed first given is refused: it would deal the same cards under the same ids.
    with pytest.raises(InvalidTournamentError, match="seed 4242 was already dealt in tournament 1"):
        create(sqlite_url, ids, seed=4242)
    dispose_engines()
    # Another arena (another store, another secret) given the same seed deals other cards.
    other_url = f"sqlite:///{tmp_path_factory.mktemp('other')}/arena.sqlite"
    elsewhere = create(other_url, grpc_bots(other_url, servers), seed=4242)
    assert not seeds & dealt(other_url, elsewhere)[0]
    dispose_engines()


def test_the_example_of_docs_dealing_md() -> None:
    """docs/dealing.md, "Seeds in the arena": the keyed seed, a deal's seed and a match id."""
    from helpers.paths import ROOT

    from arena.tournaments.layout import public_match_id
    from sdk.dealing import derive_seed

    doc = (ROOT / "docs" / "dealing.md").read_text(encoding="utf-8")
    seed = keyed_seed(b"tonk", 42)
    example = (
        f"becomes\n{seed}; deal 0 of table 0 is dealt from {derive_seed(seed, 'table0/deal0')} and match"
        f" `t0/d0/r1`\nhas the id `{public_match_id(seed, 't0/d0/r1')}`"
    )
    assert example in doc
