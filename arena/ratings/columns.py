"""Every done match read from the store as columns, for a big store's first fit.

:func:`arena.ratings.leaderboard.match_results` makes a RatedMatch per match, checked one by
one: at 10 million matches that is minutes and gigabytes before any fitting. Here the store
packs the two tables the fit needs into a few large binary values of fixed-width rows that
numpy reads in place (:data:`_SEATS`, :data:`_MATCHES`), and they are joined and grouped by
table size in numpy, then added with ``RatingModel.add_columns``. The matches are the same,
in the same order (by id, seats by number), with the same deal keys ``(tournament, seed)``,
so the fit is the same as from ``match_results``; other databases (SQLite: a single
process's small store) take that path.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from arena.ratings.model import RatingModel
from arena.store.statuses import UNRATED_KINDS

#: One seat, as the server packs it (``int4send``: big-endian), and one done match.
_SEATS = np.dtype([("match", ">i4"), ("seat", ">i4"), ("version", ">i4"), ("score", ">i4")])
_MATCHES = np.dtype([("id", ">i4"), ("tournament", ">i4"), ("seed", ">i8")])
#: Match ids per query: bounds one packed value (16 bytes a seat) well under bytea's 1 GB.
CHUNK = 2_000_000

SEATS_SQL = (
    "SELECT string_agg(int4send(match_id) || int4send(seat) || int4send(bot_version_id) || int4send(score), "
    "''::bytea) FROM match_seats WHERE score IS NOT NULL AND match_id BETWEEN :lo AND :hi"
)
MATCHES_SQL = (
    "SELECT string_agg(int4send(id) || int4send(tournament_id) || int8send(seed), ''::bytea) "
    "FROM matches WHERE status = 'done' AND id BETWEEN :lo AND :hi "
    # Matches of unrated kinds (challenges: arena.store.statuses.UNRATED_KINDS) are left out;
    # their seats then have no match to join and are dropped with those of unfinished ones.
    "AND tournament_id NOT IN (SELECT id FROM tournaments WHERE kind IN ("
    + ", ".join(f"'{kind}'" for kind in UNRATED_KINDS)
    + "))"
)


class ColumnsError(RuntimeError):
    """The store sent rows of a shape this reader does not expect (a changed schema)."""


def load_done(session: Session, model: RatingModel) -> bool:
    """Add every done match of the store to an empty ``model`` as columns; False (nothing
    added) where the store is not PostgreSQL, for the caller to use ``match_results``."""
    if session.get_bind().dialect.name != "postgresql":
        return False
    top = session.scalar(text("SELECT max(id) FROM matches")) or 0
    engine = session.get_bind().engine
    # The two reads on two connections at once: the server packs while numpy waits. Read in
    # two transactions, a match done between them either has its seats or is left for the
    # next update, which reads recent matches (arena/ratings/leaderboard.py).
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="tonk-columns") as pool:
        seats_read = pool.submit(_packed, engine, SEATS_SQL, _SEATS, top)
        matches = _packed(engine, MATCHES_SQL, _MATCHES, top)
        seats = seats_read.result()
    # Match ids are below ``top``: a done match's row is found by indexing, not searching.
    row_of = np.full(top + 1, -1, dtype=np.int64)
    row_of[matches["id"].astype(np.int64)] = np.arange(len(matches))
    match = seats["match"].astype(np.int64)
    at = row_of[match]
    keep = at >= 0
    seats, at = seats[keep], at[keep]  # the seats of done matches
    key = seats["match"].astype(np.int64) * 64 + seats["seat"].astype(np.int64)
    if len(key) and (key[1:] < key[:-1]).any():  # the server usually sends them in order
        order = np.argsort(key, kind="stable")
        seats, at = seats[order], at[order]
    match = seats["match"].astype(np.int64)
    starts = np.flatnonzero(np.r_[True, match[1:] != match[:-1]]) if len(match) else np.zeros(0, np.int64)
    sizes = np.diff(np.r_[starts, len(match)])
    played = sizes >= 2  # one scored seat is no result (match_results's RatedMatch refuses it)
    if not played.all():
        seat_keep = np.repeat(played, sizes)
        seats, at = seats[seat_keep], at[seat_keep]
        starts, sizes = starts[played], sizes[played]
        starts = np.cumsum(sizes) - sizes
    rows = matches[at[starts]]
    model.add_columns(
        rows["id"].astype(np.int64),
        sizes,
        seats["version"].astype(np.int64),
        seats["score"].astype(np.float64),
        (rows["tournament"].astype(np.int64), rows["seed"].astype(np.int64)),
    )
    return True


def _packed(engine: Engine, sql: str, dtype: np.dtype[Any], top: int) -> npt.NDArray[Any]:
    """The rows ``sql`` packs into one bytea per range of match ids, as a structured array:
    the server sends a few large values, not a message per row (psycopg's COPY reads one
    row a call: 2.3 s for 600,000 rows, most of it Python)."""
    parts = []
    with engine.connect() as connection:
        for lo in range(0, top + 1, CHUNK):
            data = connection.execute(text(sql), {"lo": lo, "hi": lo + CHUNK - 1}).scalar()
            if data is None:
                continue
            if len(data) % dtype.itemsize:
                raise ColumnsError(f"{len(data)} bytes are not whole rows of {dtype.itemsize}: {sql[:60]!r}")
            parts.append(np.frombuffer(data, dtype=dtype))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
