"""The dashboard's read API (/api/v1) on SQLite and PostgreSQL: what it shows, what it
hides until a match is done, and clean 4xx JSON for every bad id or parameter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded
from flask.testing import FlaskClient
from google.protobuf import json_format
from helpers.arena import TEST_DEAL_SECRET

from arena.tournaments.layout import keyed_seed
from sdk.messages import decision_from_proto, decision_to_proto
from sdk.protocol import bot_pb2 as pb
from sdk.record import HandRecord
from sdk.wire import encode_decide_request


def get_json(client: FlaskClient, url: str, status: int = 200) -> Any:
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code, response.data[:300])
    assert response.mimetype == "application/json", (url, response.mimetype)
    return response.get_json()


def assert_error(client: FlaskClient, url: str, status: int, code: str | None = None) -> dict[str, Any]:
    body = get_json(client, url, status)
    assert set(body) == {"error"} and body["error"]["message"], body
    if code is not None:
        assert body["error"]["code"] == code, body
    return body


# --- leaderboard and bots -------------------------------------------------------------------


def test_leaderboard_ranks_rated_bots_with_intervals_then_unrated(client: FlaskClient) -> None:
    rows = get_json(client, "/api/v1/leaderboard")["leaderboard"]
    rated = [r for r in rows if r["rating"]]
    assert [r["rank"] for r in rated] == list(range(1, len(rated) + 1))
    assert {r["bot"] for r in rated} == {"random", "lowball", "flaky"}
    elos = [r["rating"]["elo"] for r in rated]
    assert elos == sorted(elos, reverse=True)
    for r in rated:
        assert r["rating"]["low"] < r["rating"]["elo"] < r["rating"]["high"]
        assert r["rating"]["provisional"] is True  # a handful of matches each
        assert r["matches"] > 0 and r["hands"] > 0
        assert 0 <= r["win_rate"] <= 1
        assert isinstance(r["chips_per_100"], float)
    assert sum(r["chips"] for r in rated) == 0  # zero-sum
    assert next(r for r in rows if r["bot"] == "flaky")["faults"] > 0
    assert rows[-1] == {**rows[-1], "bot": "croaker", "rank": None, "rating": None, "matches": 0}


def test_bots_list_and_detail(client: FlaskClient) -> None:
    bots = {b["name"]: b for b in get_json(client, "/api/v1/bots")["bots"]}
    assert set(bots) == {"random", "lowball", "flaky", "croaker"}
    assert bots["croaker"]["owner"] == "alice" and not bots["croaker"]["hosted"]
    low = get_json(client, "/api/v1/bots/lowball")["bot"]
    assert low["rank"] >= 1 and low["rating"]["elo"] > 0
    # Two finished tournaments, two snapshots, in finishing order.
    assert [h["tournament"]["name"] for h in low["history"]] == ["Spring Open", "Winter Classic"]
    opponents = {h["opponent"]: h for h in low["head_to_head"]}
    assert set(opponents) == {"random", "flaky"}
    for h in opponents.values():
        assert h["wins"] + h["draws"] + h["losses"] == h["matches"] > 0
    assert low["versions"][0]["number"] == 1 and low["versions"][0]["hosted"].endswith(":LowBot")
    flaky = get_json(client, "/api/v1/bots/flaky")["bot"]
    assert flaky["faults"]["total"] > 0 and flaky["faults"]["by_kind"] == {"crash": flaky["faults"]["total"]}
    assert flaky["faults"]["recent"][0]["reason"].startswith("RuntimeError")
    assert flaky["record"]["faults"] == flaky["faults"]["total"]



def test_the_api_doc_names_every_field_of_a_bots_versions(client: FlaskClient) -> None:
    # `versions[].connected` read as "online now" (it is how the version plays): the doc says.
    from helpers.paths import ROOT

    doc = (ROOT / "docs" / "dashboard.md").read_text()
    (row,) = [line for line in doc.splitlines() if line.startswith("| `GET /bots/<name>` |")]
    versions = row.split("`versions` (", 1)[1]
    low = get_json(client, "/api/v1/bots/lowball")["bot"]
    for key in low["versions"][0]:
        assert f"`{key}`" in versions, key
    assert "not whether it is online now" in versions and "`link.online`" in versions


@pytest.mark.parametrize("name, status", [("nobody", 404), ("bad name!", 400), ("x" * 80, 400)])
def test_unknown_or_invalid_bot(client: FlaskClient, name: str, status: int) -> None:
    assert_error(client, f"/api/v1/bots/{name}", status)


# --- tournaments ----------------------------------------------------------------------------


def test_tournament_list_paging_and_status_filter(client: FlaskClient, seeded: Seeded) -> None:
    data = get_json(client, "/api/v1/tournaments")
    assert [t["name"] for t in data["tournaments"]] == ["Summer Cup", "Winter Classic", "Spring Open"]
    assert data["total"] == 3 and data["pages"] == 1
    finished = get_json(client, "/api/v1/tournaments?status=finished")["tournaments"]
    assert {t["name"] for t in finished} == {"Spring Open", "Winter Classic"}
    assert all(t["progress"]["percent"] == 100.0 for t in finished)
    page = get_json(client, "/api/v1/tournaments?per_page=2&page=2")
    assert [t["name"] for t in page["tournaments"]] == ["Spring Open"] and page["pages"] == 2


def test_tournament_detail_hides_the_seed_until_finished(client: FlaskClient, seeded: Seeded) -> None:
    spring = get_json(client, f"/api/v1/tournaments/{seeded.tournaments['spring']}")["tournament"]
    # The seed shown is the one dealt: the seed given keyed with the arena's deal secret.
    assert spring["status"] == "finished" and spring["seed"] == keyed_seed(TEST_DEAL_SECRET, 20260401)
    assert spring["progress"]["matches"] == {"pending": 0, "running": 0, "done": 12, "failed": 0, "total": 12}
    assert {e["bot"] for e in spring["entries"]} == {"random", "lowball", "flaky"}
    summer = get_json(client, f"/api/v1/tournaments/{seeded.tournaments['summer']}")["tournament"]
    assert summer["status"] == "running" and summer["seed"] is None
    progress = summer["progress"]["matches"]
    assert (progress["done"], progress["running"], progress["failed"]) == (1, 1, 1)


def test_pairwise_matrix_and_tables(client: FlaskClient, seeded: Seeded) -> None:
    spring = get_json(client, f"/api/v1/tournaments/{seeded.tournaments['spring']}")["tournament"]
    matrix = spring["matrix"]
    assert matrix["bots"] == ["flaky", "lowball", "random"]
    for a in matrix["bots"]:
        for b in matrix["bots"]:
            if a == b:
                assert b not in matrix["cells"].get(a, {})
                continue
            ab, ba = matrix["cells"][a][b], matrix["cells"][b][a]
            assert ab["score"] + ba["score"] == pytest.approx(1.0)
            assert ab["matches"] == ba["matches"] and ab["chips"] == -ba["chips"]
            assert 0 <= ab["p"] <= 1 and ab["level"] in ("strong", "significant", "none")
    # Three 2-seat tables (both orders each) and one 3-seat table (all 6 orders).
    tables = spring["tables"]
    assert [t["matches"]["total"] for t in tables] == [2, 2, 2, 6]
    assert all(len(t["results"]) == 2 for t in tables[:3]) and len(tables[3]["results"]) == 3
    assert sum(s["chips"] for s in spring["standings"]) == 0


def test_progress_endpoint(client: FlaskClient, seeded: Seeded) -> None:
    p = get_json(client, f"/api/v1/tournaments/{seeded.tournaments['summer']}/progress")["progress"]
    assert p["status"] == "running" and p["matches"]["total"] == 6
    assert 0 < p["percent"] < 100 and p["hands_played"] <= p["hands_planned"]


# --- matches --------------------------------------------------------------------------------


def test_match_list_filters_and_paging(client: FlaskClient, seeded: Seeded) -> None:
    everything = get_json(client, "/api/v1/matches?per_page=100")
    assert everything["total"] == 12 + 6 + 6  # spring (3 x 2 + 6), winter (6), summer (3 x 2)
    ids = [m["id"] for m in everything["matches"]]
    assert ids == sorted(ids, reverse=True)
    mine = get_json(client, "/api/v1/matches?bot=croaker&per_page=100")["matches"]
    assert mine and all("croaker" in [s["bot"] for s in m["seats"]] for m in mine)
    done = get_json(client, f"/api/v1/matches?status=done&tournament={seeded.tournaments['summer']}")
    assert done["total"] == 1 and done["matches"][0]["status"] == "done"
    pending = get_json(client, "/api/v1/matches?status=pending&per_page=100")["matches"]
    assert pending and all(s["score"] is None for m in pending for s in m["seats"])
    first = get_json(client, "/api/v1/matches?per_page=4&page=1")
    second = get_json(client, "/api/v1/matches?per_page=4&page=2")
    assert first["pages"] == 6 and len(second["matches"]) == 4
    assert not {m["id"] for m in first["matches"]} & {m["id"] for m in second["matches"]}
    beyond = get_json(client, "/api/v1/matches?page=99")
    assert beyond["matches"] == [] and beyond["total"] == 24


def test_match_detail_hides_seed_and_scores_until_done(client: FlaskClient, seeded: Seeded) -> None:
    done = get_json(client, f"/api/v1/matches/{seeded.done_match}")["match"]
    assert done["status"] == "done" and isinstance(done["seed"], int) and done["replay"] is True
    assert sum(s["score"] for s in done["seats"]) == 0
    assert all(s["version"] == 1 for s in done["seats"])
    for match_id in (seeded.pending_match, seeded.running_match, seeded.failed_match):
        m = get_json(client, f"/api/v1/matches/{match_id}")["match"]
        assert m["seed"] is None and m["replay"] is False
        assert all(s["score"] is None for s in m["seats"])
    assert get_json(client, f"/api/v1/matches/{seeded.failed_match}")["match"]["error"] == "worker lost"
    faulty = get_json(client, f"/api/v1/matches/{seeded.fault_match}")["match"]
    assert faulty["fault_records"] and faulty["fault_records"][0]["kind"] == "crash"


def test_replay_hands_are_valid_records_with_latencies(client: FlaskClient, seeded: Seeded) -> None:
    data = get_json(client, f"/api/v1/matches/{seeded.fault_match}/replay")
    assert data["match"] == seeded.fault_match and data["hands"]
    faulted = 0
    for hand in data["hands"]:
        assert len(hand["latency_us"]) == len(hand["actions"])
        record = HandRecord.from_json({k: v for k, v in hand.items() if k not in ("latency_us", "faults")})
        record.verify()
        faulted += bool(hand.get("faults"))
    assert faulted


@pytest.mark.parametrize("which", ["pending_match", "running_match", "failed_match"])
def test_no_replay_or_download_before_done(client: FlaskClient, seeded: Seeded, which: str) -> None:
    match_id = getattr(seeded, which)
    for url in (
        f"/api/v1/matches/{match_id}/replay",
        f"/api/v1/matches/{match_id}/hands/0",
        f"/api/v1/matches/{match_id}/hands/0/decisions/0",
    ):
        assert_error(client, url, 409, "not_finished")


def test_hand_record_download(client: FlaskClient, seeded: Seeded) -> None:
    replay = get_json(client, f"/api/v1/matches/{seeded.fault_match}/replay")["hands"]
    for index, hand in enumerate(replay):
        response = client.get(f"/api/v1/matches/{seeded.fault_match}/hands/{index}")
        assert response.status_code == 200
        assert "attachment" in response.headers["Content-Disposition"]
        record = response.get_json()
        assert "latency_us" not in record and "faults" not in record
        assert record == {k: v for k, v in hand.items() if k not in ("latency_us", "faults")}
        assert HandRecord.from_json(record).to_json() == record  # canonical tonk-hand/1
        HandRecord.from_json(record).verify()
    assert_error(client, f"/api/v1/matches/{seeded.fault_match}/hands/{len(replay)}", 404)


def test_decision_download_is_the_request_the_bot_received(client: FlaskClient, seeded: Seeded) -> None:
    """Play the match again with the same seed, label and bots, recording every request the
    referee sends, and compare each with the download."""
    from arena.play.plan import load_plan, run_match
    from arena.store.db import session_scope

    with session_scope(seeded.url) as session:
        plan = load_plan(session, seeded.fault_match)
    sent: dict[tuple[int, int], Any] = {}

    class Recording:
        def __init__(self, inner: Any):
            self.inner = inner

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

        def act(self, request: Any) -> Any:
            hand, decision = request.decision_id.split("/")[1:]
            sent[(int(hand), int(decision))] = request
            return self.inner.act(request)

    from arena.play.plan import make_seat_player

    run_match(plan, player_factory=lambda seat: Recording(make_seat_player(seat)))
    assert sent
    for (hand, decision), request in sorted(sent.items())[:40]:
        url = f"/api/v1/matches/{seeded.fault_match}/hands/{hand}/decisions/{decision}"
        response = client.get(url)
        assert response.status_code == 200, response.data
        assert "attachment" in response.headers["Content-Disposition"]
        # The proto3 JSON of the very DecideRequest the bot was sent (MessageToJson of it).
        sent_json = json_format.MessageToJson(decision_to_proto(request), indent=1)
        assert response.data.decode() == sent_json + "\n"
        got = response.get_json()
        assert got["matchId"] == request.match_id == plan.public_id
        assert got["decisionId"] == request.decision_id
        assert got["deadlineMs"] == request.deadline_ms
        parsed = json_format.ParseDict(got, pb.DecideRequest())
        assert parsed.SerializeToString() == encode_decide_request(request)
        assert decision_from_proto(parsed).observation.legal_actions == request.observation.legal_actions
    # The faulted decision itself downloads too (it is the last of its hand).
    hand, decision = max((h, d) for (h, d) in sent if h == 1)
    base = f"/api/v1/matches/{seeded.fault_match}/hands/{hand}/decisions"
    assert client.get(f"{base}/{decision}").status_code == 200
    assert_error(client, f"{base}/{decision + 1}", 404)


def test_both_decision_formats_replay_with_tonk_replay_decision(
    client: FlaskClient, seeded: Seeded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sdk.cli import main
    from sdk.decision_file import SDK_DECISION_FORMAT, decision_to_json, read_decision

    downloaded = client.get(f"/api/v1/matches/{seeded.done_match}/hands/0/decisions/0").get_json()
    request, kind = read_decision(downloaded)
    assert kind == "proto3-json"
    sdk_form = decision_to_json(request)
    assert sdk_form["format"] == SDK_DECISION_FORMAT
    assert read_decision(json.loads(json.dumps(sdk_form))) == (request, SDK_DECISION_FORMAT)
    path = tmp_path / "sdk-form.json"
    path.write_text(json.dumps(sdk_form))
    assert main(["replay-decision", str(path), "helpers.dashboard_fixtures:LowBot", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["decision_id"] == request.decision_id
    path.write_text(json.dumps({**sdk_form, "format": "tonk-sdk-decision/9"}))
    assert main(["replay-decision", str(path), "random"]) == 2
    assert "unknown decision format 'tonk-sdk-decision/9'" in capsys.readouterr().err


def test_a_decision_download_replays_with_tonk_replay_decision(
    client: FlaskClient, seeded: Seeded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sdk.cli import main

    response = client.get(f"/api/v1/matches/{seeded.done_match}/hands/0/decisions/0")
    path = tmp_path / "decision.json"
    path.write_bytes(response.data)
    assert main(["replay-decision", str(path), "helpers.dashboard_fixtures:LowBot", "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["legal"] is True and verdict["decision_id"].endswith("/0/0")


# --- bad ids and parameters -----------------------------------------------------------------


@pytest.mark.parametrize(
    "url, status, code",
    [
        ("/api/v1/matches/abc", 400, "invalid_id"),
        ("/api/v1/matches/-1", 400, "invalid_id"),
        ("/api/v1/matches/1.5", 400, "invalid_id"),
        ("/api/v1/matches/0", 404, "not_found"),
        ("/api/v1/matches/999999", 404, "match_not_found"),
        ("/api/v1/matches/99999999999999999999999", 404, "not_found"),
        ("/api/v1/matches/2147483648", 404, "not_found"),
        ("/api/v1/tournaments/abc", 400, "invalid_id"),
        ("/api/v1/tournaments/999999", 404, "tournament_not_found"),
        ("/api/v1/tournaments/999999/progress", 404, "tournament_not_found"),
        ("/api/v1/matches?page=0", 400, "invalid_parameter"),
        ("/api/v1/matches?page=-3", 400, "invalid_parameter"),
        ("/api/v1/matches?page=abc", 400, "invalid_parameter"),
        ("/api/v1/matches?page=10000000", 400, "invalid_parameter"),
        ("/api/v1/matches?per_page=0", 400, "invalid_parameter"),
        ("/api/v1/matches?per_page=101", 400, "invalid_parameter"),
        ("/api/v1/matches?per_page=1e3", 400, "invalid_parameter"),
        ("/api/v1/matches?status=finished", 400, "invalid_parameter"),
        ("/api/v1/matches?bot=nobody", 400, "invalid_parameter"),
        ("/api/v1/matches?bot=%00", 400, "invalid_parameter"),
        ("/api/v1/matches?tournament=abc", 400, "invalid_parameter"),
        ("/api/v1/matches?tournament=999999", 400, "invalid_parameter"),
        ("/api/v1/matches?tournament=99999999999999", 400, "invalid_parameter"),
        ("/api/v1/tournaments?status=done", 400, "invalid_parameter"),
        ("/api/v1/tournaments?per_page=500", 400, "invalid_parameter"),
        ("/api/v1/nothing-here", 404, "not_found"),
    ],
)
def test_bad_ids_and_parameters_are_clean_json_4xx(
    client: FlaskClient, url: str, status: int, code: str
) -> None:
    assert_error(client, url, status, code)


def test_bad_hand_and_decision_indices(client: FlaskClient, seeded: Seeded) -> None:
    base = f"/api/v1/matches/{seeded.done_match}"
    assert_error(client, f"{base}/hands/x", 400, "invalid_id")
    assert_error(client, f"{base}/hands/-1", 400, "invalid_id")
    assert_error(client, f"{base}/hands/9999", 404)
    assert_error(client, f"{base}/hands/0/decisions/x", 400, "invalid_id")
    assert_error(client, f"{base}/hands/0/decisions/99999", 404)
    assert_error(client, f"{base}/hands/99999999999999999/decisions/0", 404)


def test_wrong_method_is_json_405(client: FlaskClient) -> None:
    response = client.delete("/api/v1/leaderboard")
    assert response.status_code == 405 and response.get_json()["error"]["code"] == "method_not_allowed"
    assert "GET" in response.headers["Allow"]


def test_index_lists_the_endpoints(client: FlaskClient) -> None:
    assert "GET /api/v1/leaderboard?q=&page=&per_page=" in get_json(client, "/api/v1/")["endpoints"]
