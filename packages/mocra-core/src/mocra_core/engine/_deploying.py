"""`deploy_to_job`: `mocra deploy` for code — a job's new generation from a file, or a rollback."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import ConfigError
from ..generations import activate_number, deploy
from ._plan import BackendPlan

if TYPE_CHECKING:
    from ..config import Settings
    from ..generations import Deployed, JobGenerations

__all__ = ("deploy_to_job",)


async def deploy_to_job(
    settings: Settings, job: str, path: str | None, *, verify: str | None = None, activate: int | None = None
) -> Deployed | JobGenerations:
    """Deploy `path` to the job `settings` and `job` name (its queue or job dir), or activate generation N.

    Returns what `mocra_core.generations.deploy` returns (`Deployed`), or the job's record after a
    rollback (`activate`).

    Raises:
        ConfigError: neither `path` nor `activate`, or the settings name no job store (a single process
            without a job dir keeps no generations to deploy to).
        DeployRefused: the file fails to import or verify, or there is no generation `activate`.
        DeployConflict: another deploy activated first.
    """
    plan = BackendPlan.decide(settings, job=job, read_only=True)
    if not plan.shared and plan.job_dir is None:
        where = "deploy to a job on a broker (queue.url) or in a job dir (crawl.job_dir)"
        raise ConfigError("queue.url", where)
    async with plan.make_coordination() as coordination:
        if activate is not None:
            return await activate_number(coordination, activate, job=job)
        if path is None:
            raise ConfigError("path", "give the spiders' file to deploy, or a generation to activate")
        return await deploy(path, coordination, job=job, verify=verify)
