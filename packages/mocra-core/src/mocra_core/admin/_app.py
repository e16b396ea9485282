"""`admin_app`: the Starlette app of the admin server (probes, `/metrics`, `/api/v1`, the dashboard)."""

from __future__ import annotations

import logging
import pathlib
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ._guard import AccessGuard
from ._jobs import job_routes
from ._json import ApiError, error_response, json_response
from ._store import store_routes

if TYPE_CHECKING:
    from starlette.requests import Request

    from ._context import AdminContext

__all__ = ("STATIC", "admin_app")

logger = logging.getLogger(__name__)

STATIC = pathlib.Path(__file__).parent / "static"
"""The dashboard's files (shipped in the wheel)."""


def _context(request: Request) -> AdminContext:
    context: AdminContext = request.app.state.admin
    return context


async def health(request: Request) -> Response:
    """`GET /health`: 200 while the process serves."""
    return json_response({"status": "ok"})


async def ready(request: Request) -> Response:
    """`GET /ready`: 200 with the state when the node is ready or working, else 503 with it."""
    ok, state = _context(request).readiness()
    return json_response({"state": state}, status=200 if ok else 503)


async def metrics(request: Request) -> Response:
    """`GET /metrics`: the jobs' and the process's metrics in Prometheus's text format."""
    from ._metrics import render_metrics

    body, content_type = await render_metrics(_context(request).jobs.views())
    return Response(body, media_type=content_type)


async def cluster(request: Request) -> Response:
    """`GET /api/v1/cluster`: the control plane's nodes as a job of this node sees them (`[]`: no cluster)."""
    for view in reversed(_context(request).jobs.views()):  # the newest job first
        nodes = (await view.snapshot()).cluster
        if nodes:
            return json_response(nodes)
    return json_response([])


async def dashboard(request: Request) -> Response:
    """`GET /`: the dashboard page."""
    page = STATIC / "index.html"
    if not page.is_file():
        raise ApiError(404, "the dashboard's files are not installed")
    return FileResponse(page, headers={"Cache-Control": "no-cache"})


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.message, exc.headers)


async def _http_error(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 500)
    detail = getattr(exc, "detail", "") or "error"
    if status == 404:
        detail = f"no such path: {request.method} {request.url.path}"
    elif status == 405:
        detail = f"{request.method} is not allowed on {request.url.path}"
    return error_response(status, str(detail), getattr(exc, "headers", None))


async def _unexpected(request: Request, exc: Exception) -> Response:
    logger.error("admin API: %s %s failed", request.method, request.url.path, exc_info=exc)
    return error_response(500, f"internal error: {type(exc).__name__}: {exc}")


def admin_app(context: AdminContext) -> Starlette:
    """The admin app over `context`: security (keys, rate, CORS) as `context.settings` says.

    Example:
        >>> from mocra_core.control import JobRegistry
        >>> from mocra_core.admin import AdminContext
        >>> app = admin_app(AdminContext(jobs=JobRegistry(), readiness=lambda: (True, "idle")))
        >>> sorted({route.path for route in app.routes})[:3]
        ['/', '/api/v1/cluster', '/api/v1/jobs']
    """
    from starlette.exceptions import HTTPException

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/ready", ready, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/", dashboard, methods=["GET"]),
        Route("/api/v1/cluster", cluster, methods=["GET"]),
        *job_routes(),
        *store_routes(),
        Mount("/static", StaticFiles(directory=STATIC, check_dir=False), name="static"),
    ]
    middleware = []
    settings = context.settings
    if settings.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=settings.cors_origins,
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "X-API-Key", "Content-Type"],
                max_age=600,
            )
        )
    middleware.append(Middleware(AccessGuard, settings=settings))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={ApiError: _api_error, HTTPException: _http_error, Exception: _unexpected},
    )
    app.state.admin = context
    return app
