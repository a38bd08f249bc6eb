"""Whether a dialled bot answers: one it does not gets no new ladder table until it does.

A bot the arena dials at its address can go down; each table a ladder gives it meanwhile is
a forfeit. A bot is *noticed offline* when it forfeits a match as unreachable (the match's
record, arena/play/lifecycle.py, calls :func:`note_forfeit` in the same transaction, so the
ladder's next tick already sees it) or when its health check fails (:func:`probe_due`). It
then has a ``bot_outages`` row (as a connected bot's presence is its ``link_connections``
rows): the live capacities a ladder asks for (arena.play.capacity, ``live=True``) give it 0.

It is *back* once it answers the standard gRPC health service: the ladder's runtime
(arena/runtime/ladder.py) calls :func:`probe_due` every ``PROBE_EVERY_S`` in a thread of its
own, off every tick's transaction. A round probes at most ``PROBES_PER_ROUND`` bots whose
probe is due, ``PROBES_AT_ONCE`` at a time, each within ``PROBE_TIMEOUT_S``; the first probe
is due at once (a blip costs one round), and each failure puts the next one off twice as
long, up to ``BACKOFF_MAX_S``. A passed registration check (arena/bots/registry.py) is an
answer too (:func:`answered`), and so is a match begun after the outage was noted that the
bot played through without being unreachable (:func:`answered_in`, with the match's record).

Reasons are shown on the bot's public page: they are bounded, cleaned and have the bot's
address (and any IP address) redacted, as fault reasons are.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.bots.addresses import redact_addresses, resolve_for_dial
from arena.errors import ArenaError
from arena.store.db import session_scope
from arena.store.models import Bot, BotOutage, Match, utcnow
from arena.text import clean_text

log = logging.getLogger("tonk.reachability")

#: What found a bot offline.
CAUSE_MATCH: Final = "match"
CAUSE_HEALTH: Final = "health"
#: Characters of a stored reason (the column's width).
REASON_CHARS: Final = 300
#: Seconds a health probe may take, connection included.
PROBE_TIMEOUT_S: Final = 2.0
#: Probes running at once, and at most in one round.
PROBES_AT_ONCE: Final = 4
PROBES_PER_ROUND: Final = 16
#: Seconds between rounds (the runtime's), and the wait after a first failed probe.
PROBE_EVERY_S: Final = 5.0
#: The longest wait between two probes of a bot that stays offline.
BACKOFF_MAX_S: Final = 300.0
#: What the bot page and the API say an outage costs the bot.
CONSEQUENCE: Final = "no new ladder tables until it answers"


@dataclass(frozen=True, slots=True)
class Outage:
    """A dialled bot's current outage, as its page shows it."""

    bot_id: int
    since: dt.datetime
    cause: str
    reason: str
    failures: int
    probe_at: dt.datetime

    @property
    def what(self) -> str:
        return "unreachable in a match" if self.cause == CAUSE_MATCH else "health check failed"

    def to_json(self) -> dict[str, Any]:
        return {
            "since": self.since.isoformat(),
            "cause": self.cause,
            "what": self.what,
            "reason": self.reason,
            "failed_probes": self.failures,
            "next_probe_at": self.probe_at.isoformat(),
            "consequence": CONSEQUENCE,
        }


def backoff_s(failures: int) -> float:
    """Seconds until the next probe after ``failures`` failed ones in a row (0: at once)."""
    if failures <= 0:
        return 0.0
    return float(min(BACKOFF_MAX_S, PROBE_EVERY_S * 2 ** min(failures - 1, 16)))


def clean_reason(reason: str, address: str | None = None) -> str:
    """A reason fit to store and show: without the bot's address or any IP, bounded."""
    return clean_text(redact_addresses(reason, [address]), REASON_CHARS) or "no answer"


