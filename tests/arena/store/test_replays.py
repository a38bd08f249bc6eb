"""Compact replays: every hand comes back exactly as the referee wrote it, in well under
1 KB a hand, from memory and from the store on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import zlib
from collections.abc import Sequence

import pytest
from helpers.arena import CrashBot, IllegalBot, ReversedMelder, hosted_bots, new_tournament
from sqlalchemy import select

from arena.play.plan import load_plan, run_match
from arena.queries.matches import get_match, get_replay
from arena.runtime.jobs import play_match_job
from arena.store import replays
from arena.store.db import session_scope
from arena.store.models import Match
from arena.tournaments.lifecycle import start_tournament
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from sdk.bot import Bot
from sdk.record import HandRecord
from sdk.referee import LocalPlayer, MatchResult, RefereeConfig, play_match
from sdk.rules import Rules


def play(classes: Sequence[type[Bot]], seed: int, hands: int, **options: object) -> MatchResult:
    players = [LocalPlayer(c) for c in classes]
    names = [f"{c.name}{i}" for i, c in enumerate(classes)]
    return play_match(players, seed, hands, names=names, match_id=f"m{seed}", **options)  # type: ignore[arg-type]


def logs_json(result: MatchResult) -> list[dict[str, object]]:
    return [h.to_json() for h in result.hands]


MATCHES = [
    ((RandomBot, RandomBot), 1, {}),
    ((GreedyBot, RandomBot, GreedyBot), 2, {}),
    ((RandomBot, GreedyBot, RandomBot, GreedyBot, RandomBot, GreedyBot), 3, {}),
    ((CrashBot, GreedyBot), 4, {"config": RefereeConfig(max_faults=1000)}),
    ((IllegalBot, RandomBot, CrashBot), 5, {"config": RefereeConfig(max_faults=1000)}),
    ((ReversedMelder, GreedyBot), 6, {}),
    ((GreedyBot, GreedyBot), 7, {"rules": Rules(stock_reshuffle=True, book_layoff=True, turn_cap=60)}),
    ((CrashBot, RandomBot), 8, {"config": RefereeConfig(max_faults=2)}),  # forfeits the rest
]


@pytest.mark.parametrize(("classes", "seed", "options"), MATCHES)
def test_every_hand_decodes_to_the_referees_json(
    classes: Sequence[type[Bot]], seed: int, options: dict[str, object]
) -> None:
    result = play(classes, 2**64 - seed, 60, **options)
    blob = replays.encode_logs(result.hands, seed=result.seed, players=result.players, rules=result.rules)
    decoded = replays.decode(replays.FORMAT, blob)
    assert decoded == logs_json(result)
    for hand in decoded:  # and each is a valid tonk-hand/1 record whose outcome replays
        record = {k: v for k, v in hand.items() if k not in ("latency_us", "faults")}
        assert HandRecord.from_json(record).verify().to_json() == hand["outcome"]
    assert len(blob) / max(1, len(result.hands)) < 1024


def test_the_codec_keeps_faults_meld_order_and_rules() -> None:
    kinds = set()
    reordered = 0
    for classes, seed, options in MATCHES[3:7]:
        result = play(classes, seed, 60, **options)
        kinds |= {f.kind.value for f in result.faults}
        reordered += sum(
            1 for h in logs_json(result) for a in h["actions"]  # type: ignore[attr-defined]
            if "meld" in a and a["meld"] != sorted(a["meld"], key=lambda c: (c[-1], c[:-1]))
        )
        assert replays.decode_replay(
            replays.encode_logs(result.hands, seed=result.seed, players=result.players, rules=result.rules)
        ) == logs_json(result)
    assert {"crash", "illegal"} <= kinds
    assert reordered > 0


def test_hands_from_json_round_trip_with_and_without_the_seed() -> None:
    result = play((GreedyBot, CrashBot, RandomBot), 11, 40, config=RefereeConfig(max_faults=1000))
    hands = logs_json(result)
    fmt, seeded = replays.encode(hands, seed=result.seed)
    assert replays.decode(fmt, seeded) == hands
    fmt, unseeded = replays.encode(hands)  # the deck of each hand is stored instead
    assert replays.decode(fmt, unseeded) == hands
    assert len(seeded) < len(unseeded) < 1024 * len(hands)
    # A wrong seed costs space, never correctness.
    assert replays.decode(*replays.encode(hands, seed=result.seed + 1)) == hands


def test_odd_hands_are_kept_as_they_are() -> None:
    result = play((GreedyBot, RandomBot), 12, 6)
    hands = copy.deepcopy(logs_json(result))
    hands[1]["note"] = "annotated by hand"
    hands[2]["outcome"]["payoffs"] = [7, -7]  # type: ignore[index]  # disagrees with the replay
    hands[3]["custom"] = {"kept": True}
    del hands[4]["latency_us"]
    assert replays.decode(*replays.encode(hands, seed=result.seed)) == hands
    assert replays.decode(*replays.encode([])) == []


def test_corrupt_data_is_refused_by_name() -> None:
    result = play((GreedyBot, RandomBot), 13, 5)
    fmt, blob = replays.encode(logs_json(result), seed=result.seed)
    with pytest.raises(replays.ReplayError, match="unknown replay format 'json'"):
        replays.decode("json", blob)
    with pytest.raises(replays.ReplayError, match="not zlib"):
        replays.decode(fmt, b"garbage")
    raw = zlib.decompress(blob)
    with pytest.raises(replays.ReplayError, match="corrupt replay"):
        replays.decode(fmt, zlib.compress(raw[:-3]))
    with pytest.raises(replays.ReplayError, match="version 9"):
        replays.decode(fmt, zlib.compress(b"\x09" + raw[1:]))


def test_stored_replays_round_trip(db_url: str) -> None:
    """Played by the job, written to the store, read back through arena.queries: identical to
    the same match played again from its plan (same seed, same deals, deterministic bots)."""
    ids = hosted_bots(db_url, ["greedy", "random", "helpers.arena:CrashBot"])
    tid = new_tournament(
        db_url, ids, table_sizes=[3], hands_per_match=25, seed=2**64 - 99, config={"max_faults": 1000}
    )
    with session_scope(db_url) as session:
        start_tournament(session, tid)
        match_id, *siblings = session.scalars(
            select(Match.id).where(Match.tournament_id == tid).order_by(Match.id)
        ).all()
        assert get_replay(session, match_id) is None  # nothing before it is done
        assert get_match(session, match_id).seed is None
    assert play_match_job(match_id, db_url) == "done"
    with session_scope(db_url) as session:  # nor while its deal's other rotations are unplayed
        assert get_replay(session, match_id) is None
        assert get_match(session, match_id).seed is None
    assert [play_match_job(i, db_url) for i in siblings] == ["done"] * len(siblings)
    with session_scope(db_url) as session:
        stored = get_replay(session, match_id)
        plan = load_plan(session, match_id)
        view = get_match(session, match_id)
    again = run_match(plan)
    assert stored is not None

    def timeless(hands: list[dict[str, object]]) -> list[dict[str, object]]:
        return [{k: v for k, v in h.items() if k != "latency_us"} for h in hands]

    assert timeless(stored) == timeless(logs_json(again))  # latencies are measured anew
    assert [len(h["latency_us"]) for h in stored] == [len(h["actions"]) for h in stored]  # type: ignore[arg-type]
    assert view.seed == plan.seed and view.has_replay
    assert view.faults == len(again.faults) == len(view.fault_records) > 0
    assert [s.score for s in view.seats] == again.scores


def test_logs_with_the_wrong_seed_store_their_decks() -> None:
    result = play((GreedyBot, RandomBot), 14, 10)
    options = {"players": result.players, "rules": result.rules}
    right = replays.encode_logs(result.hands, seed=result.seed, **options)  # type: ignore[arg-type]
    wrong = replays.encode_logs(result.hands, seed=result.seed ^ 1, **options)  # type: ignore[arg-type]
    assert replays.decode_replay(right) == replays.decode_replay(wrong) == logs_json(result)
    assert len(wrong) > len(right)


def test_a_matchs_closest_hand_is_its_narrowest_win_on_points() -> None:
    outcomes: list[dict[str, object] | None] = [
        {"end": "out", "totals": [0, 30], "payoffs": [1, -1]},  # won outright: no margin
        {"end": "drop", "totals": [4, 13, 9], "payoffs": [2, -1, -1]},  # 5 points
        None,  # no outcome recorded
        {"end": "stock", "totals": [22, 19], "payoffs": [-1, 1]},  # 3 points
        {"end": "tonk", "totals": [50, 21], "payoffs": [2, -2]},  # a TONK: no margin
        {"end": "cap", "totals": [17, 20, 17], "payoffs": [1, -2, 1]},  # a tie for lowest: 0
        {"end": "drop", "totals": [8, 8], "payoffs": [-2, 2]},  # a later tie: the first stays
    ]
    assert replays.closest_hand(outcomes) == (5, 0)
    assert replays.closest_hand(outcomes[:5]) == (3, 3)
    assert replays.closest_hand(outcomes[:1]) is None and replays.closest_hand([]) is None
