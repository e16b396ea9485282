"""The errors of deploying a generation: another deploy won, or the code was refused."""

from __future__ import annotations

from .._errors import MocraError

__all__ = ("DeployConflict", "DeployRefused")


class DeployConflict(MocraError):
    """Another deploy (or rollback) changed the job's generations of these modules since this one read them.

    Nothing was activated by this deploy: run it again to deploy over the other one.

    Example:
        >>> print(DeployConflict("job 'j'", ["news"]))
        job 'j': another deploy changed the generations of 'news' first; nothing was activated (deploy again)
    """

    def __init__(self, job: str, modules: list[str]) -> None:
        names = ", ".join(repr(name) for name in modules)
        super().__init__(
            f"{job}: another deploy changed the generations of {names} first; nothing was activated "
            "(deploy again)"
        )
        self.job = job
        self.modules = modules


class DeployRefused(MocraError):
    """The code of a deploy failed to import or to verify: nothing was activated.

    Example:
        >>> str(DeployRefused("spider.py", "importing it failed: SyntaxError"))
        'spider.py: not activated: importing it failed: SyntaxError'
    """

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: not activated: {problem}")
        self.source = source
        self.problem = problem
