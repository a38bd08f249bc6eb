"""Issue 29, point 2: a finished tournament's seed, given again, re-deals nothing its bots
have seen. The arena's deal secret enters every seed, so the new tournament deals other
cards under other match ids, and another arena given the same seed deals other cards too."""

from __future__ import annotations

import pytest
from helpers.arena import SETTINGS, InlineBackend, hosted_bots
from sqlalchemy import select

from arena.queries.tournaments import get_tournament
from arena.runtime.driver import run_tournament
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Match
from arena.store.secrets import arena_secret
from arena.tournaments.layout import keyed_seed
from arena.tournaments.lifecycle import create_tournament
from arena.tournaments.settings import InvalidTournamentError


def create(url: str, ids: list[int], seed: int) -> int:
    with session_scope(url) as session:
        return create_tournament(
            session,
            name="t",
            bot_ids=ids,
            table_sizes=[2],
            deals_per_table=3,
            hands_per_match=2,
            seed=seed,
            settings=SETTINGS,
        ).id


def dealt(url: str, tid: int) -> tuple[set[int], set[str]]:
    with session_scope(url) as session:
        rows = session.execute(select(Match.seed, Match.public_id).where(Match.tournament_id == tid)).all()
    return {seed for seed, _ in rows}, {str(public) for _, public in rows}


def test_a_revealed_seed_given_again_deals_other_cards(sqlite_url: str, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    ids = hosted_bots(sqlite_url, ["random", "greedy"])
    first = create(sqlite_url, ids, seed=4242)
    run_tournament(sqlite_url, first, InlineBackend(sqlite_url))
    with session_scope(sqlite_url) as session:
        revealed = get_tournament(session, first).seed
        assert revealed is not None and revealed == keyed_seed(arena_secret(session, "deal"), 4242)
    seeds, public = dealt(sqlite_url, first)
    # The revealed seed given again deals neither its deals nor its match ids.
    again = create(sqlite_url, ids, seed=revealed)
    other_seeds, other_public = dealt(sqlite_url, again)
    assert not seeds & other_seeds and not public & other_public
    # The seed first given is refused: it would deal the same cards.
    with (
        session_scope(sqlite_url) as session,
        pytest.raises(InvalidTournamentError, match="seed 4242 was already dealt"),
    ):
        create_tournament(
            session,
            name="t",
            bot_ids=ids,
            table_sizes=[2],
            deals_per_table=3,
            hands_per_match=2,
            seed=4242,
            settings=SETTINGS,
        )
    dispose_engines()
    # Another arena (another store, another secret) given the same seed deals other cards.
    other_url = f"sqlite:///{tmp_path_factory.mktemp('other')}/arena.sqlite"
    other_ids = hosted_bots(other_url, ["random", "greedy"])
    elsewhere = create(other_url, other_ids, seed=4242)
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
