"""`POST /api/v1/jobs/{job}/deploy`: deploy this node's own file to its job, or roll back, over HTTP.

What `mocra deploy` does through the job's coordination store, done by a node of the job: the way to deploy
to a job whose store lives inside its nodes (a Raft cluster's). The request never carries code or a path
(the trust model of `--reload`): `{}` prepares the file the node's run was started with (`--reload`) and
activates it; `{"activate": N}` activates generation N again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import msgspec

from ..control import JobEnded
from ..coordination import CoordinationError
from ..generations import (
    DeployConflict,
    Deployed,
    DeployRefused,
    JobGenerations,
    activate_number,
    deploy,
)
from ._json import ApiError, json_response, read_body

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from ..coordination import Coordination
    from ._context import AdminContext

__all__ = ("DeployAnswer", "DeployRequest", "Deployable", "deploy_job")


class DeployRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The body of `POST .../deploy`: `{}` (deploy the node's own file) or `{"activate": N}` (a rollback).

    `spiders` limits it to these modules (`mocra deploy --spider`). Nothing else is accepted: no code, no
    path (a node only ever deploys its own file).

    Example:
        >>> msgspec.json.decode(b'{"activate": 1}', type=DeployRequest)
        DeployRequest(activate=1, spiders=[])
    """

    activate: int | None = None
    spiders: list[str] = []


class DeployAnswer(msgspec.Struct, kw_only=True):
    """What a deploy through a node did: the fields of `Deployed`, the job, the node's file, the rollback's N.

    Attributes:
        job: The job's name.
        record: The job's generations after it.
        activated: Per module whose active generation changed, its number.
        unchanged: The modules whose code was already active.
        new: Modules the job did not have.
        removed: Modules of the job the file no longer defines (their generation drains).
        file: The node's file that was prepared (None: a rollback).
        rollback: The generation activated again (None: a deploy of the file).

    Example:
        >>> answer = DeployAnswer(job="books", record=JobGenerations(), rollback=1, activated={"books": 1})
        >>> msgspec.json.decode(msgspec.json.encode(answer), type=DeployAnswer).activated
        {'books': 1}
    """

    job: str
    record: JobGenerations
    activated: dict[str, int] = {}
    unchanged: list[str] = []
    new: list[str] = []
    removed: list[str] = []
    file: str | None = None
    rollback: int | None = None

    @classmethod
    def of(cls, done: Deployed, *, job: str, file: str) -> DeployAnswer:
        """The answer of a deploy of `file` that did `done`."""
        return cls(
            job=job, record=done.record, activated=done.activated, unchanged=done.unchanged,
            new=done.new, removed=done.removed, file=file,
        )  # fmt: skip

    def deployed(self) -> Deployed:
        """As the `Deployed` that `mocra deploy` prints."""
        return Deployed(
            record=self.record, activated=self.activated, unchanged=self.unchanged, new=self.new,
            removed=self.removed,
        )  # fmt: skip


@runtime_checkable
class Deployable(Protocol):
    """A job view that can be deployed to (`mocra_core.engine.EngineJobView` is one)."""

    def deploy_target(self) -> tuple[Coordination, str | None]:
        """The job's coordination store and the run's own file (`--reload`), or None."""
        ...


async def deploy_job(request: Request) -> Response:
    """`POST /api/v1/jobs/{job}/deploy` `{}` or `{"activate": N}`: 200 with the `DeployAnswer`.

    400: the file fails to import (nothing activated), or no such generation; 409: another deploy won
    (`DeployConflict`), the run has ended, or the node has no file of its own (not run with `--reload`).
    """
    context: AdminContext = request.app.state.admin
    name = request.path_params["job"]
    view = context.jobs.get(name)
    if view is None:
        known = [v.job for v in context.jobs.views()]
        raise ApiError(404, f"no job {name!r} on this node (it knows {known})")
    body = await read_body(request, DeployRequest)
    if not isinstance(view, Deployable):
        raise ApiError(404, f"job {name!r} cannot be deployed to through this node")
    try:
        coordination, source = view.deploy_target()
        return json_response(await _run(coordination, source, body, job=name))
    except JobEnded as exc:
        raise ApiError(409, str(exc)) from None
    except DeployConflict as exc:
        raise ApiError(409, str(exc)) from None
    except DeployRefused as exc:
        raise ApiError(400, str(exc)) from None
    except CoordinationError as exc:
        raise ApiError(503, f"job {name!r}: its coordination store failed: {exc}") from None


async def _run(
    coordination: Coordination, source: str | None, body: DeployRequest, *, job: str
) -> DeployAnswer:
    label = f"job {job!r}"
    if body.activate is not None:
        record = await activate_number(coordination, body.activate, job=label, spiders=body.spiders)
        activated = {n: gen for n, gen in sorted(record.active().items()) if gen == body.activate}
        return DeployAnswer(record=record, activated=activated, job=job, rollback=body.activate)
    if source is None:
        raise ApiError(
            409, f"{label}: this node was not started with --reload: it has no file of its own to deploy"
        )
    done = await deploy(source, coordination, job=label, spiders=body.spiders)
    return DeployAnswer.of(done, job=job, file=source)
