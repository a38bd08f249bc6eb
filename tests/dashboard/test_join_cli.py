"""Owners without an operator, end to end from a fresh store (SQLite and PostgreSQL): the
operator makes an invite with ``tonk owner invite`` at the store; newcomers redeem it with
``tonk owner join`` against the real dashboard served on loopback, submit real gRPC bots with
``tonk submit`` (checked by the arena: health, info, a short match), and the bots play a
tournament the operator runs through the API. Replayed, forged, expired and revoked codes are
refused by the CLI with the arena's reason and exit 1; ``tonk owner rotate-token`` retires the
old token."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from helpers.arena import InlineBackend
from helpers.dashboard_fixtures import OPERATOR_TOKEN
from sqlalchemy import select, update

from arena.config import Settings
from arena.store.db import session_scope
from arena.store.models import Bot, Invite, InviteRedemption, MatchSeat, Owner
from bots.random_bot import RandomBot
from sdk.cli import main
from sdk.server import start_server


@pytest.fixture
def bots() -> Iterator[list[str]]:
    running = [start_server(RandomBot), start_server(RandomBot)]
    yield [server.address for server in running]
    for server in running:
        server.stop(0)


@pytest.fixture
def arena(
    writable_url: str, app_factory: Callable[..., Flask], monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """The dashboard on a loopback port over a fresh store, checking bots before it takes
    them; `tonk owner` (the operator's side) uses the same store."""
    from werkzeug.serving import make_server

    settings = Settings(
        database_url=writable_url, allowed_bot_hosts=("127.0.0.1",), decision_deadline_ms=2000
    )
    app = app_factory(
        writable_url, SETTINGS=settings, BOT_CHECKS=True, TOURNAMENT_BACKEND=InlineBackend(writable_url)
    )
    monkeypatch.setenv("TONK_DATABASE_URL", writable_url)
    for name in ("TONK_TOKEN", "TONK_ARENA", "TONK_OPERATOR_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join()


def tonk(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def api(arena: str, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    import json
    import urllib.request

    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{arena}/api/v1{path}", data=data, method=method)
    request.add_header("Authorization", f"Bearer {OPERATOR_TOKEN}")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=120) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer


def test_invite_join_submit_play(
    arena: str, bots: list[str], writable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = tonk(capsys, "owner", "invite", "--uses", "2", "--expires", "1d", "--note", "spring cup")
    assert code == 0, err
    invite = out.strip()
    assert invite.startswith("tonki_") and "\n" not in invite
    assert "shown only this once" in err and "tonk owner join CODE" in err

    tokens = {}
    for name in ("alice", "bob"):
        code, out, err = tonk(capsys, "owner", "join", invite, "--name", name, "--arena", arena)
        assert code == 0, err
        tokens[name] = out.strip()
        assert tokens[name].startswith("tonk_") and "\n" not in tokens[name]
        assert f"as owner {name!r}" in err and "shown only this once" in err

    # The code was good for two: a third redemption (a replay) is refused and changes nothing.
    code, out, err = tonk(capsys, "owner", "join", invite, "--name", "carol", "--arena", arena)
    assert (code, out) == (1, "")
    assert "refused (410 invite_used_up)" in err and "2 owners" in err
    code, out, _ = tonk(capsys, "owner", "invites")
    assert code == 0
    row = out.splitlines()[1].split()
    assert row[1:5] == ["used_up", "0", "2", "2"] and "spring cup" in out and invite not in out

    for (name, token), address in zip(tokens.items(), bots, strict=True):
        code, out, err = tonk(
            capsys,
            "submit",
            "--name",
            f"{name}-bot",
            "--address",
            address,
            "--arena",
            arena,
            "--token",
            token,
        )
        assert code == 0, err
        assert f"registered bot '{name}-bot' (version 1)" in out

    spec = {"name": "Invited", "bots": ["alice-bot", "bob-bot"], "table_sizes": [2], "deals_per_table": 2,
            "hands_per_match": 3, "seed": 7}  # fmt: skip
    tid = api(arena, "POST", "/tournaments", spec)["tournament"]["id"]
    played = api(arena, "POST", f"/tournaments/{tid}/run")["tournament"]
    assert played["status"] == "finished" and played["matches"]["done"] == played["matches"]["total"] == 4
    board = {row["bot"]: row for row in api(arena, "GET", "/leaderboard")["leaderboard"]}
    assert {"alice-bot", "bob-bot"} <= set(board)

    with session_scope(writable_url) as session:
        owners = {o.name: o.id for o in session.scalars(select(Owner))}
        joined = {r.owner_id: r.invite_id for r in session.scalars(select(InviteRedemption))}
        assert set(joined) == {owners["alice"], owners["bob"]} and len(set(joined.values())) == 1
        assert "carol" not in owners
        seats = session.execute(
            select(Bot.name, MatchSeat.score).join(MatchSeat, MatchSeat.bot_id == Bot.id)
        ).all()
        assert sorted({name for name, _ in seats}) == ["alice-bot", "bob-bot"]
        assert len(seats) == 8 and all(score is not None for _, score in seats)


def test_refused_codes_and_a_rotated_token(
    arena: str, bots: list[str], writable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    codes = {}
    for what in ("expired", "revoked", "good"):
        code, out, err = tonk(capsys, "owner", "invite", "--note", what)
        assert code == 0, err
        codes[what] = out.strip()
    with session_scope(writable_url) as session:
        ids = {i.note: i.id for i in session.scalars(select(Invite))}
        past = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        session.execute(update(Invite).where(Invite.id == ids["expired"]).values(expires_at=past))
    code, _, err = tonk(capsys, "owner", "revoke-invite", str(ids["revoked"]))
    assert code == 0 and f"revoked invite {ids['revoked']}" in err
    code, _, err = tonk(capsys, "owner", "revoke-invite", "999")
    assert code == 1 and "no invite with id 999" in err

    good = codes["good"]
    forged = good[:-2] + ("AA" if not good.endswith("AA") else "BB")
    refusals = [
        (codes["expired"], "410 invite_expired", "expired on 2026-01-01"),
        (codes["revoked"], "410 invite_revoked", "revoked"),
        (forged, "404 invite_not_found", "no such invite"),
        ("tonki_guess", "400 invalid_invite", "not an invite code"),
        (good, "400 invalid_owner_name", "'Not A Name'"),
    ]
    for invite, status, reason in refusals:
        name = "Not A Name" if status.endswith("invalid_owner_name") else "mallory"
        code, out, err = tonk(capsys, "owner", "join", invite, "--name", name, "--arena", arena)
        assert (code, out) == (1, ""), err
        assert f"refused ({status})" in err and reason in err, err
        assert invite not in err  # codes are never echoed back
    code, _, err = tonk(capsys, "owner", "join", good, "--name", "dave")
    assert code == 2 and "no arena" in err
    code, _, err = tonk(capsys, "owner", "join", good, "--name", "dave", "--arena", "ftp://x")
    assert code == 2 and "not an http:// or https:// URL" in err

    code, out, err = tonk(capsys, "owner", "join", good, "--name", "dave", "--arena", arena)
    assert code == 0, err
    old = out.strip()
    code, out, err = tonk(capsys, "owner", "rotate-token", "--arena", arena, "--token", old)
    assert code == 0, err
    new = out.strip()
    assert new.startswith("tonk_") and new != old and "old one no longer works" in err
    code, _, err = tonk(
        capsys, "submit", "--name", "dave-bot", "--address", bots[0], "--arena", arena, "--token", old
    )
    assert code == 1 and "refused (401 unauthenticated)" in err
    code, _, err = tonk(
        capsys, "submit", "--name", "dave-bot", "--address", bots[0], "--arena", arena, "--token", new
    )
    assert code == 0, err
    code, _, err = tonk(capsys, "owner", "rotate-token", "--arena", arena)
    assert code == 2 and "no API token" in err
    with session_scope(writable_url) as session:
        assert sorted(session.scalars(select(Owner.name))) == ["dave", "operator"]


def test_the_sdk_owner_actions_need_no_arena_installed() -> None:
    """`tonk owner join` and `rotate-token` are the SDK's: the arena's commands (plug-ins,
    a second of start-up) are not loaded for them, and are for the operator's actions."""
    from sdk.cli import SHARED, build_parser
    from sdk.commands.owner import ACTIONS

    assert SHARED["owner"] == ACTIONS

    def actions(argv: list[str]) -> set[str]:
        parser = build_parser(argv)
        owner = parser._subparsers._group_actions[0].choices["owner"]  # type: ignore[union-attr]
        return set(owner._subparsers._group_actions[0].choices)  # type: ignore[union-attr]

    assert actions(["owner", "join", "tonki_x", "--arena", "http://a"]) == {"join", "rotate-token"}
    assert {"join", "rotate-token", "create", "invite", "invites", "revoke-invite"} <= actions(
        ["owner", "invite"]
    )
