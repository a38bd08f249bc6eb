"""Bot text is data: every text a bot or a user chooses is bounded and cleaned before it is
stored (arena/text.py), on SQLite and PostgreSQL alike, and pages show invisible and
direction-changing characters as visible escapes.

The hostile text carries NUL (PostgreSQL refuses it in text columns), a right-to-left
override, an ANSI escape, a bell and a zero-width space; fields also get 1 MB of it.
"""

from __future__ import annotations

from contextlib import ExitStack

import pytest
from helpers.arena import charged_faults
from helpers.faultbots import HOSTILE_TEXT, register_bots, serve_fault

from arena.text import ELLIPSIS, NAME_LIMIT, REASON_LIMIT, clean_text, visible
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from sdk.server import start_server

RAW = ("\x00", "\u202e", "\x1b", "\x07", "\u200b")
STORED_RAW = ("\x00", "\x1b", "\x07")  # what clean_text removes (format characters stay, escaped when shown)
MEGABYTE = "m" * (1 << 20)


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return str(request.getfixturevalue("sqlite_url"))


# -- the two functions ------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["\x00", "\x1b", "\x07", "\x7f", "\x85", "\x9b", "\ud800"])
def test_clean_text_removes_controls_and_surrogates(raw: str) -> None:
    assert clean_text(f"a{raw}b{raw}", 50) == "ab"


def test_clean_text_turns_line_breaks_into_one_space_and_bounds_length() -> None:
    assert clean_text("  one\r\n\ttwo\n ", 50) == "one two"
    cut = clean_text(MEGABYTE, 100)
    assert len(cut) == 100 and cut.endswith(ELLIPSIS)
    assert clean_text("\x00" * (1 << 20), 100) == ELLIPSIS  # a long tail is cut even if nothing is left
    assert clean_text(12345, 3) == "12" + ELLIPSIS
    with pytest.raises(ValueError, match="limit"):
        clean_text("x", 0)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [("\u202e", "<U+202E>"), ("\u200b", "<U+200B>"), ("\u2066", "<U+2066>"), ("\x00", "<U+0000>"),
     ("\x1b", "<U+001B>"), ("\ufeff", "<U+FEFF>"), ("\u3164", "<U+3164>"), ("\U000e0041", "<U+E0041>")],
)
def test_visible_escapes_invisible_and_direction_changing_characters(raw: str, shown: str) -> None:
    assert visible(f"ab{raw}cd") == f"ab{shown}cd"
    plain = "plain text, caf\u00e9, \u00fcber, \u4e2d\u6587\n\t"
    assert visible(plain) == plain


# -- fault reasons: the NUL bot's tournament --------------------------------------------------


@pytest.mark.slow
def test_a_nul_bot_tournament_finishes_with_its_faults_and_every_result(url: str) -> None:
    """A bot whose error status carries NUL plays two house bots, each pair in duplicate:
    every match is recorded (on PostgreSQL the NUL made them all fail before), its faults are
    stored cleaned, the house bots' results are kept and the pages show the reasons safely."""
    from sqlalchemy import select

    from arena.runtime.backends import EmbeddedBackend
    from arena.runtime.driver import run_tournament
    from arena.store.db import dispose_engines, session_scope
    from arena.store.models import Bot, FaultRecord, Match, MatchSeat, Tournament
    from arena.tournaments.lifecycle import create_tournament
    from dashboard import create_app

    with ExitStack() as stack:
        stack.callback(dispose_engines)
        house = [start_server(RandomBot), start_server(GreedyBot)]
        for server in house:
            stack.callback(server.stop, 0)
        nul = stack.enter_context(serve_fault("nul", after=1))
        ids = register_bots(url, {"nul-bot": nul.address, "house-random": house[0].address,
                                  "house-greedy": house[1].address})
        with session_scope(url) as session:
            tid = create_tournament(
                session, name="nul", bot_ids=list(ids.values()), table_sizes=[2], deals_per_table=1,
                hands_per_match=2, seed=1818,
                config={"decision_deadline_ms": 400, "time_bank_ms": 0, "max_faults": 2},
            ).id
        backend = EmbeddedBackend(url, 1)
        stack.callback(backend.close, cancel=True)
        progress = run_tournament(url, tid, backend, poll_s=0.1)

        assert progress.failed == 0 and progress.done == progress.total == 6
        with session_scope(url) as session:
            assert session.get(Tournament, tid).status == "finished"  # type: ignore[union-attr]
            assert set(session.scalars(select(Match.error).where(Match.tournament_id == tid))) == {None}
            charged = charged_faults(FaultRecord.bot_id, FaultRecord.kind, FaultRecord.reason)
            faults = session.execute(charged).all()
            scores = session.execute(
                select(Bot.name, MatchSeat.score).join(Bot, Bot.id == MatchSeat.bot_id)
            ).all()
            fault_match = session.scalars(charged_faults(FaultRecord.match_id)).first()
        assert faults and {bot for bot, _, _ in faults} == {ids["nul-bot"]}
        for _bot, kind, reason in faults:
            assert kind == "crash" and "the bot answered INTERNAL: nul" in reason
            assert not any(ch in reason for ch in STORED_RAW), repr(reason)
            assert len(reason) <= REASON_LIMIT
        assert all(score is not None for _, score in scores) and len(scores) == 12

        app = create_app({"DATABASE_URL": url, "TESTING": True})
        client = app.test_client()
        for path in (f"/matches/{fault_match}", "/bots/nul-bot"):
            page = client.get(path)
            assert page.status_code == 200, path
            html = page.get_data(as_text=True)
            assert "the bot answered INTERNAL: nul" in html
            assert not any(ch in html for ch in RAW), path
            assert "&lt;U+202E&gt;" in html or "<U+202E>" in html


