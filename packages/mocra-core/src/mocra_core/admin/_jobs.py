"""`/api/v1/jobs...`: list, read, steer (pause, resume, stop), start and deploy to jobs; dead letters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import msgspec
from starlette.routing import Route

from .._errors import MocraError
from ..control import JobEnded
from ._context import StartRequest
from ._deploy import deploy_job
from ._events import job_events
from ._json import ApiError, json_response, read_body

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from ..control import JobView
    from ._context import AdminContext

__all__ = ("job_routes",)


class ReplayRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The body of `POST .../dlq/replay`: the stage queues to replay (`task`, `request`, ...); unset: all."""

    topics: list[str] | None = None


def _context(request: Request) -> AdminContext:
    context: AdminContext = request.app.state.admin
    return context


def _view(request: Request) -> JobView:
    name = request.path_params["job"]
    view = _context(request).jobs.get(name)
    if view is None:
        known = [v.job for v in _context(request).jobs.views()]
        raise ApiError(404, f"no job {name!r} on this node (it knows {known})")
    return view


def _query_int(request: Request, name: str, default: int, *, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, f"{name}: expected an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise ApiError(400, f"{name}: must be between {low} and {high}, got {value}")
    return value


async def list_jobs(request: Request) -> Response:
    """`GET /api/v1/jobs`: `[{"job", "state", "control"}]`, the jobs this node knows."""
    rows = []
    for view in _context(request).jobs.views():
        snapshot = await view.snapshot()
        rows.append({"job": view.job, "state": snapshot.state, "control": snapshot.control})
    return json_response(rows)


async def get_job(request: Request) -> Response:
    """`GET /api/v1/jobs/{job}`: the job's `JobSnapshot`."""
    return json_response(await _view(request).snapshot())


async def events(request: Request) -> Response:
    """`GET /api/v1/jobs/{job}/events?interval=1`: a `snapshot` event every `interval` seconds (SSE)."""
    raw = request.query_params.get("interval", "1")
    try:
        interval = float(raw)
    except ValueError:
        raise ApiError(400, f"interval: expected seconds, got {raw!r}") from None
    if not interval >= 0.2:
        raise ApiError(400, f"interval: must be at least 0.2 seconds, got {raw}")
    return job_events(_view(request), interval=interval, closing=_context(request).closing)


async def dead_letters(request: Request) -> Response:
    """`GET /api/v1/jobs/{job}/dlq?topic=&limit=`: the job's dead letters, oldest first."""
    view = _view(request)
    topic = request.query_params.get("topic") or None
    limit = _query_int(request, "limit", 100, low=1, high=10_000)
    return json_response(list(await view.dead_letters(topic, limit=limit)))


async def replay(request: Request) -> Response:
    """`POST /api/v1/jobs/{job}/dlq/replay` `{"topics": [...]}`: `{"replayed": n}`."""
    view = _view(request)
    body = await read_body(request, ReplayRequest)
    try:
        replayed = await view.replay(body.topics)
    except JobEnded as exc:
        raise ApiError(409, str(exc)) from None
    return json_response({"replayed": replayed})


def _control(action: Literal["pause", "resume", "stop"]) -> Route:
    async def endpoint(request: Request) -> Response:
        view = _view(request)
        try:
            state = await getattr(view, action)()
        except JobEnded as exc:
            raise ApiError(409, str(exc)) from None
        return json_response({"control": state})

    endpoint.__doc__ = f'`POST /api/v1/jobs/{{job}}/{action}`: `{{"control": ...}}`.'
    return Route(f"/api/v1/jobs/{{job}}/{action}", endpoint, methods=["POST"])


async def start_job(request: Request) -> Response:
    """`POST /api/v1/jobs` `{"spider", "job"?, "settings"?, "start_urls"?}`: 202 `{"job": name}`."""
    starter = _context(request).starter
    if starter is None:
        raise ApiError(404, "this node starts no jobs: run `mocra serve spiders.py` or `mocra run --api`")
    body = await read_body(request, StartRequest)
    try:
        job = await starter.start(body)
    except MocraError as exc:
        raise ApiError(400, str(exc)) from None
    return json_response({"job": job}, status=202)


def job_routes() -> list[Route]:
    """The routes under `/api/v1/jobs`."""
    return [
        Route("/api/v1/jobs", list_jobs, methods=["GET"]),
        Route("/api/v1/jobs", start_job, methods=["POST"]),
        Route("/api/v1/jobs/{job}", get_job, methods=["GET"]),
        Route("/api/v1/jobs/{job}/events", events, methods=["GET"]),
        Route("/api/v1/jobs/{job}/dlq", dead_letters, methods=["GET"]),
        Route("/api/v1/jobs/{job}/dlq/replay", replay, methods=["POST"]),
        _control("pause"),
        _control("resume"),
        _control("stop"),
        Route("/api/v1/jobs/{job}/deploy", deploy_job, methods=["POST"]),
    ]
