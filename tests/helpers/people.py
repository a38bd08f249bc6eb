"""A store with bots rated among themselves and people who sat against them (issue #39), built
row by row as bench/dashboard.py's ``big_ladder`` builds its board: the bots' matches of a
finished round robin with seeded Bradley-Terry results, then people's matches (kind
``people``: a person's own seat, made by person_bot, and one or two bots) with results
chosen so that the people's board is known in advance (tests/dashboard/test_people_pages.py
also plays one for real, at the table). For the people's board tests
(tests/arena/queries/test_people_board.py, tests/dashboard/test_people_pages.py)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from arena.store.db import session_scope
from arena.store.models import Bot, BotVersion, Match, MatchSeat, Owner, Tournament, utcnow
from arena.store.statuses import MatchStatus, TournamentKind, TournamentStatus

#: The bots' strengths (Elo, before the fit): three house bots and one community bot.
STRENGTH = {"random": -300.0, "greedy": 0.0, "search": 150.0, "mine": 60.0}
#: Bots' matches per pair of bots.
PER_PAIR = 30
HANDS = 10


@dataclass
class Store:
    bots: dict[str, int] = field(default_factory=dict)  # name -> bot id
    versions: dict[str, int] = field(default_factory=dict)  # name -> version id
    people: dict[str, int] = field(default_factory=dict)  # owner name -> person bot id
    owners: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)  # a person's owner token


def build_bots(url: str, seed: int = 7) -> Store:
    """The house bots random, greedy and search (operator ``house``: the scale's anchor) and
    ``mine`` of ``alice``, each pair meeting PER_PAIR times heads-up, plus ``newbie`` of
    ``alice``, which has played no bot (no rating on the bots' board). Rows in bulk."""
    rng = random.Random(seed)
    now = utcnow()
    store = Store()
    house = ("random", "greedy", "search")
    with session_scope(url) as db:
        db.execute(insert(Owner), [{"name": n, "token_hash": f"hash-{n}", "is_operator": n == "house"}
                                   for n in ("house", "alice")])  # fmt: skip
        store.owners = dict(db.execute(select(Owner.name, Owner.id)).all())
        names = [*STRENGTH, "newbie"]
        db.execute(insert(Bot), [
            {"name": n, "owner_id": store.owners["house" if n in house else "alice"], "hosted": f"bots.{n}"}
            for n in names
        ])  # fmt: skip
        store.bots = dict(db.execute(select(Bot.name, Bot.id)).all())
        db.execute(insert(BotVersion), [{"bot_id": store.bots[n], "number": 1, "info": {}} for n in names])
        versions = select(Bot.name, BotVersion.id).join(Bot, Bot.id == BotVersion.bot_id)
        store.versions = dict(db.execute(versions).all())
        tid = db.execute(
            insert(Tournament).values(
                name="cup", seed=seed, status=TournamentStatus.FINISHED, table_sizes=[2], deals_per_table=1,
                hands_per_match=HANDS, kind=TournamentKind.ROUND_ROBIN.value, deal_mode="independent",
                finished_at=now,
            ).returning(Tournament.id)
        ).scalar_one()
        games = []
        bots = list(STRENGTH)
        for i, a in enumerate(bots):
            for b in bots[i + 1 :]:
                for _ in range(PER_PAIR):
                    p = 1 / (1 + 10 ** ((STRENGTH[b] - STRENGTH[a]) / 400))
                    chips = rng.randint(1, 20) * (1 if rng.random() < p else -1)
                    games.append((a, b, chips))
        db.execute(insert(Match), [
            {"tournament_id": tid, "key": f"cup{k}", "table_index": 0, "deal_index": k, "rotation": 0,
             "seed": k, "hands": HANDS, "status": MatchStatus.DONE, "hands_played": HANDS, "started_at": now,
             "finished_at": now}
            for k in range(len(games))
        ])  # fmt: skip
        ids = dict(db.execute(select(Match.key, Match.id).where(Match.tournament_id == tid)).all())
        db.execute(insert(MatchSeat), [
            {"match_id": ids[f"cup{k}"], "seat": seat, "bot_id": store.bots[name],
             "bot_version_id": store.versions[name], "score": score, "hands_won": max(score, 0) // 5}
            for k, (a, b, chips) in enumerate(games)
            for seat, (name, score) in enumerate(((a, chips), (b, -chips)))
        ])  # fmt: skip
    return store


def _match(db: Session, tid: int, seed: int, seats: list[tuple[int, int, int]], status: str) -> int:
    """A match of ``seats`` (bot id, version id, score) in tournament ``tid``."""
    now = utcnow()
    done = status == MatchStatus.DONE
    match_id: int = db.execute(
        insert(Match).values(
            tournament_id=tid, key="people", table_index=0, deal_index=0, rotation=0, seed=seed, hands=HANDS,
            status=status, hands_played=HANDS if done else 3, started_at=now,
            finished_at=now if done else None,
        ).returning(Match.id)
    ).scalar_one()
    db.execute(insert(MatchSeat), [
        {"match_id": match_id, "seat": seat, "bot_id": bot, "bot_version_id": version,
         "score": score if done else None, "hands_won": max(score, 0) // 5}
        for seat, (bot, version, score) in enumerate(seats)
    ])  # fmt: skip
    return match_id


def person(url: str, store: Store, name: str) -> int:
    """An owner ``name`` (their token in ``store.tokens``) and their own seat, ``@name``, made
    by arena/tournaments/people.py's person_bot as a first seat makes it."""
    from arena.bots.owners import create_owner
    from arena.tournaments.people import person_bot

    with session_scope(url) as db:
        owner, store.tokens[name] = create_owner(db, name)
        store.owners[name] = owner.id
        bot = person_bot(db, owner)
        store.people[name] = bot.id
        version = select(BotVersion.id).where(BotVersion.bot_id == bot.id)
        store.versions[f"@{name}"] = db.scalars(version).one()
    return store.people[name]


def people_match(url: str, store: Store, seats: list[tuple[str, int]], status: str = MatchStatus.DONE) -> int:
    """One match of a people tournament of its own (as a person's table is): ``seats`` are
    (name, final score), a person's name written ``@owner``. Its match id."""
    done = status == MatchStatus.DONE
    ids = [
        (store.people[n[1:]] if n.startswith("@") else store.bots[n], store.versions[n], s) for n, s in seats
    ]
    with session_scope(url) as db:
        count = db.scalar(select(func.count(Tournament.id))) or 0
        tid = db.execute(
            insert(Tournament).values(
                name=f"table {count + 1}", seed=10_000 + count, table_sizes=[len(seats)], deals_per_table=1,
                hands_per_match=HANDS, kind=TournamentKind.PEOPLE.value, deal_mode="independent",
                status=TournamentStatus.FINISHED if done else TournamentStatus.RUNNING,
                finished_at=utcnow() if done else None, owner_id=store.owners[seats_owner(seats)],
            ).returning(Tournament.id)
        ).scalar_one()
        return _match(db, tid, 10_000 + count, ids, status)


def seats_owner(seats: list[tuple[str, int]]) -> str:
    """The person at a table of ``seats``: a people tournament is its person's."""
    return next(n[1:] for n, _ in seats if n.startswith("@"))


def sit_people(url: str, store: Store) -> None:
    """The people of the board tests, their records chosen so the board is known:

    - ann: heads-up against greedy only, 7 won and 3 lost: greedy's rating + 400 log10(7/3);
    - bob: against search (4 won, 6 lost) and at three seats with greedy and random;
    - cy: beat greedy 3 times and nobody else: a one-sided record (a bound);
    - dee: played only ``newbie``, which has no rating on the bots' board: unrated;
    - and a match of ann's still running, which counts nowhere yet.
    """
    for name in ("ann", "bob", "cy", "dee"):
        person(url, store, name)
    for k in range(10):
        people_match(url, store, [("@ann", 12 if k < 7 else -12), ("greedy", -12 if k < 7 else 12)])
    for k in range(10):
        people_match(url, store, [("search", -5 if k < 4 else 5), ("@bob", 5 if k < 4 else -5)])
    people_match(url, store, [("@bob", 8), ("greedy", -3), ("random", -5)])
    people_match(url, store, [("random", 9), ("@bob", -4), ("greedy", -5)])
    for _ in range(3):
        people_match(url, store, [("@cy", 6), ("greedy", -6)])
    for _ in range(2):
        people_match(url, store, [("@dee", 1), ("newbie", -1)])
    people_match(url, store, [("@ann", 0), ("search", 0)], status=MatchStatus.RUNNING)
