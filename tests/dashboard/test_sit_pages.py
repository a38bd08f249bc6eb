"""The ways to a seat at a table (issue #39), as pages: the home page's invitation, a bot's
"Take a seat" form (for a signed-in person; a way to sign in for anyone else; none on a bot
that takes no seats), and the demo's invite link, which carries the bot to play from joining to
the bot's form. What a visitor types into the link is never echoed as markup."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from arena.bots.owners import get_or_create_operator
from arena.bots.registry import host_bot
from arena.config import Settings
from arena.store.db import session_scope
from arena.store.models import Bot
from arena.store.statuses import BotStatus
from dashboard.commands import _sit_against, _visitor_invite

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.fixture
def arena(app_factory: Callable[..., Flask], sqlite_url: str, tmp_path: Path) -> dict[str, Any]:
    """An app on a fresh store with the house bots search and greedy, and a retired one."""
    settings = Settings(data_dir=str(tmp_path), database_url=sqlite_url)
    app = app_factory(sqlite_url, SETTINGS=settings, JOIN_RATE_LIMIT=(1000, 60.0))
    with session_scope(sqlite_url) as session:
        house = get_or_create_operator(session, "house")
        for name, target in (("search", "bots.search:SearchBot"), ("greedy", "bots.greedy:GreedyBot"),
                             ("old", "bots.random_bot:RandomBot")):  # fmt: skip
            host_bot(session, house, name, target, check=False)
        session.query(Bot).filter(Bot.name == "old").update({"status": BotStatus.RETIRED})
    return {"app": app, "url": sqlite_url, "settings": settings}


def join(client: FlaskClient, code: str, name: str, bot: str) -> str:
    form = client.get(f"/join?code={code}&bot={bot}").get_data(as_text=True)
    found = CSRF.search(form)
    assert found, form
    answer = client.post("/join", data={"csrf": found.group(1), "code": code, "name": name, "bot": bot})
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return answer.get_data(as_text=True)


def test_the_demo_invites_a_visitor_to_join_and_sit_down_against_search(arena: dict[str, Any]) -> None:
    assert _sit_against(["greedy", "random", "search"]) == "search"
    assert _sit_against(["random", "greedy"]) == "random"  # search not entered: the first one
    code = _visitor_invite(arena["settings"])
    client = arena["app"].test_client()
    form = client.get(f"/join?code={code}&bot=search").get_data(as_text=True)
    assert '<input type="hidden" name="bot" value="search">' in form
    welcome = join(client, code, "carol", "search")
    assert 'href="/bots/search#take-a-seat"' in welcome and "Now take a seat against search" in welcome
    # Signed in now: the bot's page has the form, posting to /bots/search/sit with the session's token.
    page = client.get("/bots/search").get_data(as_text=True)
    assert 'id="take-a-seat"' in page and 'action="/bots/search/sit"' in page
    token = CSRF.search(page)
    form = page[page.index('action="/bots/search/sit"'):]
    assert token and f'name="csrf" value="{token.group(1)}"' in form[: form.index("</form>")]
    assert 'name="seats" value="2"' in page and 'name="seats" value="3"' in page
    # The invite has uses left for the next visitor.
    assert "Now take a seat" in join(arena["app"].test_client(), code, "dave", "search")


@pytest.mark.parametrize("bot", ["../me", "search%22%3E%3Cscript%3E", "%40carol", "x" * 80])
def test_a_bot_in_the_invite_link_that_is_no_bot_name_is_dropped(arena: dict[str, Any], bot: str) -> None:
    code = _visitor_invite(arena["settings"])
    client = arena["app"].test_client()
    form = client.get(f"/join?code={code}&bot={bot}").get_data(as_text=True)
    assert 'name="bot"' not in form and "<script>" not in form
    welcome = join(client, code, "erin", bot)
    assert "take a seat" not in welcome and "<script>" not in welcome


def test_signed_out_the_pages_invite_to_sign_in_and_sit_down(arena: dict[str, Any]) -> None:
    client = arena["app"].test_client()
    home = client.get("/").get_data(as_text=True)
    assert 'id="sit-invite"' in home and 'href="/bots/search#take-a-seat"' in home
    assert 'href="/bots/old#take-a-seat"' not in home  # retired: no seat
    page = client.get("/bots/search").get_data(as_text=True)
    assert 'id="take-a-seat"' in page and 'action="/bots/search/sit"' not in page  # no form
    assert 'class="sit-signin" href="/signin"' in page
    retired = client.get("/bots/old").get_data(as_text=True)
    assert 'id="take-a-seat"' not in retired
