"""Replays that favour no one (issue #37; arena/play/cuts.py): a bot that cuts its own link
when behind gains nothing over an honest copy, one drop makes one notice however many
matches it stops, and a gateway killed mid-match has its matches replayed with fresh seeds,
no seat dealt again a hand it saw. Real bots connected through a real gateway (conftest.py
here; the kill test runs `tonk gateway` as a process of its own)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.link import Arena, Client, bot_id
from helpers.net import free_port, listening, wait_for
from helpers.paths import ROOT
from sqlalchemy import func, select

from arena.link.player import BotLinkLostError
from arena.play.cuts import CUT_DECISION, free_lead
from arena.play.lifecycle import MatchLife, Outcome
from arena.play.offline import RELINK_FREE_PER_BOT
from arena.processes import spawn
from arena.store.db import session_scope
from arena.store.models import RELINK_NOTICE_KIND, FaultRecord, Match, MatchSeat, Replay
from arena.store.replays import decode
from arena.store.statuses import MatchStatus
from arena.tournaments.lifecycle import create_tournament, start_tournament
from bots.random_bot import RandomBot
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.rules import STANDARD

BIN = Path(sys.executable).parent
#: Hands a match of the cutter's tournament.
HANDS = 12
#: How the cutter cuts its link and connects again at once (set by its test).
CUT: dict[str, Callable[[], None]] = {}


class Cutter(RandomBot):
    """A random bot that cuts its own link whenever it is 6 chips behind in a match of the
    tournament (``HANDS`` hands: not in the arena's admission check)."""

    def act(self, obs: Any) -> Any:
        rival = max((s for seat, s in enumerate(obs.scores) if seat != obs.seat), default=0)
        cut = CUT.get("cutter")
        if cut is not None and obs.hands_in_match == HANDS and rival - obs.scores[obs.seat] >= 6:
            cut()
        return super().act(obs)


def play_all(url: str, match_ids: list[int]) -> dict[int, list[Outcome]]:
    """Play every match through the arena's own match life until it is done."""
    outcomes: dict[int, list[Outcome]] = {m: [] for m in match_ids}
    for match_id in match_ids:
        # A match waits while a bot's new link is still connecting (slow under load): play
        # it again until it is done, for up to a minute.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            outcome = MatchLife(url, match_id, f"test:{os.getpid()}").play()
            outcomes[match_id].append(outcome)
            if outcome is Outcome.DONE:
                break
            time.sleep(0.05)
        assert outcomes[match_id][-1] is Outcome.DONE, outcomes[match_id]
    return outcomes


def test_a_bot_that_cuts_its_link_when_behind_gains_nothing(arena: Arena, clients: list[Client]) -> None:
    clients.append(Client(arena, "bob", "honest").wait())
    clients.append(Client(arena, "alice", "cutter", bot=Cutter).wait())

    def cut() -> None:  # the link closes mid-call; a new one connects at once
        clients[-1].link.stop()
        clients.append(Client(arena, "alice", "cutter", bot=Cutter))

    CUT["cutter"] = cut
    ids = [bot_id(arena, "cutter"), bot_id(arena, "honest")]
    hands = HANDS
    with session_scope(arena.url) as session:
        tournament = create_tournament(
            session, name="cuts", bot_ids=ids, table_sizes=[2], deals_per_table=25, hands_per_match=hands,
            deal_mode="independent", config={"offline_grace_s": 30}, seed=37,
        )  # fmt: skip
        start_tournament(session, tournament.id)
        match_ids = list(session.scalars(select(Match.id).where(Match.tournament_id == tournament.id)))
    try:
        play_all(arena.url, match_ids)
    finally:
        CUT.clear()
    with session_scope(arena.url) as session:
        totals = dict(session.execute(
            select(MatchSeat.bot_id, func.sum(MatchSeat.score)).join(Match, Match.id == MatchSeat.match_id)
            .where(Match.tournament_id == tournament.id).group_by(MatchSeat.bot_id)
        ).all())  # fmt: skip
        cuts = session.execute(
            select(FaultRecord.match_id, FaultRecord.seat, FaultRecord.hand_index).where(
                FaultRecord.bot_id == ids[0], FaultRecord.decision == CUT_DECISION
            )
        ).all()
        notices = session.scalar(
            select(func.count(FaultRecord.id)).where(FaultRecord.kind == RELINK_NOTICE_KIND)
        )
        matches = {m.id: m for m in session.scalars(select(Match).where(Match.id.in_([c[0] for c in cuts])))}
        records = {c[0]: decode(*session.execute(select(Replay.format, Replay.data).where(
            Replay.match_id == c[0])).one()) for c in cuts}  # fmt: skip
        scores = {(s.match_id, s.seat): s.score for s in session.scalars(select(MatchSeat))}
    assert len(cuts) >= 3, "the cutter never fell 6 behind: the test proves nothing"
    assert notices == 0  # 6 behind is never a lead worth a free replay
    for match_id, seat, hand_index in cuts:
        # Scored as it stood at the cut (the hands completed, re-dealt from the record's seed),
        # the rest forfeited.
        record = records[match_id]
        assert len(record) == hand_index == matches[match_id].hands_played < hands
        assert matches[match_id].forfeited_seat == seat and matches[match_id].status == MatchStatus.DONE
        stood = sum(hand["outcome"]["payoffs"][seat] for hand in record)
        assert stood <= -6 + 2 * free_lead(2)  # it cut while behind (the hand in play unfinished)
        assert scores[(match_id, seat)] == stood - 2 * (hands - hand_index)
    gain = (totals[ids[0]] - totals[ids[1]]) * 100 / (len(match_ids) * hands)
    assert gain <= 0, f"the cutter gained {gain:+.1f} chips/100 hands over its honest copy"


def _holding(url: str, bot: int, rival: int, lead: int, deals: int = 1) -> list[MatchLife]:
    """``2 * deals`` running matches of ``bot`` against ``rival`` (a tournament of their
    own), ``bot`` ``lead`` chips up in each."""
    life: list[MatchLife] = []
    with session_scope(url) as session:
        tournament = create_tournament(
            session, name=f"lead{lead}", bot_ids=[bot, rival], table_sizes=[2], deals_per_table=deals,
            hands_per_match=10, deal_mode="independent",
        )  # fmt: skip
        start_tournament(session, tournament.id)
        ids = list(session.scalars(select(Match.id).where(Match.tournament_id == tournament.id)))
    for match_id in ids:
        one = MatchLife(url, match_id, f"test:{match_id}")
        with session_scope(url) as session:
            assert one.claim(session) is None
            seat = session.scalar(
                select(MatchSeat.seat).where(MatchSeat.match_id == match_id, MatchSeat.bot_id == bot)
            )
        payoffs = [0, 0]
        payoffs[seat], payoffs[1 - seat] = lead, -lead
        one.played = [types.SimpleNamespace(record=types.SimpleNamespace(outcome={"payoffs": payoffs}))]  # type: ignore[list-item]
        one.seat = seat  # type: ignore[attr-defined]
        life.append(one)
    return life


def _drop(life: MatchLife, bot: int, link: str) -> bool | None:
    lost = BotLinkLostError("the link dropped", life.seat, frozenset({link}))  # type: ignore[attr-defined]
    return life.hand_back(relinked=(bot, lost), plan=types.SimpleNamespace(seats=[0, 1]))  # type: ignore[arg-type]


def test_one_drop_makes_one_notice_and_the_free_replays_are_bounded(
    arena: Arena, clients: list[Client]
) -> None:
    clients.append(Client(arena, "alice", "blipper").wait())
    clients.append(Client(arena, "bob", "rival").wait())
    bot, rival = bot_id(arena, "blipper"), bot_id(arena, "rival")

    def notices() -> int:
        with session_scope(arena.url) as session:
            return session.scalar(select(func.count(FaultRecord.id)).where(
                FaultRecord.kind == RELINK_NOTICE_KIND, FaultRecord.bot_id == bot)) or 0  # fmt: skip

    # A link carrying two matches drops: both are replayed (the bot was well ahead), one notice.
    first, second = _holding(arena.url, bot, rival, free_lead(2) + 1)
    assert _drop(first, bot, "conn-1") is True and _drop(second, bot, "conn-1") is True
    assert notices() == 1
    with session_scope(arena.url) as session:
        assert {m.status for m in session.scalars(select(Match).where(Match.id.in_(
            [first.match_id, second.match_id])))} == {MatchStatus.PENDING}  # fmt: skip
    # Ahead by no more than one hand can take: not replayed (the caller scores it as it stood).
    level = _holding(arena.url, bot, rival, free_lead(2))[0]
    assert _drop(level, bot, "conn-2") is None and notices() == 1
    # The free drops are bounded exactly (a day's, in one tournament): with one left, one more
    # drop is free, the next is not.
    last, over, *others = _holding(arena.url, bot, rival, free_lead(2) + 5, deals=2)
    with session_scope(arena.url) as session:
        session.add_all([FaultRecord(match_id=others[i % 2].match_id, seat=0, bot_id=bot, hand_index=0,
                                     decision=-4, kind=RELINK_NOTICE_KIND, reason=f"[old {i}]")
                         for i in range(RELINK_FREE_PER_BOT - 1)])  # fmt: skip
    assert _drop(last, bot, "conn-3") is True and notices() == 1 + RELINK_FREE_PER_BOT
    assert _drop(over, bot, "conn-4") is None and notices() == 1 + RELINK_FREE_PER_BOT


class Watching(RandomBot):
    """A random bot that thinks 40 ms a decision (so a kill lands mid-match) and notes the
    hand it holds at its first decision of each hand: (match id, seat, attempt, hand index).

    Once both seats of a match have decided in its first attempt, each decision from hand 1
    on waits up to :data:`HOLD_S` for ``released``: the first attempt is then still being
    played when a test's kill lands, however late a loaded machine runs the test's check
    (a 6-hand match of 40 ms decisions had finished in between). Below the decision
    deadline, so the wait is never a timeout."""

    HOLD_S = 0.3
    seen: dict[tuple[str, int, int, int], frozenset[Any]] = {}
    starts: dict[tuple[str, int], int] = {}
    lock = threading.Lock()
    released = threading.Event()

    def on_match_start(self, info: Any) -> None:
        with self.lock:
            key = (info.match_id, info.seat)
            self.attempt = self.starts[key] = self.starts.get(key, 0) + 1
            self.where = key

    def act(self, obs: Any) -> Any:
        threading.Event().wait(0.04)
        with self.lock:
            self.seen.setdefault((*self.where, self.attempt, obs.hand_index), frozenset(obs.hand))
            both = {s for (m, s, n, _i) in self.seen if m == self.where[0] and n == 1} == {0, 1}
        if self.attempt == 1 and obs.hand_index >= 1 and both:
            self.released.wait(self.HOLD_S)
        return super().act(obs)


def test_a_gateway_killed_mid_match_has_its_matches_replayed_with_fresh_seeds(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena.bots.owners import create_owner

    with session_scope(sqlite_url) as session:
        tokens = {name: create_owner(session, name)[1] for name in ("alice", "bob")}
    port, relay = free_port(), free_port()
    secret = "secret-of-the-gateway-and-this-worker"
    monkeypatch.setenv("TONK_GATEWAY_SECRET", secret)
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
        "TONK_DATABASE_URL": sqlite_url, "TONK_GATEWAY_PORT": str(port),
        "TONK_GATEWAY_RELAY_PORT": str(relay),
        "TONK_GATEWAY_SECRET": secret, "TONK_SANDBOX_DIR": os.environ["TONK_SANDBOX_DIR"],
        "PYTHONPATH": str(ROOT), "TMPDIR": os.environ["TMPDIR"],  # the run's folder (tests/scratch.py)
    }  # fmt: skip
    log = tmp_path / "gateway.log"

    def gateway() -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            return spawn(
                [str(BIN / "tonk"), "gateway"], env=env, stdout=out, stderr=subprocess.STDOUT
            )

    Watching.released.clear()
    proc = gateway()
    at = types.SimpleNamespace(address=f"127.0.0.1:{port}", tokens=tokens, url=sqlite_url)
    clients: list[Client] = []
    try:
        wait_for("the gateway", lambda: listening(port) and listening(relay), 60)
        for owner, name in (("alice", "one"), ("bob", "two")):
            clients.append(Client(at, owner, name, bot=Watching).wait())  # type: ignore[arg-type]
        ids = [bot_id(at, "one"), bot_id(at, "two")]  # type: ignore[arg-type]
        with session_scope(sqlite_url) as session:
            tournament = create_tournament(
                session, name="kill", bot_ids=ids, table_sizes=[2], deals_per_table=1, hands_per_match=6,
                deal_mode="duplicate", config={"offline_grace_s": 60}, seed=9,
            )  # fmt: skip
            start_tournament(session, tournament.id)
            first = {m.id: (m.seed, m.public_id) for m in
                     session.scalars(select(Match).where(Match.tournament_id == tournament.id))}  # fmt: skip
        assert len(set(seed for seed, _ in first.values())) == 1  # one duplicate deal, two rotations
        outcomes: dict[int, Outcome] = {}
        playing = [threading.Thread(target=lambda m=m: outcomes.__setitem__(
            m, MatchLife(sqlite_url, m, f"test:{m}").play())) for m in first]  # fmt: skip
        for thread in playing:
            thread.start()
        # Both matches a hand or more into their cards, each seat having held cards it decided
        # on (a hand can end before one seat's turn: a tonk on the deal, a drop at once), then
        # the gateway dies at once.
        ours = {public_id for _seed, public_id in first.values()}

        def mid_deal() -> bool:
            seen = list(Watching.seen)
            decided = {(k[0], k[1]) for k in seen if k[2] == 1}
            return {k[0] for k in seen if k[3] >= 1} >= ours and decided >= {
                (m, s) for m in ours for s in range(2)
            }

        wait_for("both matches mid-deal", mid_deal, 60, 0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        Watching.released.set()
        for thread in playing:
            thread.join(60)
        assert outcomes == {m: Outcome.WAITING for m in first}, outcomes  # handed back, not charged
        proc = gateway()
        wait_for("the gateway again", lambda: listening(port) and listening(relay), 60)
        for client in clients:
            client.wait()
        play_all(sqlite_url, list(first))
        with session_scope(sqlite_url) as session:
            after = {
                m.id: m for m in session.scalars(select(Match).where(Match.tournament_id == tournament.id))
            }
            faults = session.scalar(select(func.count(FaultRecord.id)))
            recorded = {m: decode(*session.execute(select(Replay.format, Replay.data).where(
                Replay.match_id == m)).one()) for m in first}  # fmt: skip
    finally:
        Watching.released.set()
        for client in clients:
            client.stop()
        proc.kill()
        proc.wait(10)
    assert faults == 0
    for match_id, (seed, public_id) in first.items():
        match = after[match_id]
        # Killed once, then replayed: a replay whose bot had not linked again by its start is
        # handed back before any card (seed kept) and claimed once more, so 2 or more.
        assert match.status == MatchStatus.DONE and match.attempts >= 2
        assert match.seed != seed  # dealt afresh ...
        # ... from the seed the record keeps (the deal is data: it re-deals exactly) ...
        dealt = HandState.deal(deck_order(match.seed, 0), 2, 0, STANDARD)
        assert [sorted(c.text for c in dealt.hands[s]) for s in range(2)] == [
            sorted(recorded[match_id][0]["hands"][s]) for s in range(2)
        ]
        # ... and no seat holds again a hand it saw in the attempt the kill cut short.
        for seat in range(2):
            held = [(n, h) for (mid, s, n, _i), h in Watching.seen.items() if (mid, s) == (public_id, seat)]
            last = max(attempt for attempt, _h in held)  # the replay that finished the match
            before, again = ({h for attempt, h in held if attempt == n} for n in (1, last))
            assert before and again and not before & again
    # The two rotations no longer share their cards: each replay is a deal of its own.
    assert len({m.seed for m in after.values()}) == 2
