"""The match job's dotted paths: the one this release queues, and the one jobs queued by the
previous release name (``arena.jobs.play_match_job``), which must still run for one release."""

from __future__ import annotations

from rq.utils import import_attribute

from arena.runtime import jobs
from arena.runtime.rq_backend import JOB_FUNCTION


def test_the_queued_path_and_the_old_one_are_the_same_job() -> None:
    assert JOB_FUNCTION == "arena.runtime.jobs.play_match_job"
    assert import_attribute(JOB_FUNCTION) is jobs.play_match_job
    assert import_attribute("arena.jobs.play_match_job") is jobs.play_match_job
