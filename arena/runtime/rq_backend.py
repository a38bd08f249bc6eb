"""Match jobs on an RQ queue (``TONK_REDIS_URL``), for any number of workers on any number of
machines (``tonk worker``, arena/runtime/workers.py; a plain ``rq worker -u URL QUEUE`` works
as well).

RQ jobs get an explicit id, ``{queue}-match-{match_id}``, so a match is on the queue at most
once: submitting it again while it is queued is a no-op, and a finished or dead job is
replaced.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Final

JOB_FUNCTION: Final = "arena.runtime.jobs.play_match_job"
#: A job claims its match first thing; one still "started" this long after the driver first
#: saw it with its match pending lost its worker before the claim, and is replaced.
UNCLAIMED_S: Final = 15.0
#: RQ job statuses of a job that will still run.
QUEUED_STATUSES: Final = frozenset({"queued", "scheduled", "deferred"})
#: RQ keeps a finished job's result this long (seconds), a failed one's this long.
RESULT_TTL: Final = 3600
FAILURE_TTL: Final = 7 * 24 * 3600


class QueueNotConfiguredError(ValueError):
    """An RQ action without ``TONK_REDIS_URL``."""


class RqBackend:
    """Match jobs on an RQ queue."""

    def __init__(
        self,
        database_url: str,
        redis_url: str,
        queue_name: str,
        *,
        connection: Any = None,
        hosted_addresses: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        from redis import Redis
        from rq import Queue

        self.database_url = database_url
        self.hosted = dict(hosted_addresses) if hosted_addresses else None
        self.connection = connection or Redis.from_url(redis_url)
        self.queue = Queue(queue_name, connection=self.connection)
        # Matches seen pending while their job was "started", and since when (by ``clock``).
        self._unclaimed: dict[int, float] = {}
        self._clock = clock

    def job_id(self, match_id: int) -> str:
        return job_id(self.queue.name, match_id)

    def submit(self, match_ids: Sequence[int], *, replace: Collection[int] = ()) -> int:
        """Queue the (pending) matches that have no job waiting: none at all (never queued,
        or lost with a Redis restart), or one that finished or failed without playing its
        match, or one started by a worker that died before claiming it."""
        from rq import Queue
        from rq.job import Job

        if not match_ids:
            return 0
        # One pipelined HGET per job rather than Job.fetch_many: the driver asks about every
        # pending match at each sweep, and this is 6 to 9 times cheaper (bench/arena.py --sweep-only).
        statuses = self._statuses([self.job_id(m) for m in match_ids])
        now = self._clock()
        unclaimed: dict[int, float] = {}
        todo, stale = [], []
        for match_id, status in zip(match_ids, statuses, strict=True):
            if status in QUEUED_STATUSES:
                continue
            if status == "started" and match_id not in replace:
                since = self._unclaimed.get(match_id, now)
                if now - since < UNCLAIMED_S:
                    unclaimed[match_id] = since
                    continue
            if status is not None:
                stale.append(self.job_id(match_id))
            todo.append(match_id)
        asked = set(match_ids)
        self._unclaimed = {m: t for m, t in self._unclaimed.items() if m not in asked} | unclaimed
        if stale:
            with self.connection.pipeline() as pipe:
                for job in Job.fetch_many(stale, connection=self.connection):
                    if job is not None:
                        job.delete(pipeline=pipe)
                pipe.execute()
        if todo:
            self.queue.enqueue_many(
                [
                    Queue.prepare_data(
                        JOB_FUNCTION,
                        args=(match_id, self.database_url, self.hosted),
                        job_id=self.job_id(match_id),
                        timeout=self._timeout(),
                        result_ttl=RESULT_TTL,
                        failure_ttl=FAILURE_TTL,
                        description=f"match {match_id}",
                    )
                    for match_id in todo
                ]
            )
        return len(todo)

    def queued(self, match_ids: Collection[int]) -> set[int]:
        """Of ``match_ids``, those whose job is queued, or started and not yet unclaimed
        for ``UNCLAIMED_S`` (the driver passes pending matches only)."""
        ids = list(match_ids)
        if not ids:
            return set()
        now = self._clock()
        out = set()
        for match_id, status in zip(ids, self._statuses([self.job_id(m) for m in ids]), strict=True):
            if status == "started":
                if now - self._unclaimed.setdefault(match_id, now) < UNCLAIMED_S:
                    out.add(match_id)
                continue
            self._unclaimed.pop(match_id, None)
            if status in QUEUED_STATUSES:
                out.add(match_id)
        return out

    def _statuses(self, job_ids: Sequence[str]) -> list[str | None]:
        from rq.job import Job

        with self.connection.pipeline(transaction=False) as pipe:
            for job_id_ in job_ids:
                pipe.hget(Job.key_for(job_id_), "status")
            raw = pipe.execute()
        return [value.decode() if isinstance(value, bytes) else value for value in raw]

    def _timeout(self) -> int:
        # A generous ceiling: the referee bounds every decision; this only catches a hosted
        # bot that never returns. An expired job leaves its match to the recovery sweep.
        return 6 * 3600

    def close(self, *, cancel: bool = False) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()


def job_id(queue_name: str, match_id: int) -> str:
    """RQ job ids allow letters, digits, ``_`` and ``-`` only."""
    return f"{safe_name(queue_name)}-match-{match_id}"


def safe_name(text: str) -> str:
    """``text`` with what RQ refuses in names replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)
