"""What ``tonk sprt --arena`` prints (sdk/commands/sprt.py), issue #40 point 6: the progress
line says when the test next decides (the bounds are fixed, and between two looks the LLR may
stray past one and come back), and the last lines are the state the test ended in, the one its
page shows, also for a test stopped while a pair was still being played.

The stopped-while-playing case is a race the real arena cannot be made to lose on demand, so
it is played against a stand-in arena on a loopback socket that answers the API's three
requests from a script (tests/dashboard/test_sprt_cli.py plays the real one)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from sdk.cli import main
from sdk.commands.sprt import final_line, progress_line

#: A test's state as the API gives it (GET /api/v1/tournaments/<id>/progress, "sprt").
STATE: dict[str, Any] = {
    "pairs": 50, "counts": [2, 6, 38, 3, 1], "llr": -3.02, "lower": -3.0, "upper": 3.0, "verdict": None,
    "next_look": 56, "elo0": 0.0, "elo1": 20.0, "alpha": 0.05, "beta": 0.05, "batch": 8, "max_pairs": 400,
    "estimate": {"pairs": 50, "elo": -21.0, "low": -60.0, "high": 18.0}, "stopped": False,
}  # fmt: skip


def test_the_progress_line_says_when_the_test_next_decides() -> None:
    # LLR -3.02 is past the lower bound, but the test looks only at 56 pairs: the line says so.
    line = progress_line("v2", "v1", STATE)
    assert line == "50 pairs, LLR -3.02 in [-3.00, 3.00], decides at 56 pairs; " \
                   "v2 - v1 = -21 +/- 39 Elo [-60, +18]"  # fmt: skip
    # At a look, or once decided, there is nothing to wait for.
    assert ", decides at" not in progress_line("v2", "v1", {**STATE, "pairs": 56})
    assert ", decides at" not in progress_line("v2", "v1", {**STATE, "next_look": None, "verdict": "H0"})
    assert final_line({**STATE, "pairs": 56, "llr": -3.39}) == "final: 56 pairs, LLR -3.39 in [-3.00, 3.00]"


class StandIn(BaseHTTPRequestHandler):
    """Answers GET /api/v1/tournaments/7 and .../progress; each progress answer is the next
    of ``server.answers`` (the last one repeated)."""

    server: Any

    def do_GET(self) -> None:
        if self.path == "/api/v1/tournaments/7":
            entries = [{"bot": "v2"}, {"bot": "v1"}]
            body = {"tournament": {"kind": "sprt", "challenger": "v2", "entries": entries}}
        elif self.path == "/api/v1/tournaments/7/progress":
            answers = self.server.answers
            body = {"progress": answers.pop(0) if len(answers) > 1 else answers[0]}
        else:
            self.send_error(404)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadingHTTPServer]:
    for name in ("TONK_TOKEN", "TONK_ARENA"):
        monkeypatch.delenv(name, raising=False)
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    thread.join()
    server.server_close()


def test_a_stopped_test_ends_once_the_pairs_being_played_are_in(
    stand_in: ThreadingHTTPServer, capsys: pytest.CaptureFixture[str]
) -> None:
    stopped = {**STATE, "pairs": 54, "llr": -3.08, "stopped": True}
    played = {**STATE, "pairs": 56, "llr": -3.39, "stopped": True,
              "estimate": {"pairs": 56, "elo": -25.0, "low": -61.0, "high": 11.0}}  # fmt: skip
    stand_in.answers = [  # type: ignore[attr-defined]
        {"status": "running", "matches": {"running": 2}, "sprt": STATE},
        {"status": "paused", "matches": {"running": 2}, "sprt": stopped},  # stopped, a pair in play
        {"status": "paused", "matches": {"running": 0}, "sprt": played},  # ... and in
    ]
    arena = f"http://127.0.0.1:{stand_in.server_port}"
    code = main(["sprt", "--watch", "7", "--arena", arena, "--token", "t0ken", "--poll", "0.05"])
    out, err = capsys.readouterr()
    assert code == 3, out + err  # stopped undecided
    # The last lines are the state the page shows (56 pairs, LLR -3.39), not the stop's (54).
    assert out.splitlines()[-3:] == [
        "v2 - v1 = -25 +/- 36 Elo [-61, +11]: stopped undecided after 56 pairs",
        "final: 56 pairs, LLR -3.39 in [-3.00, 3.00]",
        f"its page: {arena}/tournaments/7",
    ], out
    assert "50 pairs, LLR -3.02 in [-3.00, 3.00], decides at 56 pairs" in err, err
