"""The body of each process of the embedded pool (arena.runtime.backends.EmbeddedBackend).

It takes a match id from the shared task queue only when one of its threads is free, so the
processes share the work, and reports each finished job on the done queue; a match whose
bots are busy goes back to the end of the task queue, as on RQ.
"""

from __future__ import annotations

import random
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.queues import Queue as ProcessQueue

from arena.play.lifecycle import Outcome
from arena.processes import exit_with
from arena.runtime.jobs import WAITING_PAUSE_S, play_match_job
from arena.sandbox.spares import close_all


def pool_process(
    tasks: ProcessQueue[int | None],
    done: ProcessQueue[tuple[int, str | None]],
    database_url: str,
    hosted_addresses: dict[str, str] | None,
    slots: int,
    owner: int | None = None,
) -> None:
    """Play the match ids read from ``tasks`` (None stops), ``slots`` at a time; report
    ``(match_id, None)`` or ``(match_id, error text)`` on ``done`` for each. ``owner``: the
    process whose pool this is; this one exits when it does, even by SIGKILL (no task would
    ever come, and a process left waiting would hold the fork server alive too)."""
    if owner is not None:
        exit_with(owner)
    free = threading.Semaphore(max(1, slots))

    def play(match_id: int) -> None:
        error: str | None = None
        try:
            if play_match_job(match_id, database_url, hosted_addresses) == Outcome.WAITING:
                # Its bots are busy (nobody paced the submissions, e.g. the dashboard's):
                # back to the end of the queue after a pause, still submitted for the parent.
                time.sleep(WAITING_PAUSE_S * (0.5 + random.random()))
                tasks.put(match_id)
                return
        except Exception as exc:  # the store has it (the match is failed); the parent logs it
            error = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:2000]
        finally:
            free.release()
        done.put((match_id, error))

    with ThreadPoolExecutor(max(1, slots), thread_name_prefix="tonk-match") as threads:
        while True:
            free.acquire()  # take work only when a thread is free for it
            match_id = tasks.get()
            if match_id is None:
                break
            threads.submit(play, match_id)
    close_all()  # the sandboxes started ahead of matches, and templates, end with this process
