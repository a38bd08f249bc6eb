"""Read-side queries of the dashboard, one module per area, straight on the arena schema.

They return plain dicts (JSON-ready) so a page and its API route always show the same
numbers. Where an arena module owns a computation (ratings, replay decoding), the code here
calls it; see each module.
"""

from __future__ import annotations

import datetime as dt


def iso(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:  # SQLite hands back naive datetimes; they were stored as UTC
        value = value.replace(tzinfo=dt.UTC)
    return value.isoformat(timespec="seconds")
