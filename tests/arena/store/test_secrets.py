"""The arena's secrets: made up once per store, shared by every session, rotatable."""

from __future__ import annotations

import threading

import pytest

from arena.store.db import dispose_engines, session_scope
from arena.store.secrets import SECRET_BYTES, arena_secret, rotate_secret, set_secret


def test_a_secret_is_made_once_and_kept(db_url: str) -> None:
    with session_scope(db_url) as session:
        first = arena_secret(session, "deal")
    with session_scope(db_url) as session:
        assert arena_secret(session, "deal") == first and len(first) == SECRET_BYTES
        assert arena_secret(session, "claim") != first  # each name its own
        rotate_secret(session, "deal")
    with session_scope(db_url) as session:
        assert arena_secret(session, "deal") != first
        set_secret(session, "deal", b"fixed")
    with session_scope(db_url) as session:
        assert arena_secret(session, "deal") == b"fixed"
        with pytest.raises(ValueError, match="'nope'"):
            arena_secret(session, "nope")
    dispose_engines()


def test_sessions_asking_at_once_agree(pg_url: str) -> None:
    seen: list[bytes] = []
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def ask() -> None:
        try:
            with session_scope(pg_url) as session:
                start.wait()
                seen.append(arena_secret(session, "claim"))
        except BaseException as error:  # reported below, not lost in the thread
            errors.append(error)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(seen) == 8 and len(set(seen)) == 1
    dispose_engines()