# -- GetInfo fields: what a registered bot says about itself ----------------------------------


class HostileInfoBot(RandomBot):
    name = HOSTILE_TEXT + MEGABYTE
    version = HOSTILE_TEXT + MEGABYTE
    author = HOSTILE_TEXT + MEGABYTE


@pytest.mark.slow
def test_hostile_getinfo_fields_are_stored_clean_and_shown_escaped(url: str) -> None:
    """A bot whose name, version, author and language carry NUL, RLO, ESC, BEL and 1 MB
    passes the real registration checks; what is stored is bounded and control-free on both
    databases, and its page shows the rest as visible escapes."""
    from arena.bots.owners import get_or_create_operator
    from arena.bots.registry import find_bot, register_bot
    from arena.config import Settings
    from arena.store.db import dispose_engines, session_scope
    from arena.store.migrate import upgrade
    from dashboard import create_app

    upgrade(url)
    server = start_server(HostileInfoBot)
    server.servicer.info.language = HOSTILE_TEXT
    try:
        settings = Settings(database_url=url, allowed_bot_hosts=("127.0.0.1",), decision_deadline_ms=500)
        with session_scope(url) as session:
            owner = get_or_create_operator(session, "hostile")
            register_bot(session, owner, "hostile-info", server.address, settings=settings)
        with session_scope(url) as session:
            bot = find_bot(session, "hostile-info")
            assert bot is not None
            info = dict(bot.versions[-1].info)
        for field in ("name", "version", "author", "language"):
            assert not any(ch in info[field] for ch in STORED_RAW), (field, info[field][:80])
            assert info[field].startswith("nul rlo\u202e esc[31m bel zwsp\u200b end"), field
            assert len(info[field]) <= NAME_LIMIT
        client = create_app({"DATABASE_URL": url, "TESTING": True}).test_client()
        html = client.get("/bots/hostile-info").get_data(as_text=True)
        assert not any(ch in html for ch in RAW)
        assert "rlo&lt;U+202E&gt; esc" in html and "zwsp&lt;U+200B&gt;" in html
        api = client.get("/api/v1/bots/hostile-info").get_json()
        assert api["bot"]["versions"][0]["info"]["author"] == info["author"]
    finally:
        server.stop(0)
        dispose_engines()


# -- text from users ---------------------------------------------------------------------------


def test_a_tournament_name_with_control_characters_is_refused(url: str) -> None:
    """Users' text is refused rather than cleaned: they can send it again without the junk."""
    from arena.store.db import dispose_engines, session_scope
    from arena.store.migrate import upgrade
    from arena.store.models import Tournament
    from arena.tournaments.lifecycle import InvalidTournamentError, create_tournament

    upgrade(url)
    try:
        for name in ("nul\x00name", "esc\x1b[2Jname", "bel\x07", "tab\tname", "x" * 129, "x" * (1 << 20)):
            refused = pytest.raises(InvalidTournamentError, match="tournament name")
            with session_scope(url) as session, refused:
                create_tournament(session, name=name, bot_ids=[1, 2], table_sizes=[2], deals_per_table=1,
                                  hands_per_match=1)
        with session_scope(url) as session:
            assert session.query(Tournament).count() == 0
    finally:
        dispose_engines()



def test_direction_changing_text_a_user_may_store_is_shown_escaped(sqlite_url: str) -> None:
    """Format characters (RLO, zero-width) are not controls, so a tournament name may hold
    them; every page that prints the name shows them as escapes."""
    from arena.bots.owners import get_or_create_operator
    from arena.bots.registry import host_bot
    from arena.store.db import dispose_engines, session_scope
    from arena.tournaments.lifecycle import create_tournament
    from dashboard import create_app

    try:
        with session_scope(sqlite_url) as session:
            operator = get_or_create_operator(session, "house")
            ids = [host_bot(session, operator, n, "random", check=False).id for n in ("r-one", "r-two")]
            name = "Open \u202egnirpS\u202c\u200b"
            tid = create_tournament(session, name=name, bot_ids=ids, table_sizes=[2], deals_per_table=1,
                                    hands_per_match=1).id
        client = create_app({"DATABASE_URL": sqlite_url, "TESTING": True}).test_client()
        for path in ("/tournaments/", f"/tournaments/{tid}"):
            html = client.get(path).get_data(as_text=True)
            assert "Open &lt;U+202E&gt;gnirpS&lt;U+202C&gt;&lt;U+200B&gt;" in html, path
            assert not any(ch in html for ch in RAW), path
    finally:
        dispose_engines()
