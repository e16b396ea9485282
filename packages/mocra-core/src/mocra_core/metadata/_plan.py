"""`plan_work`: a run's modules given their work by a metadata source (which accounts, config, schedules).

Decided once, when the run starts, and handed to the engine as its modules (`CompiledModule.with_starts`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError
from ..modules import Account, CronEntry, Start
from ..schedule import CronSchedule
from ._code import CodeSchedule

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ..modules import CompiledModule
    from ._protocol import AssignmentRow, MetadataSource, ScheduleRow

__all__ = ("WorkPlan", "merge_config", "plan_work")

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WorkPlan:
    """The modules with their work, and a line per row or schedule left out, saying why."""

    modules: dict[str, CompiledModule]
    skipped: list[str] = field(default_factory=list)

    @property
    def runs(self) -> int:
        """How many runs the modules begin at the start and on their schedules."""
        return sum(len(m.starts) + sum(len(e.starts) for e in m.schedules) for m in self.modules.values())


def merge_config(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """`layers` merged, later over earlier; nested mappings merge key by key.

    Example:
        >>> merge_config({"a": 1, "http": {"timeout": 5, "retries": 2}}, {"http": {"timeout": 9}})
        {'a': 1, 'http': {'timeout': 9, 'retries': 2}}
    """
    merged: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            below = merged.get(key)
            if isinstance(value, dict) and isinstance(below, dict):
                merged[key] = merge_config(below, value)
            else:
                merged[key] = value
    return merged


async def plan_work(modules: Mapping[str, CompiledModule], source: MetadataSource) -> WorkPlan:
    """Give each module the runs `source` asks for: one start per enabled row, on its schedule if any.

    A row's start task has the module's `config` with the row's config over it; its account is an
    `Account` named `<account>@<platform>` (just `<account>` without a platform) with the source's
    credentials, so logins use them. Rows that are disabled, name a module this run does not define, or
    whose version differs from the code's are left out, each with a line in `skipped` (and the log). A
    module that does not start by itself (`autostart = False`) keeps its code's work.

    Raises:
        ConfigError: a schedule's cron expression is not valid (naming its module).
    """
    skipped: list[str] = []
    source_name = type(source).__name__
    rows: dict[str, list[AssignmentRow]] = {}
    for row in await source.assignments(include_disabled=True):
        reason = _left_out(row, modules.get(row.module))
        if reason is None:
            rows.setdefault(row.module, []).append(row)
        else:
            skipped.append(f"{_where(row)}: {reason}")
    schedules: dict[str, list[ScheduleRow]] = {}
    for schedule in await source.schedules():
        schedules.setdefault(schedule.module, []).append(schedule)
    planned: dict[str, CompiledModule] = {}
    for name, module in modules.items():
        if not module.autostart:
            planned[name] = module
            continue
        starts, accounts = await _starts(module, rows.get(name, []), source)
        if not starts:
            skipped.append(f"{name}: no enabled row for it: not started")
        at_start, entries = _scheduled(module, starts, schedules.get(name, []), skipped, source_name)
        planned[name] = module.with_starts(at_start, entries, accounts)
    for line in skipped:
        logger.warning("work: %s", line)
    return WorkPlan(planned, skipped)


def _where(row: AssignmentRow) -> str:
    return "/".join(part or "-" for part in (row.account, row.platform, row.module))


def _left_out(row: AssignmentRow, module: CompiledModule | None) -> str | None:
    if not row.enabled:
        return f"skipped, disabled ({row.disabled_by or 'disabled'})"
    if module is None:
        return f"skipped, this run defines no module {row.module!r}"
    if module.version and row.version and module.version != row.version:
        return (
            f"skipped, the store has version {row.version!r} of {row.module!r} and the code "
            f"{module.version!r}: update one of them"
        )
    return None


async def _starts(
    module: CompiledModule, rows: Sequence[AssignmentRow], source: MetadataSource
) -> tuple[list[Start], list[Account]]:
    starts: list[Start] = []
    accounts: dict[str, Account] = {}
    for row in rows:
        name = None if not row.account else f"{row.account}@{row.platform}" if row.platform else row.account
        if name is not None and name not in accounts:
            try:
                login = await source.credentials(row.account, row.platform or None)
            except Exception as exc:  # a secret that cannot be read (no key), the store gone: say whose
                raise ConfigError(
                    f"{module.name}.accounts",
                    f"the login of {row.account!r} on {row.platform!r} cannot be read: {exc}",
                    source=type(source).__name__,
                ) from None
            extra = dict(login.extra) if login is not None else {}
            if row.platform:
                extra.setdefault("platform", row.platform)
            accounts[name] = Account(
                name=name,
                username=login.username if login is not None else "",
                password=login.password if login is not None else "",
                extra=extra,
            )
        meta = merge_config(module.config, row.config)
        tenant, platform = row.account or None, row.platform or None
        starts.append(Start(name, meta, tenant=tenant, platform=platform, priority=row.priority))
    return starts, list(accounts.values())


def _scheduled(
    module: CompiledModule,
    starts: list[Start],
    schedules: Sequence[ScheduleRow],
    skipped: list[str],
    source_name: str,
) -> tuple[list[Start], list[CronEntry]]:
    """The starts at the crawl's start, and the schedules (a schedule's starts do not start at once).

    Without a schedule from the source, the module's own `cron` (its code's) schedules every start.
    """
    if not schedules:
        schedules = [CodeSchedule(module.name, None, None, e.cron, e.misfire) for e in module.schedules]
    entries: list[CronEntry] = []
    on_cron: set[int] = set()
    for schedule in schedules:
        try:
            CronSchedule(schedule.cron, misfire_tolerance=schedule.misfire)
        except ConfigError as exc:
            problem = str(exc).removeprefix(f"{exc.source}: {exc.key}: ")
            raise ConfigError(f"{module.name}.schedule", problem, source=source_name) from None
        picked = [
            i
            for i, start in enumerate(starts)
            if schedule.account in (None, start.tenant) and schedule.platform in (None, start.platform)
        ]
        if not picked:
            who = "/".join(part or "*" for part in (schedule.account, schedule.platform, module.name))
            skipped.append(f"schedule {schedule.cron!r} of {who}: no enabled row matches it")
            continue
        on_cron.update(picked)
        entries.append(CronEntry(schedule.cron, schedule.misfire, tuple(starts[i] for i in picked)))
    return [start for i, start in enumerate(starts) if i not in on_cron], entries
