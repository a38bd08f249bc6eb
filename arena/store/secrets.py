"""The arena's own secrets, kept in the store so every process of one arena shares them and
no other arena has them.

Each secret has a name (``deal``: mixed into every tournament seed, arena/tournaments;
``claim``: the key of owners' claim codes, arena/bots/claims.py). Secrets are made up (32
random bytes each) with the schema, by arena/store/migrate.py's ``ensure_schema`` or
migration 0009, so asking for one is a read: a registration's session, which stays open
through seconds of checks, takes no write lock for it. (One missing anyway is made up on
first use.) They never leave the store; a copy of the store is the same arena. Rotating one
replaces it, so whatever was derived from it stops matching (claim codes: every owner must
serve the new code; deals already dealt keep their stored seeds).
"""

from __future__ import annotations

import secrets
from typing import Final

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from arena.store.models import ArenaSecret, utcnow

#: The secrets the arena knows (others are a programming error, not input).
SECRET_NAMES: Final = ("deal", "claim")
SECRET_BYTES: Final = 32


def arena_secret(session: Session, name: str) -> bytes:
    """The secret ``name``, made up and stored the first time it is asked for. Two processes
    asking at once agree: the insert is ignored on conflict and both read the winner's."""
    _check_name(name)
    found = session.scalars(select(ArenaSecret.value).where(ArenaSecret.name == name)).first()
    if found is None:
        fresh = secrets.token_hex(SECRET_BYTES)
        dialect = session.get_bind().dialect.name
        maker = pg_insert if dialect == "postgresql" else sqlite_insert
        session.execute(
            maker(ArenaSecret)
            .values(name=name, value=fresh, created_at=utcnow())
            .on_conflict_do_nothing(index_elements=["name"])
        )
        found = session.scalars(select(ArenaSecret.value).where(ArenaSecret.name == name)).one()
    return bytes.fromhex(found)


def rotate_secret(session: Session, name: str) -> None:
    """Replace the secret ``name`` by a fresh one."""
    set_secret(session, name, secrets.token_bytes(SECRET_BYTES))


def fresh_secrets() -> list[dict[str, object]]:
    """A row of new random secrets for every name (a new store's, see ensure_schema)."""
    now = utcnow()
    return [{"name": n, "value": secrets.token_hex(SECRET_BYTES), "created_at": now} for n in SECRET_NAMES]


def set_secret(session: Session, name: str, value: bytes) -> None:
    """Set the secret ``name`` to ``value`` (tests that must deal the same cards every run,
    and restoring an arena's secrets from a backup)."""
    _check_name(name)
    session.execute(delete(ArenaSecret).where(ArenaSecret.name == name))
    session.add(ArenaSecret(name=name, value=value.hex(), created_at=utcnow()))
    session.flush()


def _check_name(name: str) -> None:
    if name not in SECRET_NAMES:
        raise ValueError(f"unknown arena secret {name!r}; known: {', '.join(SECRET_NAMES)}")
