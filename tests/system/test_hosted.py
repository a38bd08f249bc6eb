"""Hostile uploads in real tournaments: each hostile bot, uploaded and hosted, plays a
round-robin beside honest bots (two house bots in-process and an honest upload in its own
sandbox), on real worker processes. For each: every attempt fails (seen from outside where
it can be, and in what the bot printed), a bot broken by its own attack is charged the
fault, the tournament finishes with every match counted once, the honest bots' matches
replay to the same results without it, and nothing is left running (tests/leakcheck.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.arena import counted_once, hosted_bots, new_tournament
from helpers.net import loopback_listener
from helpers.sandbox import requires_bwrap
from helpers.uploads import HOSTILE, write_project
from sqlalchemy import select

from arena.bots.builds import bundle_cache, fetch_bundle
from arena.bots.owners import create_owner
from arena.bots.uploaded import submit_upload
from arena.config import load_settings
from arena.play.plan import load_plan, run_match
from arena.runtime.backends import EmbeddedBackend
from arena.runtime.driver import run_tournament
from arena.store.db import session_scope
from arena.store.models import Bot, FaultRecord, Match, MatchLog, MatchSeat, Tournament
from sdk.packing import pack

pytestmark = [
    pytest.mark.slow,
    requires_bwrap,
]

PLANTED = "planted-secret-" + os.urandom(8).hex()
#: The attacks that break the bot itself: its seat faults (it never starts serving).
BREAKS_ITSELF = {"forkbomb", "hog"}


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    with loopback_listener() as served:
        yield served


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_a_hostile_upload_changes_nothing_for_the_honest_bots(
    attack: str,
    tmp_path: Path,
    sqlite_url: str,
    listener: tuple[int, list[object]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TONK_TEST_PLANTED_SECRET", PLANTED)  # in every worker's environment
    monkeypatch.setenv("TONK_SANDBOX_PROCESSES", "48")
    monkeypatch.setenv("TONK_SANDBOX_MEMORY_MB", "512")
    monkeypatch.setenv("TONK_SANDBOX_TMP_MB", "16")
    port, accepted = listener
    store_file = Path(sqlite_url.split("///", 1)[1])
    settings = load_settings()
    house = hosted_bots(sqlite_url, ["random", "greedy"])
    with session_scope(sqlite_url) as session:
        alice, _ = create_owner(session, "alice")
        mallory, _ = create_owner(session, "mallory")
        honest = submit_upload(
            session, alice, "tiny", pack(write_project(tmp_path, "tiny")), settings=settings
        )
        victim = fetch_bundle(session, honest.versions[-1].build_id or 0, bundle_cache(settings))
        body = HOSTILE[attack].format(
            store=store_file, victim=victim / "code" / "bot_tiny.py", port=port,
            secret_a=PLANTED[:10], secret_b=PLANTED[10:],
        )  # fmt: skip
        # Entered without running it: a bot that behaves at admission and attacks later.
        hostile = submit_upload(
            session,
            mallory,
            attack,
            pack(write_project(tmp_path, attack, body)),
            settings=settings,
            check=False,
        )
        honest_id, hostile_id = honest.id, hostile.id
    victim_before = {p: p.read_bytes() for p in victim.rglob("*") if p.is_file()}
    store_size = store_file.stat().st_size

    tid = new_tournament(sqlite_url, [*house, honest_id, hostile_id], hands_per_match=3, seed=77)
    backend = EmbeddedBackend(sqlite_url, 2)
    try:
        progress = run_tournament(sqlite_url, tid, backend, poll_s=0.2)
    finally:
        backend.close()

    assert progress.failed == 0 and progress.done == progress.total
    counted_once(sqlite_url, tid)
    assert accepted == []
    assert {p: p.read_bytes() for p in victim.rglob("*") if p.is_file()} == victim_before
    assert store_file.stat().st_size >= store_size  # the store is still the arena's (not truncated)
    with session_scope(sqlite_url) as session:
        assert session.get(Tournament, tid).status == "finished"  # type: ignore[union-attr]
        logs = session.scalars(select(MatchLog.text).where(MatchLog.bot_id == hostile_id)).all()
        faults = session.execute(
            select(FaultRecord.kind, FaultRecord.reason).where(
                FaultRecord.bot_id == hostile_id, FaultRecord.kind != "slow"
            )
        ).all()
        honest_faults = session.execute(
            select(FaultRecord.bot_id, FaultRecord.kind, FaultRecord.reason).where(
                FaultRecord.bot_id != hostile_id, FaultRecord.kind != "slow"
            )
        ).all()
        hostile_matches = set(
            session.scalars(select(MatchSeat.match_id).where(MatchSeat.bot_id == hostile_id))
        )
        honest_matches = [
            m
            for m in session.scalars(select(Match.id).where(Match.tournament_id == tid))
            if m not in hostile_matches
        ]
    assert honest_faults == []
    printed = "\n".join(logs)
    assert "SUCCEEDED" not in printed, printed
    if attack in BREAKS_ITSELF:
        assert faults and {kind for kind, _ in faults} == {"unreachable"}, faults
        assert "did not start" in faults[0][1]
        # and the fault says which wall it hit (#37), not just "unreachable"
        named = {"forkbomb": "process limit", "hog": "out of memory"}[attack]
        assert faults[0][1].startswith(f"sandbox limit: {named} ("), faults[0][1]
    else:
        assert faults == [], faults
        assert "ATTACK" in printed and "blocked" in printed
    # The honest bots' matches, played again now with no hostile bot anywhere, end the same.
    for match_id in honest_matches:
        with session_scope(sqlite_url) as session:
            plan = load_plan(session, match_id)
            stored = list(
                session.scalars(
                    select(MatchSeat.score).where(MatchSeat.match_id == match_id).order_by(MatchSeat.seat)
                )
            )
        assert run_match(plan).scores == stored, f"match {match_id}"
    with session_scope(sqlite_url) as session:
        assert session.get(Bot, honest_id) is not None
