"""Duplicate without the leak: nothing about a deal that a seat could not see reaches its bot
(over real gRPC), a page or an API answer until every match dealt from the same seed is
done; then EndDeal brings the seed and the records, once, to each bot of the deal."""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from flask import Flask
from helpers.arena import grpc_bots, hosted_bots, new_tournament
from sqlalchemy import select

from arena.play import lifecycle
from arena.queries.matches import get_replay
from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import Match
from arena.tournaments.lifecycle import InvalidTournamentError, start_tournament
from bots.greedy import GreedyBot
from sdk.bot import DealSummary, HandResult, MatchInfo, MatchSummary
from sdk.cards import DECK
from sdk.grpc_player import GrpcPlayer
from sdk.observation import Observation, observe
from sdk.record import HandRecord
from sdk.referee import LocalPlayer, play_match, shown_hands
from sdk.server import RunningServer, start_server

TOKEN = "operator-secret-for-tests"  # dashboard_fixtures.OPERATOR_TOKEN

CARD_TEXTS = frozenset(c.text for c in DECK)


class Recorder(GreedyBot):
    """Plays like greedy and keeps every message it is sent (class-level: ``tonk serve``
    makes an instance per match seat, and EndDeal reaches a fresh one)."""

    name = "recorder"
    inbox: ClassVar[list[tuple[str, Any]]] = []
    lock: ClassVar[threading.Lock] = threading.Lock()

    def _keep(self, kind: str, message: Any) -> None:
        with self.lock:
            self.inbox.append((kind, message))

    def on_match_start(self, info: MatchInfo) -> None:
        self._keep("start", info)

    def act(self, obs: Observation) -> Any:
        assert self.match is not None
        self._keep("decide", (self.match.match_id, obs))
        return super().act(obs)

    def on_hand_end(self, result: HandResult) -> None:
        self._keep("hand", result)

    def on_match_end(self, summary: MatchSummary) -> None:
        self._keep("match", summary)

    def on_deal_end(self, deal: DealSummary) -> None:
        self._keep("deal", deal)


@pytest.fixture
def recorder() -> Iterator[RunningServer]:
    Recorder.inbox.clear()
    running = start_server(Recorder)
    yield running
    running.stop(None)


def cards_in(value: Any) -> set[str]:
    """Every card text anywhere in a JSON-like value."""
    if isinstance(value, str):
        return {value} if value in CARD_TEXTS else set()
    if isinstance(value, dict):
        return set().union(*(cards_in(v) for v in value.values())) if value else set()
    if isinstance(value, list | tuple):
        return set().union(*(cards_in(v) for v in value)) if value else set()
    return set()


def visible(record: dict[str, Any], seat: int) -> set[str]:
    """What ``seat`` could see of the hand: every observation it could have been sent while
    it was played, plus the hands the rules show at the end."""
    hand = HandRecord.from_json(record)
    state = hand.initial_state()
    seen: set[str] = set()

    def look() -> None:
        obs = observe(state, seat)
        seen.update(c.text for c in obs.cards_seen())
        seen.update(cards_in(obs.to_json()))

    look()
    for actor, action in hand.actions:
        state.apply(action, actor)
        look()
    seen.update(c.text for shown in shown_hands(state) for c in shown)
    return seen


