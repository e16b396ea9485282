"""`/api/v1/store/...`: the accounts and the run history of the node's store (`[store] url`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.routing import Route

from .._errors import BackendUnavailable, MocraError
from ..metadata import open_store
from ._json import ApiError, json_response

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from ..metadata import RunRow

__all__ = ("store_routes",)


def _url(request: Request) -> str:
    url: str | None = request.app.state.admin.store_url
    if url is None:
        raise ApiError(404, "this node has no store: set [store] url (or --store)")
    return url


def _run(row: RunRow) -> dict[str, Any]:
    return {
        "run_id": row.run_id,
        "module": row.module,
        "account": row.account,
        "platform": row.platform,
        "worker": row.worker,
        "status": row.status,
        "started_at": row.started_at.isoformat(),
        "finished_at": None if row.finished_at is None else row.finished_at.isoformat(),
        "stats": dict(row.stats),
        "error": row.error,
    }


async def accounts(request: Request) -> Response:
    """`GET /api/v1/store/accounts`: `[{"name", "enabled"}]`."""
    try:
        async with open_store(_url(request)) as store:
            rows = [{"name": a.name, "enabled": a.enabled} for a in await store.accounts()]
    except BackendUnavailable as exc:
        raise ApiError(503, str(exc)) from None
    except MocraError as exc:
        raise ApiError(500, str(exc)) from None
    return json_response(rows)


async def runs(request: Request) -> Response:
    """`GET /api/v1/store/runs?module=&limit=`: run records, newest first."""
    module = request.query_params.get("module") or None
    raw = request.query_params.get("limit") or "50"
    if not raw.isdigit() or not 1 <= int(raw) <= 1000:
        raise ApiError(400, f"limit: expected an integer from 1 to 1000, got {raw!r}")
    try:
        async with open_store(_url(request)) as store:
            rows = [_run(row) for row in await store.runs(module=module, limit=int(raw))]
    except BackendUnavailable as exc:
        raise ApiError(503, str(exc)) from None
    except MocraError as exc:
        raise ApiError(500, str(exc)) from None
    return json_response(rows)


def store_routes() -> list[Route]:
    """The routes under `/api/v1/store`."""
    return [
        Route("/api/v1/store/accounts", accounts, methods=["GET"]),
        Route("/api/v1/store/runs", runs, methods=["GET"]),
    ]