def note_offline(
    session: Session,
    bot_id: int,
    cause: str,
    reason: str,
    *,
    address: str | None = None,
    probe_at: dt.datetime | None = None,
    now: dt.datetime | None = None,
) -> None:
    """Bot ``bot_id`` did not answer (``cause``, ``reason``): its outage starts now, or goes on
    with this as its latest reason. ``probe_at``: when to probe it next (default at once for a
    new outage; an outage going on keeps its own). In the caller's transaction."""
    now = now or utcnow()
    text = clean_reason(reason, address)
    values: dict[str, Any] = {"noted_at": now, "cause": cause, "reason": text}
    if probe_at is not None:
        values["probe_at"] = probe_at
    going_on = session.execute(
        update(BotOutage).where(BotOutage.bot_id == bot_id).values(**values).execution_options(
            synchronize_session=False
        )
    )
    if going_on.rowcount:  # type: ignore[attr-defined]
        return
    try:
        with session.begin_nested():  # two matches noting one bot at once: one row, the other updates
            session.add(BotOutage(bot_id=bot_id, since=now, failures=0, probe_at=probe_at or now, **values))
    except IntegrityError:
        session.execute(
            update(BotOutage).where(BotOutage.bot_id == bot_id).values(**values).execution_options(
                synchronize_session=False
            )
        )


def note_forfeit(
    session: Session, bot_id: int, match_id: int, reason: str, address: str | None = None
) -> None:
    """Bot ``bot_id`` forfeited match ``match_id`` because it could not be reached."""
    note_offline(session, bot_id, CAUSE_MATCH, f"match {match_id}: {reason}", address=address)


def answered(session: Session, bot_id: int) -> bool:
    """Bot ``bot_id`` answered (a health check passed): its outage, if any, is over."""
    done = session.execute(
        delete(BotOutage).where(BotOutage.bot_id == bot_id).execution_options(synchronize_session=False)
    )
    return bool(done.rowcount)  # type: ignore[attr-defined]


def answered_in(session: Session, bot_ids: Collection[int], match_id: int) -> None:
    """Bots ``bot_ids`` played match ``match_id`` through without being unreachable: an
    outage of theirs noted before the match began is over (one noted since is newer news).
    So a bot back online is seen even where no ladder runner probes."""
    began = select(Match.started_at).where(Match.id == match_id).scalar_subquery()
    session.execute(
        delete(BotOutage)
        .where(BotOutage.bot_id.in_(list(bot_ids)), BotOutage.noted_at < began)
        .execution_options(synchronize_session=False)
    )


def _dialled() -> Any:
    """The condition: the outage's bot is (still) dialled at an address."""
    return (Bot.address.is_not(None)) & (Bot.hosted.is_(None)) & (Bot.connected.is_(False))


def offline_among(session: Session, bot_ids: Iterable[int]) -> set[int]:
    """Those of ``bot_ids`` that are dialled and offline. One query over the outages, not the
    pool: a ladder asks about its whole pool at every tick, and few of its bots are down."""
    ids = set(bot_ids)
    if not ids:
        return set()
    down = session.scalars(select(BotOutage.bot_id).join(Bot, Bot.id == BotOutage.bot_id).where(_dialled()))
    return ids & set(down)


def outage_of(session: Session, bot_id: int) -> Outage | None:
    """The dialled bot's outage, None while it answers (or is not dialled)."""
    row = session.execute(
        select(BotOutage).join(Bot, Bot.id == BotOutage.bot_id).where(BotOutage.bot_id == bot_id, _dialled())
    ).scalar_one_or_none()
    if row is None:
        return None
    return Outage(row.bot_id, row.since, row.cause, row.reason, row.failures, row.probe_at)


