"""What a connected bot's author is told holds on the wire (issue #27): the deadlines
docs/protocol.md gives, its GetInfo's language stored, the capacity cap, the calls link.proto
names, and its page named once it is welcomed."""

from __future__ import annotations

import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers.link import Arena, Client, RawLink, bot_id
from helpers.paths import ROOT
from sqlalchemy import select

from arena.bots.admission import CHECK_RPC_TIMEOUT_S
from arena.link.link_service import MAX_CAPACITY
from arena.play.deal_end import END_DEAL_TIMEOUT_S, send_end_deal
from arena.play.plan import SeatPlan
from arena.store.db import session_scope
from arena.store.models import BotVersion
from bots.random_bot import RandomBot
from sdk.bot import DealSummary
from sdk.grpc_player import DEFAULT_LIFECYCLE_TIMEOUT_S
from sdk.link import LinkClient
from sdk.protocol import link_pb2 as lpb
from sdk.referee import RefereeConfig

PROTOCOL = (ROOT / "docs" / "protocol.md").read_text()


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


def test_a_connected_bots_language_is_stored_as_a_dialled_bots(arena: Arena, clients: list[Client]) -> None:
    # It was stored empty: the link's GetInfo dropped the field.
    clients.append(Client(arena, "alice", "speaker").wait())
    speaker = bot_id(arena, "speaker")
    with session_scope(arena.url) as session:
        info = session.scalars(select(BotVersion.info).where(BotVersion.bot_id == speaker)).one()
    assert info["language"] == "python" and info["protocol_version"] == "tonk.v1", info


def test_end_deal_reaches_a_connected_bot_with_the_deadline_the_docs_give(arena: Arena, raw: RawLink) -> None:
    # A connected bot's EndDeal carried 2,000 ms (the link's default) where a served bot's has 1,000.
    seat = SeatPlan(bot_id(arena, "rawbot"), 0, "rawbot", None, None, connected=True, store=arena.url)
    with ThreadPoolExecutor(1) as pool:
        sent = pool.submit(send_end_deal, seat, DealSummary((), seed=7))
        item = raw.next(timeout=60)
        call = item.call
        assert call.WhichOneof("request") == "end_deal", item
        assert call.end_deal.seed == 7
        raw.send(lpb.ConnectRequest(reply=lpb.LinkReply(call_id=call.call_id, end_deal={})))
        assert sent.result(60) is True
    assert call.deadline_ms == END_DEAL_TIMEOUT_S * 1000 == 1000


def test_a_capacity_over_the_cap_is_granted_the_cap(arena: Arena, clients: list[Client]) -> None:
    from helpers.link import welcomed

    clients.append(Client(arena, "bob", "bystander").wait())
    link = RawLink(arena.address, arena.tokens["alice"])
    try:
        link.hello("greedy-capacity", capacity=100)
        assert welcomed(link).capacity == MAX_CAPACITY
    finally:
        link.close()
    assert f"capped at {MAX_CAPACITY}" in PROTOCOL


def test_the_protocol_doc_gives_the_deadlines_the_arena_sends() -> None:
    (line,) = [p for p in PROTOCOL.split("\n* ") if p.startswith("Lifecycle calls have short deadlines")]
    line = " ".join(line.split())
    assert f"`GetInfo` {CHECK_RPC_TIMEOUT_S * 1000:,.0f} ms in a dialled bot's admission check" in line
    assert f"{DEFAULT_LIFECYCLE_TIMEOUT_S * 1000:,.0f} ms otherwise" in line
    assert f"lifecycle deadline ({RefereeConfig().lifecycle_deadline_ms:,} ms by default" in line
    assert f"`EndDeal` {END_DEAL_TIMEOUT_S * 1000:,.0f} ms" in line
    assert PROTOCOL.count("Lifecycle calls") == 1, "the deadlines are given once"


def test_link_protos_header_names_every_call_and_no_health_service() -> None:
    header = (ROOT / "protos" / "tonk" / "v1" / "link.proto").read_text().split("syntax", 1)[0]
    kinds = [f.name for f in lpb.LinkCall.DESCRIPTOR.oneofs_by_name["request"].fields]
    for kind in kinds:
        camel = "".join(part.title() for part in kind.split("_"))
        assert re.search(rf"\b{camel}\b", header), (camel, header)
    assert "no health service" in header
    assert "needs no health service" in PROTOCOL
