"""Bot pages: the list, and one bot's profile."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, render_template
from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.queries.bots import bot_detail, bot_list
from arena.store.models import Bot
from dashboard import charts
from dashboard.db import session
from dashboard.errors import NotFoundError
from dashboard.views.common import db_url, private_bot, viewer
from sdk.bot import BOT_NAME_RE

bp = Blueprint("bots", __name__, url_prefix="/bots")


@bp.get("/")
def index() -> str:
    return render_template("bots.html", bots=bot_list(session(), db_url()))


@bp.get("/<name>")
def detail(name: str) -> str:
    if not BOT_NAME_RE.fullmatch(name):
        raise NotFoundError(f"there is no bot named {name[:80]!r}")
    bot = with_outage(session(), private_bot(session(), bot_detail(session(), db_url(), name)))
    return render_template(
        "bot.html", b=bot, chart=charts.history_chart(bot["history"]), upload=_upload(bot),
        challenges=_challenges(session(), name), challengers=_challengers(bot),
        sit_partners=_sit_partners(bot),
    )  # fmt: skip


def _sit_partners(bot: dict[str, Any]) -> list[str] | None:
    """The bots a person may add as a third seat at a table with this one (issue #39), or
    None where it takes no seats; the sit endpoint checks it all again."""
    from arena.tournaments.people import seat_partners

    return seat_partners(session(), bot["name"])


def _challengers(bot: dict[str, Any]) -> list[str] | None:
    """The signed-in owner's active bots that may challenge this one from its page, or None
    where no form is shown (nobody signed in, the bot is theirs, or it takes no challenges)."""
    from arena.store.statuses import BotStatus

    db = session()
    who = viewer(db)
    takes = bot.get("accepts_challenges") and bot["status"] == "active"
    if who is None or who.name == bot["owner"] or not takes:
        return None
    return list(db.scalars(select(Bot.name).where(Bot.owner_id == who.id, Bot.status == BotStatus.ACTIVE,
                                                  Bot.person.is_(False)).order_by(Bot.name)))  # fmt: skip


def _challenges(db: Session, name: str) -> list[Any]:
    """The latest challenges the bot played either side of (unrated: they are listed, not
    counted; arena/tournaments/challenges.py)."""
    from arena.tournaments.challenges import challenges_of

    bot_id = db.scalar(select(Bot.id).where(Bot.name == name))
    return [] if bot_id is None else challenges_of(db, bot_id, limit=10)


def with_outage(db: Session, detail: dict[str, Any]) -> dict[str, Any]:
    """The bot's detail with ``offline``: a dialled bot's outage (arena/bots/reachability.py:
    since when, why, bounded and with its address redacted, and that it gets no new ladder
    table until it answers), None while it answers. The page and the API show the same."""
    from arena.bots.reachability import outage_of

    bot_id = db.scalar(select(Bot.id).where(Bot.name == detail["name"]))
    found = None if bot_id is None else outage_of(db, bot_id)
    return {**detail, "offline": None if found is None else found.to_json()}


def _upload(bot: dict[str, Any]) -> dict[str, Any] | None:
    """An uploaded bot's build and recent match logs, when the page is asked for with its
    owner's (or an operator's) token; pages have no login, so a browser sees the note only."""
    if bot.get("plays") != "uploaded":
        return None
    from arena.bots.builds import build_to_json
    from arena.bots.uploaded import NothingToSeeError, bot_build, match_logs

    db = session()
    try:
        who = viewer(db)
        return {
            "build": build_to_json(bot_build(db, who, bot["name"])),
            "logs": _with_limits(db, bot["name"], match_logs(db, who, bot["name"])),
        }
    except NothingToSeeError:
        return {}


def _with_limits(db: Session, name: str, logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each log with the sandbox limits the bot ran into in that match (``limits``: the names
    of arena/sandbox/causes.py, read from its faults' reasons), so an owner whose log just
    stops sees why: out of memory, the process limit, a disk cap, the CPU budget."""
    from arena.sandbox.causes import MAX_LENGTH, PREFIX, Cause
    from arena.store.models import FaultRecord

    matches = {log["match"] for log in logs}
    bot_id = db.scalar(select(Bot.id).where(Bot.name == name))
    hit: dict[int, list[str]] = {}
    if matches and bot_id is not None:
        rows = db.execute(
            select(FaultRecord.match_id, FaultRecord.reason).where(
                FaultRecord.bot_id == bot_id,
                FaultRecord.match_id.in_(matches),
                FaultRecord.reason.startswith(PREFIX, autoescape=True),
            )
        )
        for match_id, reason in rows:
            head = reason[:MAX_LENGTH]
            names = hit.setdefault(match_id, [])
            names += [c.value for c in Cause if f"{c.value} (" in head and c.value not in names]
    return [{**log, "limits": hit.get(log["match"], [])} for log in logs]
