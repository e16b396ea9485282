"""Run records: started, finished, listed newest first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from ._errors import NotFound, StoreError
from ._types import utcnow
from .models import RUN_STATUSES, RunRecord
from .records import RunEntry

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ("finish_run", "list_runs", "start_run")

FINAL_STATUSES = tuple(status for status in RUN_STATUSES if status != "running")


async def start_run(
    session: AsyncSession, run_id: str, *, account: str | None, platform: str | None, module: str, worker: str
) -> None:
    """Record a run as running; a run id can start once."""
    if await session.scalar(select(RunRecord.id).where(RunRecord.run_id == run_id)) is not None:
        raise StoreError(f"run {run_id!r} was started already")
    session.add(RunRecord(run_id=run_id, account=account, platform=platform, module=module, worker=worker))


async def finish_run(
    session: AsyncSession, run_id: str, *, status: str, stats: Mapping[str, Any], error: str | None
) -> None:
    """Record how a run ended: ``status`` is "succeeded", "failed" or "cancelled"."""
    if status not in FINAL_STATUSES:
        raise ValueError(f"status must be one of {', '.join(FINAL_STATUSES)}, got {status!r}")
    record = await session.scalar(select(RunRecord).where(RunRecord.run_id == run_id))
    if record is None:
        raise NotFound(f"no run {run_id!r} was started")
    record.status, record.stats, record.error = status, dict(stats), error
    record.finished_at = utcnow()


def _entry(record: RunRecord) -> RunEntry:
    return RunEntry(
        run_id=record.run_id,
        module=record.module,
        account=record.account,
        platform=record.platform,
        worker=record.worker,
        status=record.status,
        started_at=record.started_at,
        finished_at=record.finished_at,
        stats=dict(record.stats),
        error=record.error,
    )


async def list_runs(
    session: AsyncSession, *, module: str | None, account: str | None, limit: int
) -> list[RunEntry]:
    """The newest ``limit`` runs, optionally of one module and/or account."""
    query = select(RunRecord).order_by(RunRecord.started_at.desc(), RunRecord.id.desc()).limit(limit)
    if module is not None:
        query = query.where(RunRecord.module == module)
    if account is not None:
        query = query.where(RunRecord.account == account)
    return [_entry(record) for record in await session.scalars(query)]
