"""Shared pieces of the arena tests: house bots registered through arena.bots.registry, tournaments
made and played in-process (InlineBackend), and a few deliberately odd bots. The store on
SQLite and PostgreSQL is conftest.py's ``db_url``."""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from arena.bots.owners import get_or_create_operator
from arena.bots.registry import host_bot, register_bot
from arena.config import Settings
from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import NOTICE_KINDS, FaultRecord, Match, MatchSeat, Replay
from arena.store.secrets import set_secret
from arena.tournaments.lifecycle import create_tournament
from arena.tournaments.settings import REFEREE_LIMITS
from bots.greedy import GreedyBot
from sdk.actions import Action, Meld
from sdk.bot import Bot, MatchInfo
from sdk.observation import Observation

SETTINGS = Settings(
    allowed_bot_hosts=("127.0.0.1", "localhost"), decision_deadline_ms=2000, time_bank_ms=5000
)


#: A tournament ``config`` whose deadlines no honest bot can miss, however many matches share
#: the machine (the longest a tournament may set), for tests about results, not time. At the
#: referee's 1 s lifecycle deadline (and SETTINGS' 2 s a decision), a call on a loaded machine
#: can be cut: a TIMEOUT charged, a forfeit, scores that differ between two runs of one seed
#: (CI saw one match of the RQ-against-embedded comparison differ so).
OFF_THE_CLOCK = {
    "decision_deadline_ms": REFEREE_LIMITS["decision_deadline_ms"][1],
    "lifecycle_deadline_ms": REFEREE_LIMITS["lifecycle_deadline_ms"][1],
    "time_bank_ms": 0,
}

#: The admission check's decision deadline for tests about uploads, not time: a bot in the
#: sandbox (node, or Python) answering a check's decision on a loaded machine took 1,445 ms in
#: a parallel run, past the 1,000 ms default, and was refused.
UNHURRIED_CHECK = {"decision_deadline_ms": OFF_THE_CLOCK["decision_deadline_ms"]}


def hosted_bots(url: str, names: Sequence[str] = ("random", "greedy")) -> list[int]:
    """House bots (``random``...) or ``module:Class`` specs, hosted in-process; their ids."""
    with session_scope(url) as session:
        house = get_or_create_operator(session, "house")
        ids = []
        for spec in names:
            name = spec.rsplit(":", 1)[-1].lower()
            ids.append(host_bot(session, house, name, spec, settings=SETTINGS, check=False).id)
        return ids


def grpc_bots(url: str, addresses: dict[str, str]) -> list[int]:
    """Bots registered at gRPC addresses (name -> HOST:PORT); their ids."""
    with session_scope(url) as session:
        owner = get_or_create_operator(session, "grpc-owner")
        return [
            register_bot(session, owner, name, address, settings=SETTINGS, check=False).id
            for name, address in addresses.items()
        ]


#: The deal secret tests give their stores (arena/store/secrets.py): with it a seed deals the
#: same cards in every store, so results compare across stores and runs.
TEST_DEAL_SECRET = b"tonk-tests-deal-secret"


def fix_deal_secret(session: Session) -> None:
    """Give the store the tests' deal secret (before its first tournament)."""
    set_secret(session, "deal", TEST_DEAL_SECRET)


def new_tournament(url: str, bot_ids: Sequence[int], **options: Any) -> int:
    fields: dict[str, Any] = {
        "name": "test",
        "table_sizes": [2],
        "deals_per_table": 1,
        "hands_per_match": 5,
        "seed": 12345,
        "settings": SETTINGS,
        **options,
    }
    with session_scope(url) as session:
        fix_deal_secret(session)
        return create_tournament(session, bot_ids=bot_ids, **fields).id


def seats_by_key(url: str, tournament_id: int, column: Any = MatchSeat.score) -> dict[str, list[Any]]:
    """Each match's seats' ``column`` (default the score), in seat order, by match key
    (comparable across tournaments of one seed)."""
    with session_scope(url) as session:
        rows = session.execute(
            select(Match.key, column)
            .join(MatchSeat, MatchSeat.match_id == Match.id)
            .where(Match.tournament_id == tournament_id)
            .order_by(Match.key, MatchSeat.seat)
        ).all()
    out: dict[str, list[Any]] = {}
    for key, value in rows:
        out.setdefault(key, []).append(value)
    return out


def scores_by_key(url: str, tournament_id: int) -> dict[str, list[int | None]]:
    """Each match's seat scores, by match key."""
    return seats_by_key(url, tournament_id)


