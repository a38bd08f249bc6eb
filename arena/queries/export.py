"""Every hand of a tournament, or of one bot, as ``tonk-hand/1`` JSON lines (one record a
line), for bot authors to train on. Streamed: one match's replay is decoded at a time, so an
export of any size runs in constant memory. Served by /api/v1/tournaments/<id>/hands and
/api/v1/bots/<name>/hands, and by ``tonk export``; each line passes ``tonk record verify``.

Only hands of finished deals are exported: a match is exported once every match of its deal
(the same table and deal number, every seat rotation) is done. Until then another rotation of
the same cards may still be playing, and its hands would tell that bot what is coming.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.errors import NotFoundError
from arena.queries.matches import deal_finished
from arena.store.models import Bot, Match, MatchSeat, Replay, Tournament
from arena.store.replays import decode
from sdk.referee import plain_record

#: Match ids read from the store per query while streaming.
BATCH = 200


class ExportNotFoundError(NotFoundError):
    """An export of a tournament or bot that does not exist."""


def finished_deal_matches(
    session: Session, *, tournament_id: int | None = None, bot_id: int | None = None, after: int = 0,
    limit: int = BATCH,
) -> list[int]:
    """Ids (ascending, above ``after``) of done matches whose whole deal is done."""
    query = select(Match.id).where(deal_finished(), Match.id > after)
    if tournament_id is not None:
        query = query.where(Match.tournament_id == tournament_id)
    if bot_id is not None:
        query = query.where(Match.id.in_(select(MatchSeat.match_id).where(MatchSeat.bot_id == bot_id)))
    return list(session.scalars(query.order_by(Match.id).limit(limit)))


def resolve(session: Session, *, tournament_id: int | None = None, bot_name: str | None = None) -> int | None:
    """Check what is exported exists; the bot's id when a bot is named."""
    if tournament_id is not None and session.get(Tournament, tournament_id) is None:
        raise ExportNotFoundError(f"there is no tournament {tournament_id}")
    if bot_name is None:
        return None
    bot_id = session.scalar(select(Bot.id).where(Bot.name == bot_name))
    if bot_id is None:
        raise ExportNotFoundError(f"there is no bot named {bot_name!r}")
    return bot_id


def hand_lines(
    session: Session, *, tournament_id: int | None = None, bot_id: int | None = None
) -> Iterator[str]:
    """The records, one JSON line each (newline included), in match and hand order. Each
    record carries ``arena``: its tournament, match and hand index (an extra top-level field,
    which tonk-hand/1 readers keep and ignore)."""
    after = 0
    while True:
        ids = finished_deal_matches(session, tournament_id=tournament_id, bot_id=bot_id, after=after)
        if not ids:
            return
        for match_id in ids:
            yield from _match_lines(session, match_id)
            session.expunge_all()  # keep only the current match's rows in memory
        after = ids[-1]


def _match_lines(session: Session, match_id: int) -> Iterator[str]:
    row = session.execute(
        select(Replay.format, Replay.data, Match.tournament_id)
        .join(Match, Match.id == Replay.match_id)
        .where(Replay.match_id == match_id)
    ).one_or_none()
    if row is None:
        return
    fmt, data, tournament_id = row
    for index, log in enumerate(decode(fmt, data)):
        record = plain_record(log)
        record["arena"] = {"tournament": tournament_id, "match": match_id, "hand": index}
        yield json.dumps(record, separators=(",", ":")) + "\n"