def claim_due(
    session: Session, *, limit: int = PROBES_PER_ROUND, now: dt.datetime | None = None
) -> list[tuple[int, str, dt.datetime]]:
    """The outages whose probe is due, earliest first, up to ``limit``: (bot id, address,
    noted_at). Each is put off by a probe's length meanwhile (conditional on it being as read),
    so another runtime sharing the store does not probe it too."""
    now = now or utcnow()
    rows = session.execute(
        select(BotOutage.bot_id, Bot.address, BotOutage.probe_at, BotOutage.noted_at)
        .join(Bot, Bot.id == BotOutage.bot_id)
        .where(BotOutage.probe_at <= now, _dialled())
        .order_by(BotOutage.probe_at, BotOutage.bot_id)
        .limit(limit)
    ).all()
    held = now + dt.timedelta(seconds=2 * PROBE_TIMEOUT_S)
    out = []
    for bot_id, address, probe_at, noted_at in rows:
        took = session.execute(
            update(BotOutage)
            .where(BotOutage.bot_id == bot_id, BotOutage.probe_at == probe_at)
            .values(probe_at=held)
            .execution_options(synchronize_session=False)
        )
        if took.rowcount == 1:  # type: ignore[attr-defined]
            out.append((int(bot_id), str(address), noted_at))
    return out


def probe(address: str, allowed_hosts: Collection[str], timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Ask the bot at ``address`` its health (the standard gRPC health service), dialling what
    the address check passes now, as a match would: None when it answers SERVING, else why not."""
    from sdk import admission

    try:
        target = resolve_for_dial(address, allowed_hosts)
    except ArenaError as exc:
        return f"the arena will not dial it: {exc}"
    try:
        admission.check_health(address, timeout_s, dial=target.target, authority=target.authority)
    except admission.AdmissionError as exc:
        return str(exc)
    return None


def record_probe(
    session: Session,
    bot_id: int,
    error: str | None,
    *,
    address: str | None = None,
    noted_at: dt.datetime | None = None,
    now: dt.datetime | None = None,
) -> None:
    """A probe's outcome: an answer ends the outage, unless a failure was noted after the
    probe was claimed (``noted_at``: the outage's as read then; a forfeit recorded meanwhile is
    newer news); a failure counts, and puts the next probe off further."""
    now = now or utcnow()
    if error is None:
        query = delete(BotOutage).where(BotOutage.bot_id == bot_id)
        if noted_at is not None:
            query = query.where(BotOutage.noted_at <= noted_at)
        session.execute(query.execution_options(synchronize_session=False))
        return
    failures = (session.scalar(select(BotOutage.failures).where(BotOutage.bot_id == bot_id)) or 0) + 1
    note_offline(
        session,
        bot_id,
        CAUSE_HEALTH,
        error,
        address=address,
        probe_at=now + dt.timedelta(seconds=backoff_s(failures)),
        now=now,
    )
    session.execute(
        update(BotOutage)
        .where(BotOutage.bot_id == bot_id)
        .values(failures=failures)
        .execution_options(synchronize_session=False)
    )


def probe_due(
    database_url: str,
    allowed_hosts: Collection[str],
    *,
    limit: int = PROBES_PER_ROUND,
    at_once: int = PROBES_AT_ONCE,
    timeout_s: float = PROBE_TIMEOUT_S,
    now: dt.datetime | None = None,
) -> dict[int, bool]:
    """One round: probe the offline bots whose probe is due (by ``now``) and record what each
    answered; returns bot id -> answered. Two short transactions around the probes, none held
    while they run."""
    with session_scope(database_url) as session:
        due = claim_due(session, limit=limit, now=now)
    if not due:
        return {}
    with ThreadPoolExecutor(max(1, min(at_once, len(due))), thread_name_prefix="tonk-probe") as pool:
        errors = list(pool.map(lambda row: probe(row[1], allowed_hosts, timeout_s), due))
    with session_scope(database_url) as session:
        for (bot_id, address, noted_at), error in zip(due, errors, strict=True):
            record_probe(session, bot_id, error, address=address, noted_at=noted_at, now=now)
    answers = {bot_id: error is None for (bot_id, _, _), error in zip(due, errors, strict=True)}
    back = sorted(bot for bot, ok in answers.items() if ok)
    if back:
        log.info("dialled bots answering again: %s", back)
    return answers
