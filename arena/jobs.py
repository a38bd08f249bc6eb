"""The old dotted path of the match job, ``arena.jobs.play_match_job``: jobs that an earlier
release put on a queue still name it. Kept for one release; the job is arena/runtime/jobs.py."""

from arena.runtime.jobs import play_match_job

__all__ = ["play_match_job"]
