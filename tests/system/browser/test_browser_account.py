"""Signing in, in real Chromium: a newcomer joins from an invite link on a phone (taps), sees
the token once and their own page, and signs out; an owner signs in with the keyboard on a
laptop. The pages fit the screen, their targets a finger, and the browser's cookie is one a
page's script cannot read (HttpOnly)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from helpers.browser import check_page, expect, new_context, served
from helpers.dashboard_fixtures import OPERATOR_TOKEN

from arena.bots.owners import create_owner
from arena.store.db import session_scope

pytestmark = pytest.mark.browser


@contextmanager
def phone(browser: Any) -> Iterator[Any]:
    """A tab at 390 x 844 that takes taps."""
    context = new_context(browser, 390, 844, has_touch=True)
    try:
        yield context.new_page()
    finally:
        context.close()


def test_a_newcomer_joins_from_an_invite_on_a_phone(browser: Any, sqlite_url: str) -> None:
    with served(sqlite_url) as base, phone(browser) as tab:
        answer = tab.request.post(base + "/api/v1/invites", data={"uses": 1},
                                  headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"})  # fmt: skip
        assert answer.status == 201
        code = answer.json()["invite"]["code"]
        check_page(tab, base, f"/join?code={code}", 390)
        expect(tab.locator("input[name=code]")).to_have_value(code)
        tab.locator("input[name=name]").tap()
        tab.keyboard.type("carol")
        tab.locator("form.account button[type=submit]").tap()
        token = tab.locator("[data-token]")
        expect(token).to_contain_text("tonk_")
        assert token.bounding_box()["y"] < 844  # the token is on the first screen: keep it now
        # The session cookie is there, and no script of the page can read it.
        cookies = {c["name"]: c for c in tab.context.cookies()}
        assert cookies["tonk_session"]["httpOnly"] and cookies["tonk_session"]["sameSite"] == "Lax"
        assert "tonk_session" not in tab.evaluate("document.cookie")

        tab.get_by_role("link", name="Go to your page").tap()
        expect(tab.locator("h1")).to_contain_text("carol")
        check_page(tab, base, "/me", 390)  # fits, and every button a finger can hit
        tab.get_by_role("button", name="Sign out").tap()
        expect(tab.locator("header.site nav")).to_contain_text("Sign in")
        tab.goto(base + "/me")
        expect(tab.locator("h1")).to_have_text("Sign in")


def test_an_owner_signs_in_with_the_keyboard(browser: Any, sqlite_url: str) -> None:
    with session_scope(sqlite_url) as session:
        _, token = create_owner(session, "alice")
    with served(sqlite_url) as base:
        context = new_context(browser, 1360, 900)
        try:
            tab = context.new_page()
            errors: list[str] = []
            tab.on("pageerror", lambda exc: errors.append(str(exc)))
            tab.goto(base + "/")
            tab.get_by_role("link", name="Sign in").click()
            tab.locator("input[name=token]").focus()
            tab.keyboard.type("tonk_wrong")
            tab.keyboard.press("Enter")
            expect(tab.get_by_role("alert")).to_contain_text("invalid API token")
            tab.locator("input[name=token]").fill(token)
            tab.keyboard.press("Enter")
            expect(tab.locator("h1")).to_contain_text("alice")
            expect(tab.locator("header.site nav a[aria-current=page]")).to_have_text("My page")
            check_page(tab, base, "/me", 1360)
            assert not errors
        finally:
            context.close()