def leaks(inbox: list[tuple[str, Any]], records: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Everything in the match messages (StartMatch, Decide, EndHand, EndMatch) its seat could
    not see; ``records`` holds each match's full hand records by the match id the bots saw."""
    found = []
    for kind, message in inbox:
        if kind == "decide":
            label, obs = message
            extra = cards_in(obs.to_json()) - visible(records[label][obs.hand_index], obs.seat)
        elif kind == "hand":
            assert message.view is not None
            told = cards_in(message.record) | cards_in(message.view.to_json())
            told |= {c.text for shown in message.shown for c in shown}
            extra = told - visible(records[message.match_id][message.hand_index], message.view.seat)
        elif kind == "match":
            extra = set() if message.seed is None else {f"the seed {message.seed}"}
        else:
            continue
        if extra:
            found.append(f"{kind} of {_match_of(kind, message)}: {sorted(extra)}")
    return found


def _match_of(kind: str, message: Any) -> str | None:
    if kind == "deal":
        return None
    return str(message[0]) if kind == "decide" else str(message.match_id)


def test_a_seat_is_told_only_what_it_saw_over_grpc(recorder: RunningServer) -> None:
    remote = GrpcPlayer(recorder.address)
    try:
        result = play_match([remote, LocalPlayer(GreedyBot)], 2024, 12, match_id="m1",
                            names=["recorder", "greedy"], reveal=False)
    finally:
        remote.close()
    records = {"m1": [log.record.to_json() for log in result.hands]}
    assert leaks(Recorder.inbox, records) == []
    ends = [m for kind, m in Recorder.inbox if kind == "hand"]
    assert len(ends) == 12 and all(m.record == {} and m.record_withheld for m in ends)
    for m in ends:  # the rules' reveal: every hand at a drop or showdown, TONK hands, else none
        assert m.view is not None and m.view.outcome is not None and m.view.phase == "over"
        outcome = m.view.outcome
        expected = {"drop": {0, 1}, "stock": {0, 1}, "cap": {0, 1}, "tonk": set(outcome.winners)}
        assert {s for s, cards in enumerate(m.shown) if cards} == expected.get(outcome.end, set())
    assert {m.view.outcome.end for m in ends if m.view and m.view.outcome} >= {"drop"}
    assert [m.seed for kind, m in Recorder.inbox if kind == "match"] == [None]

    # The check can fail: revealing, as the referee did before, leaks the stock order.
    Recorder.inbox.clear()
    remote = GrpcPlayer(recorder.address)
    try:
        play_match([remote, LocalPlayer(GreedyBot)], 2024, 12, match_id="m1",
                   names=["recorder", "greedy"], reveal=True)
    finally:
        remote.close()
    assert len(leaks(Recorder.inbox, records)) == 13  # every EndHand, and EndMatch's seed


def _play(url: str, match_ids: list[int]) -> None:
    for match_id in match_ids:
        assert play_match_job(match_id, url) == "done"


def _started(url: str, address: str, **options: Any) -> tuple[int, list[Match]]:
    ids = grpc_bots(url, {"recorder": address}) + hosted_bots(url, ["greedy", "random"])
    # Duplicate, explicitly: under ``auto`` a dialled bot's tables are dealt independently.
    tid = new_tournament(url, ids, **{"deal_mode": "duplicate", **options})
    with session_scope(url) as session:
        start_tournament(session, tid)
        matches = list(session.scalars(select(Match).where(Match.tournament_id == tid).order_by(Match.id)))
        session.expunge_all()
    return tid, matches


@pytest.mark.slow  # a whole tournament of served bots on each store
def test_tournament_bots_hear_the_deal_only_when_it_is_done(
    db_url: str, recorder: RunningServer
) -> None:
    _, matches = _started(
        db_url, recorder.address, table_sizes=[2, 3], deals_per_table=2, hands_per_match=4
    )
    # Rotations of one deal far apart: every deal is still open while others are played.
    order = sorted(matches, key=lambda m: (m.rotation, m.table_index, m.deal_index))
    _play(db_url, [m.id for m in order])
    labels = [m.public_id or "" for m in matches]
    assert len(set(labels)) == len(labels) and all(re.fullmatch(r"[0-9a-f]{20}", x) for x in labels)

    records: dict[str, list[dict[str, Any]]] = {}
    with session_scope(db_url) as session:
        for match in matches:
            hands = get_replay(session, match.id)
            assert hands is not None  # every deal is done now
            records[match.public_id or ""] = [
                {k: v for k, v in h.items() if k not in ("latency_us", "faults")} for h in hands
            ]
    assert leaks(Recorder.inbox, records) == []
    assert all(m.record_withheld for kind, m in Recorder.inbox if kind == "hand")

    deals: dict[int, list[Match]] = {}
    for match in matches:
        deals.setdefault(match.seed, []).append(match)
    mine = {seed: ms for seed, ms in deals.items() if any(m.table_index in (0, 1, 3) for m in ms)}
    notices = [(i, m) for i, (kind, m) in enumerate(Recorder.inbox) if kind == "deal"]
    assert sorted(d.seed for _, d in notices) == sorted(mine)  # once per deal it played
    for position, deal in notices:
        assert deal.seed is not None
        siblings = deals[deal.seed]
        # after every match of the deal, and with every hand of each, as stored
        ids = {m.public_id for m in siblings}
        assert position > max(i for i, (kind, m) in enumerate(Recorder.inbox) if _match_of(kind, m) in ids)
        assert {m.match_id for m in deal.matches} == {m.public_id for m in siblings}
        for told in deal.matches:
            assert list(told.records) == records[told.match_id] and not told.records_omitted
            assert told.players[told.seats[0]] == "recorder"


def test_pages_and_api_hide_a_deal_until_every_rotation_is_done(
    db_url: str, recorder: RunningServer, app_factory: Any
) -> None:
    tid, matches = _started(db_url, recorder.address, table_sizes=[2], deals_per_table=1, hands_per_match=3)
    first, second = [m for m in matches if m.table_index == 0]
    _play(db_url, [first.id])
    app: Flask = app_factory(db_url)
    client = app.test_client()
    detail = client.get(f"/api/v1/matches/{first.id}").get_json()["match"]
    assert detail["status"] == "done" and all(seat["score"] is not None for seat in detail["seats"])
    hidden = (detail["seed"], detail["public_id"], detail["replay"], detail["deal_done"])
    assert hidden == (None, None, False, False)
    for path in ("replay", "hands/0", "hands/0/decisions/0"):
        response = client.get(f"/api/v1/matches/{first.id}/{path}")
        assert response.status_code == 409, (path, response.status_code)
        assert "every match of its deal" in response.get_json()["error"]["message"]
    listed = client.get(f"/api/v1/matches?tournament={tid}&status=done").get_json()["matches"]
    assert [(m["id"], m["deal_done"]) for m in listed] == [(first.id, False)]
    html = client.get(f"/matches/{first.id}").get_data(as_text=True)
    assert 'id="viewer"' not in html and "seed <code>" not in html and str(first.public_id) not in html
    assert "published when every match of its deal is done" in html
    assert f'/matches/{first.id}#viewer' not in client.get("/matches/").get_data(as_text=True)

    _play(db_url, [second.id])
    detail = client.get(f"/api/v1/matches/{first.id}").get_json()["match"]
    assert (detail["seed"], detail["public_id"], detail["replay"]) == (first.seed, first.public_id, True)
    assert client.get(f"/api/v1/matches/{first.id}/replay").status_code == 200
    assert client.get(f"/api/v1/matches/{first.id}/hands/0/decisions/0").status_code == 200
    assert 'id="viewer"' in client.get(f"/matches/{first.id}").get_data(as_text=True)


def test_independent_deals_give_every_match_its_own_cards(
    db_url: str, recorder: RunningServer, app_factory: Any
) -> None:
    tid, matches = _started(
        db_url, recorder.address, table_sizes=[2], deals_per_table=1, hands_per_match=3,
        deal_mode="independent",
    )
    assert len({m.seed for m in matches}) == len(matches) == 6
    first = next(m for m in matches if m.table_index == 0)
    _play(db_url, [first.id])
    # A deal of its own: revealed at once, to the bots and on the pages.
    ends = [m for kind, m in Recorder.inbox if kind == "hand"]
    assert ends and all(m.record and not m.record_withheld for m in ends)
    assert [m.seed for kind, m in Recorder.inbox if kind == "match"] == [first.seed]
    assert [d.seed for kind, d in Recorder.inbox if kind == "deal"] == [first.seed]
    client = app_factory(db_url).test_client()
    assert client.get(f"/api/v1/matches/{first.id}/replay").status_code == 200
    detail = client.get(f"/api/v1/tournaments/{tid}").get_json()["tournament"]
    assert detail["deal_mode"] == "independent"
    assert "fresh cards for every match" in client.get(f"/tournaments/{tid}").get_data(as_text=True)


def test_a_deal_mode_that_does_not_exist_is_refused(db_url: str, app_factory: Any) -> None:
    ids = hosted_bots(db_url, ["greedy", "random"])
    with pytest.raises(InvalidTournamentError, match="'shuffled' is not one of auto, duplicate, independent"):
        new_tournament(db_url, ids, deal_mode="shuffled")
    client = app_factory(db_url).test_client()
    spec = {"name": "Cup", "bots": ["greedy", "random"], "table_sizes": [2], "deals_per_table": 1,
            "hands_per_match": 3, "deal_mode": "shuffled"}
    response = client.post("/api/v1/tournaments", json=spec, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code in (400, 422) and "shuffled" in response.get_json()["error"]["message"]
    spec["deal_mode"] = 3
    response = client.post("/api/v1/tournaments", json=spec, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 400
    assert "'deal_mode' must be a str" in response.get_json()["error"]["message"]
    with session_scope(db_url) as session:
        assert session.scalars(select(Match.id)).first() is None  # nothing was created


def test_a_deal_is_claimed_for_its_notice_once_and_only_when_complete(db_url: str) -> None:
    from arena.play.deal_end import claim_reveal

    ids = hosted_bots(db_url, ["greedy", "random"])
    tid = new_tournament(db_url, ids, table_sizes=[2], deals_per_table=1, hands_per_match=2)
    with session_scope(db_url) as session:
        start_tournament(session, tid)
        first, second = session.scalars(select(Match).where(Match.tournament_id == tid).order_by(Match.id))
        seed, ids_ = first.seed, [first.id, second.id]
    assert play_match_job(ids_[0], db_url) == "done"
    with session_scope(db_url) as session:
        assert not claim_reveal(session, tid, seed)  # a rotation is still to be played
    assert play_match_job(ids_[1], db_url) == "done"  # its worker claimed the notice
    with session_scope(db_url) as session:
        assert not claim_reveal(session, tid, seed)
        stamped = session.scalars(select(Match.deal_revealed_at).where(Match.tournament_id == tid)).all()
        assert len(stamped) == 2 and all(stamped)


def test_upgrading_gives_unplayed_matches_opaque_ids(empty_db_url: str) -> None:
    from sqlalchemy import MetaData, create_engine, insert, pool, text

    from arena.store import migrate
    from arena.tournaments.layout import public_match_id

    assert migrate.migrate(empty_db_url, "0002") == "0002"
    engine = create_engine(empty_db_url, poolclass=pool.NullPool)
    meta = MetaData()
    meta.reflect(engine)
    big = 2**64 - 5  # stored as a negative number
    now = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
    common = {"tournament_id": 1, "table_index": 0, "deal_index": 0, "seed": big - 2**64, "hands": 3,
              "attempts": 0, "hands_played": 0, "decisions": 0, "faults": 0, "created_at": now}
    with engine.begin() as c:
        c.execute(insert(meta.tables["tournaments"]).values(
            id=1, name="old", seed=big - 2**64, status="running", table_sizes=[2], matches_per_table=1,
            hands_per_match=3, rules={}, config={}, created_at=now))  # fmt: skip
        c.execute(insert(meta.tables["matches"]), [
            {**common, "id": 1, "key": "t0/d0/r0", "rotation": 0, "status": "done", "label": "x-t0-d0-r0"},
            {**common, "id": 2, "key": "t0/d0/r1", "rotation": 1, "status": "pending", "label": "x-t0-d0-r1"},
        ])  # fmt: skip
    try:
        migrate.migrate(empty_db_url)
        with engine.connect() as c:
            rows = c.execute(text("SELECT id, public_id FROM matches"))
            labels: dict[int, str] = {i: label for i, label in rows}
            mode = c.execute(text("SELECT deal_mode FROM tournaments")).scalar_one()
    finally:
        engine.dispose()
    assert labels == {1: "x-t0-d0-r0", 2: public_match_id(big, "t0/d0/r1")}  # the played one keeps its id
    assert mode == "duplicate"


def test_the_command_line_creates_independent_deals(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sdk.cli import main as tonk

    hosted_bots(sqlite_url, ["random", "greedy"])
    monkeypatch.setenv("TONK_DATABASE_URL", sqlite_url)
    create = ["tournament", "create", "--name", "cli", "--bots", "random,greedy", "--tables", "2",
              "--deals", "3", "--hands", "2"]
    assert tonk([*create, "--deal-mode", "independent"]) == 0
    assert "tournament 1 created: 6 matches" in capsys.readouterr().out
    assert tonk(["tournament", "status", "1"]) == 0
    assert "3 independent deals per table" in capsys.readouterr().out
    with session_scope(sqlite_url) as session:
        assert len(set(session.scalars(select(Match.seed)).all())) == 6
    code: object
    try:
        code = tonk([*create, "--deal-mode", "shuffled"])
    except SystemExit as exc:  # argparse's own exit
        code = exc.code
    assert code == 2 and "'shuffled'" in capsys.readouterr().err


class _WorkerDiedError(BaseException):
    """A worker killed between recording a deal's last match and claiming its EndDeal."""


def test_a_deal_whose_worker_died_before_its_notice_is_revealed_by_the_sweep(
    db_url: str, recorder: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EndDeal goes out once even when the worker recording the deal's last match dies before
    it sends it: the tournament is not finished yet (the notice comes first), so the sweep of
    running tournaments finds the deal done and unstamped and sends it through the same claim."""
    from helpers.arena import InlineBackend

    from arena.play.deal_end import overdue_deals
    from arena.runtime.driver import Sweeper
    from arena.store.models import Tournament

    tid, matches = _started(db_url, recorder.address, table_sizes=[2], deals_per_table=1, hands_per_match=2)
    mine = next(m for m in matches if m.table_index == 0)  # recorder sits at table 0
    last = max((m for m in matches if m.seed == mine.seed), key=lambda m: m.rotation)
    _play(db_url, [m.id for m in matches if m.id != last.id])

    def die(*_args: Any) -> int:
        raise _WorkerDiedError

    monkeypatch.setattr(lifecycle, "reveal_if_complete", die)
    with pytest.raises(_WorkerDiedError):
        play_match_job(last.id, db_url)
    monkeypatch.undo()
    told = [d.seed for kind, d in Recorder.inbox if kind == "deal"]
    assert mine.seed not in told  # the notice died with its worker
    with session_scope(db_url) as session:
        assert session.get(Match, last.id).status == "done"  # type: ignore[union-attr]
        assert session.get(Tournament, tid).status == "running"  # type: ignore[union-attr]
        assert overdue_deals(session, tid) == [mine.seed]

    sweeper = Sweeper(db_url, lambda: InlineBackend(db_url))
    sweeper.sweep()
    told = [d.seed for kind, d in Recorder.inbox if kind == "deal"]
    assert told.count(mine.seed) == 1
    deal = next(d for kind, d in Recorder.inbox if kind == "deal" and d.seed == mine.seed)
    assert {m.match_id for m in deal.matches} == {m.public_id for m in matches if m.seed == mine.seed}
    with session_scope(db_url) as session:
        assert overdue_deals(session, tid) == []
        assert session.get(Tournament, tid).status == "finished"  # type: ignore[union-attr]
    sweeper.sweep()  # nothing left to send: once
    assert [d.seed for kind, d in Recorder.inbox if kind == "deal"].count(mine.seed) == 1


def test_the_driver_sends_a_deal_notice_its_worker_never_claimed(
    db_url: str, recorder: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tonk tournament run`'s driver looks for done deals nobody revealed, as the sweep does,
    and once more when the tournament ends."""
    from helpers.arena import InlineBackend

    from arena.runtime.driver import run_tournament

    tid, matches = _started(db_url, recorder.address, table_sizes=[2], deals_per_table=1, hands_per_match=2)
    seeds = {m.seed for m in matches if m.table_index == 0}
    sent = lifecycle.reveal_if_complete

    def lost_for_table_0(url: str, plan: Any, hosted: Any = None) -> int:
        return 0 if plan.seed in seeds else sent(url, plan, hosted)  # that worker "died" first

    monkeypatch.setattr(lifecycle, "reveal_if_complete", lost_for_table_0)
    run_tournament(db_url, tid, InlineBackend(db_url))  # type: ignore[arg-type]
    told = [d.seed for kind, d in Recorder.inbox if kind == "deal"]
    assert sorted(s for s in told if s in seeds) == sorted(seeds)  # each once, from the driver
