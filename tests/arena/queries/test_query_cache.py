"""The query cache (arena/queries/cache.py): recomputed when its token changes, and while a
slow recompute (the ratings fit) runs in the background the previous value is answered; the
dashboard's app config sets how stale it may be."""

from __future__ import annotations

import threading
import time

from flask import Flask

from arena.queries import cache
from dashboard import cache_settings


def test_cached_recomputes_only_when_the_token_changes() -> None:
    cache.clear()
    calls: list[int] = []
    assert cache.cached("k", 1, lambda: calls.append(1) or "a") == "a"
    assert cache.cached("k", 1, lambda: calls.append(1) or "b") == "a"
    assert cache.cached("k", 2, lambda: calls.append(1) or "c") == "c"
    assert len(calls) == 2


def test_revalidated_answers_the_old_value_while_refitting() -> None:
    cache.clear()
    cache.configure(cache_settings)
    app = Flask(__name__)
    app.config["CACHE_FRESH_WAIT_SECONDS"] = 0.05
    release = threading.Event()
    refits: list[int] = []

    def slow() -> str:
        refits.append(1)
        release.wait(5)
        return "new"

    with app.app_context():
        assert cache.revalidated("board", 1, lambda: "old") == "old"
        assert cache.revalidated("board", 2, slow) == "old"  # the refit outlasts the wait
        assert cache.revalidated("board", 2, slow) == "old"
        release.set()
        deadline = time.monotonic() + 5
        while cache.revalidated("board", 2, slow) != "new":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert len(refits) == 1  # one refit for all who asked meanwhile
    app.config["CACHE_STALE_OK"] = False
    with app.app_context():
        assert cache.revalidated("board", 3, lambda: "now") == "now"  # tests: in the request


def test_a_quick_refit_is_answered_fresh() -> None:
    """The page right after a tournament shows its result (the newcomer's first rating):
    a refit done within the wait is what the request gets, not the board from before."""
    cache.clear()
    cache.configure(cache_settings)
    app = Flask(__name__)
    with app.app_context():
        assert cache.revalidated("board", 1, lambda: "before") == "before"
        assert cache.revalidated("board", 2, lambda: "after") == "after"


def test_commands_get_current_answers_outside_an_app() -> None:
    """`tonk leaderboard` after `tonk tournament run` in one process: no stale board."""
    cache.clear()
    cache.configure(cache_settings)
    assert cache.revalidated("board", 1, lambda: "before") == "before"
    assert cache.revalidated("board", 2, lambda: "after") == "after"
    counter = iter(range(100))
    assert cache.throttled("t", lambda: next(counter)) == 0
    assert cache.throttled("t", lambda: next(counter)) == 1  # no throttle outside a dashboard


def test_throttled_reuses_a_value_for_the_refresh_window() -> None:
    cache.clear()
    cache.configure(cache_settings)
    app = Flask(__name__)
    app.config["CACHE_REFRESH_SECONDS"] = 60
    counter = iter(range(100))
    with app.app_context():
        assert cache.throttled("t", lambda: next(counter)) == 0
        assert cache.throttled("t", lambda: next(counter)) == 0
    app.config["CACHE_REFRESH_SECONDS"] = 0
    with app.app_context():
        assert cache.throttled("t", lambda: next(counter)) == 1
        assert cache.throttled("t", lambda: next(counter)) == 2
