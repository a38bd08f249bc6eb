"""A bot's versions, each with its own rating and record, on its page, in the API and in
`tonk bot` (issue #27: "the page shows the history of versions with theirs"), and a new
version shown as such ("v3 · new") on the leaderboard until it has played."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from helpers.arena import new_tournament
from sqlalchemy import select

from arena.bots.owners import get_or_create_operator
from arena.bots.registry import host_bot
from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import Match
from arena.tournaments.lifecycle import start_tournament
from sdk import cli

OPTIONS: dict[str, Any] = {
    "table_sizes": [2, 3], "deals_per_table": 4, "hands_per_match": 6, "config": {"max_faults": 100},
}


def host(url: str, name: str, spec: str) -> int:
    with session_scope(url) as session:
        return host_bot(session, get_or_create_operator(session, "house"), name, spec, check=False).id


def cup(url: str, name: str, seed: int, bots: list[int]) -> None:
    tid = new_tournament(url, bots, name=name, seed=seed, **OPTIONS)
    with session_scope(url) as session:
        start_tournament(session, tid)
        ids = session.scalars(select(Match.id).where(Match.tournament_id == tid).order_by(Match.id)).all()
    for match_id in ids:
        assert play_match_job(match_id, url) == "done"


def test_the_page_api_and_cli_show_every_version_with_its_own_rating(
    writable_url: str, app_factory: Callable[..., Flask], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    url = writable_url
    rivals = [host(url, "random", "random"), host(url, "greedy", "greedy")]
    mine = host(url, "mine", "helpers.arena:CrashBot")  # v1 faults every 7th decision
    cup(url, "v1 cup", 21, [*rivals, mine])
    host(url, "mine", "heuristic")  # v2
    cup(url, "v2 cup", 22, [*rivals, mine])
    client = app_factory(url).test_client()

    def get(path: str) -> Any:
        response = client.get(path)
        assert response.status_code == 200, (path, response.data[:300])
        return response.get_json() if response.mimetype == "application/json" else response.get_data(True)

    bot = get("/api/v1/bots/mine")["bot"]
    v2, v1 = bot["versions"]  # newest first
    assert (v2["number"], v2["current"], v1["number"], v1["current"]) == (2, True, 1, False)
    assert v2["rating"]["elo"] > v1["rating"]["elo"] + 100  # rated apart, not pooled
    assert bot["rating"] == v2["rating"] and bot["current_version"]["new"] is False
    assert v1["record"]["matches"] == v2["record"]["matches"] == bot["record"]["matches"] // 2
    assert v1["record"]["faults"] > 0 == v2["record"]["faults"]
    assert [h["version"] for h in bot["history"]] == [1, 2]
    assert {"number", "hosted", "connected", "uploaded", "info", "created_at"} <= set(v1)  # only grew

    host(url, "mine", "greedy")  # v3, not played yet: the bot is unrated until it has
    bot = get("/api/v1/bots/mine")["bot"]
    assert [v["number"] for v in bot["versions"]] == [3, 2, 1] and bot["versions"][0]["current"]
    assert bot["rating"] is None and bot["rank"] is None and bot["versions"][0]["rating"] is None
    previous = {"number": 2, "rating": v2["rating"]}
    assert bot["current_version"] == {"number": 3, "new": True, "previous": previous}
    row = next(r for r in get("/api/v1/leaderboard")["leaderboard"] if r["bot"] == "mine")
    assert row["rating"] is None and row["version"]["new"] and row["version"]["number"] == 3
    assert row["matches"] == v1["record"]["matches"] * 2  # the bot's record: every version's

    page = get("/bots/mine")
    assert "v3 · new" in page
    versions = page.split('<table class="versions">', 1)[1].split("</table>", 1)[0]
    assert re.findall(r'data-version="(\d+)"', versions) == ["3", "2", "1"]
    assert versions.count('class="tag">current<') == 1
    for v in (v1, v2):  # each version's own rating, as the rating macro shows it
        assert f'<span class="elo">{v["rating"]["elo"]:,.0f}</span>' in versions
    assert "v3 · new" in get("/")

    monkeypatch.setenv("TONK_DATABASE_URL", url)
    monkeypatch.delenv("TONK_ARENA", raising=False)
    capsys.readouterr()
    assert cli.main(["bot", "mine"]) == 0
    out = capsys.readouterr().out
    assert "rating: none yet: v3 is new (each version is rated apart)" in out
    lines = {line.split()[0]: line for line in out.splitlines() if re.match(r"  v\d ", line)}
    assert set(lines) == {"v1", "v2", "v3"}
    assert v2["rating"]["text"] in lines["v2"] and v1["rating"]["text"] in lines["v1"]
    assert lines["v3"].split()[1] == "new" and lines["v3"].endswith("(current)")