def charged_fault_reasons(url: str, tournament_id: int) -> list[tuple[str, str]]:
    """The (kind, reason) of each charged fault of a tournament: a test comparing two runs'
    scores asserts this empty first, so a difference from a fault names it."""
    in_tournament = FaultRecord.match_id.in_(select(Match.id).where(Match.tournament_id == tournament_id))
    with session_scope(url) as session:
        query = charged_faults(FaultRecord.kind, FaultRecord.reason).where(in_tournament)
        return [(kind, reason) for kind, reason in session.execute(query).all()]


def charged_faults(*columns: Any) -> Select[Any]:
    """``select(*columns)`` of the fault records that were charged: notices (slow lifecycle
    calls, relinked matches) are on the record too but cost nothing, and a loaded machine
    makes a slow one of an honest bot now and then, so a test that counts faults must not
    count them."""
    return select(*columns).where(FaultRecord.kind.not_in(NOTICE_KINDS))


def counted_once(url: str, tournament_id: int) -> None:
    """Every done match has exactly one replay, scored seats summing to zero, and its faults
    recorded once (slow notices, recorded but not charged, apart); nothing else has a replay."""
    with session_scope(url) as session:
        matches = session.execute(
            select(Match.id, Match.status, Match.faults).where(Match.tournament_id == tournament_id)
        ).all()
        replays = dict(
            session.execute(
                select(Replay.match_id, func.count()).group_by(Replay.match_id)
            ).all()
        )
        per_match = charged_faults(FaultRecord.match_id, func.count()).group_by(FaultRecord.match_id)
        faults = dict(session.execute(per_match).all())
        for match_id, status, fault_count in matches:
            seats = session.scalars(select(MatchSeat).where(MatchSeat.match_id == match_id)).all()
            if status == "done":
                assert replays.get(match_id) == 1
                assert faults.get(match_id, 0) == fault_count
                assert all(s.score is not None for s in seats)
                assert sum(s.score or 0 for s in seats) == 0
            else:
                assert match_id not in replays
                assert all(s.score is None for s in seats)


def wait_for(predicate: Any, timeout: float = 30.0, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(step)


class SlowGreedy(GreedyBot):
    """Greedy, 2 ms a decision: matches long enough to be caught half-way."""

    name = "slowgreedy"

    def act(self, obs: Observation) -> Action | int:
        time.sleep(0.002)
        return super().act(obs)


#: The folder of GatedGreedy's tokens (an environment variable: the bot is hosted in a pool
#: process of another command).
GATE_ENV = "TONK_TEST_GATE"


class GatedGreedy(GreedyBot):
    """Greedy, but a match starts only with a token: while the folder named by
    ``$TONK_TEST_GATE`` exists, each StartMatch takes (deletes) one file of it, waiting until
    there is one. A test that hands out N tokens knows its matches of this bot that can
    finish, whatever the machine's speed; without the variable (or the folder) it is greedy."""

    name = "gatedgreedy"

    def on_match_start(self, info: MatchInfo) -> None:
        gate = os.environ.get(GATE_ENV)
        while gate and os.path.isdir(gate):
            for token in sorted(os.listdir(gate)):
                try:
                    os.unlink(os.path.join(gate, token))  # one process wins each token
                except FileNotFoundError:
                    continue
                return
            time.sleep(0.02)


class CrashBot(GreedyBot):
    """Raises on every 7th decision (a CRASH fault each time)."""

    name = "crashbot"

    def act(self, obs: Observation) -> Action | int:
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls % 7 == 0:
            raise RuntimeError(f"boom at call {self.calls}")
        return super().act(obs)


class IllegalBot(Bot):
    """Answers an out-of-range index now and then (ILLEGAL), else the first legal action."""

    name = "illegalbot"

    def act(self, obs: Observation) -> Action | int:
        if self.rng.random() < 0.03:
            return 99
        return 0


class ReversedMelder(GreedyBot):
    """Greedy, but lays down its melds with the cards in reverse order: a record keeps the
    order a bot played, so the replay codec must too."""

    name = "reversedmelder"

    def act(self, obs: Observation) -> Action | int:
        action = super().act(obs)
        if isinstance(action, int):
            action = obs.legal_actions[action]
        if isinstance(action, Meld):
            return Meld(tuple(reversed(action.cards)))
        return action


class InlineBackend:
    """A tournament backend that plays each submitted match at once, in this process (what a
    worker does): the undisturbed reference."""

    def __init__(self, url: str):
        self.url = url

    def submit(self, match_ids: Sequence[int], *, replace: Collection[int] = ()) -> int:
        for match_id in match_ids:
            play_match_job(match_id, self.url)
        return len(match_ids)

    def close(self, *, cancel: bool = False) -> None:
        pass
