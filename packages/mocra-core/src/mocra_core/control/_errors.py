"""`JobEnded`: a write to a job whose run here has ended."""

from __future__ import annotations

from .._errors import MocraError

__all__ = ("JobEnded",)


class JobEnded(MocraError):
    """The job's run on this node has ended: it can be read, not steered (the admin API answers 409).

    Example:
        >>> str(JobEnded("books", "finished"))
        "job 'books' is not running here (its run ended: finished); run it again to steer it"
    """

    def __init__(self, job: str, reason: str) -> None:
        ended = f"its run ended: {reason}"
        super().__init__(f"job {job!r} is not running here ({ended}); run it again to steer it")
        self.job = job
        self.reason = reason
