"""A golden tournament: a fixed seed, the house bots hosted in-process, played through the
arena's own match job, gives the same hands and the same scores as when the golden file was
written (tests/golden/tournaments/seed-20261202.json), under the tests' fixed arena deal
secret (helpers.arena.TEST_DEAL_SECRET).

It pins what a refactoring must not change: the deals, the seating, the public match ids
the bots see (and seed their choices with), the referee's verdicts and the replays. The
file holds every match's scores and a digest of every hand exported as tonk-hand/1 lines.
After a change made on purpose,
``TONK_UPDATE_GOLDEN=1 pytest tests/arena/tournaments/test_golden_tournament.py`` writes it
again; review the diff.
"""

from __future__ import annotations

import hashlib
import json
import os

from helpers.arena import InlineBackend, hosted_bots, new_tournament, scores_by_key
from helpers.paths import TESTS

from arena.queries.export import hand_lines
from arena.runtime.driver import run_tournament
from arena.store.db import dispose_engines, session_scope

GOLDEN = TESTS / "golden" / "tournaments" / "seed-20261202.json"


def play(url: str) -> dict[str, object]:
    bots = hosted_bots(url, ["random", "greedy", "heuristic"])
    tid = new_tournament(url, bots, table_sizes=[2, 3], deals_per_table=2, hands_per_match=6, seed=20261202)
    progress = run_tournament(url, tid, InlineBackend(url))
    assert progress.unfinished == 0
    with session_scope(url) as session:
        lines = list(hand_lines(session, tournament_id=tid))
    return {
        "seed": 20261202,
        "hands": len(lines),
        "hands_sha256": hashlib.sha256("".join(lines).encode()).hexdigest(),
        "scores": dict(sorted(scores_by_key(url, tid).items())),
    }


def test_the_golden_tournament_plays_the_same(sqlite_url: str) -> None:
    try:
        played = play(sqlite_url)
    finally:
        dispose_engines()
    if os.environ.get("TONK_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(played, indent=1) + "\n")
    assert played == json.loads(GOLDEN.read_text())
