"""A bot that connects out is told where its page is, as `tonk submit` tells a dialled bot
(issue #27: `tonk serve --connect` never printed it)."""

from __future__ import annotations

import logging
import threading

import pytest
from helpers.link import Arena

from bots.random_bot import RandomBot
from sdk.link import LinkClient


def test_a_connected_bot_names_its_page_once_welcomed(arena: Arena, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="tonk.link")
    link = LinkClient(RandomBot, arena.address, arena.tokens["alice"], "page-bot", capacity=1,
                      arena="http://arena.example.org:8123/")  # fmt: skip
    runner = threading.Thread(target=link.run, daemon=True)
    runner.start()
    try:
        assert link.connected.wait(120), link.stats
    finally:
        link.stop()
        runner.join(30)
    said = [r.getMessage() for r in caplog.records if r.name == "tonk.link"]
    assert "its page: http://arena.example.org:8123/bots/page-bot" in said, said
