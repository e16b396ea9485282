"""What the engine reads from a metadata source (the work of a run) and writes to it (run records).

Two implementations: `CodeSource` (the accounts and modules written in code) and a `mocra_store.Store`
(through `mocra[store]`), which satisfies these protocols structurally: it never imports `mocra_core`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ("AssignmentRow", "CredentialsRow", "MetadataSource", "RunLog", "ScheduleRow")


class AssignmentRow(Protocol):
    """One (account, platform, module) the source wants run, with its merged config.

    `account` and `platform` are `""` for a module's anonymous run (code without accounts).
    """

    @property
    def account(self) -> str: ...
    @property
    def platform(self) -> str: ...
    @property
    def module(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def config(self) -> Mapping[str, Any]: ...
    @property
    def enabled(self) -> bool: ...
    @property
    def disabled_by(self) -> str | None: ...


class CredentialsRow(Protocol):
    """A login: what `Account.username`, `.password` and `.extra` are made of."""

    @property
    def username(self) -> str: ...
    @property
    def password(self) -> str: ...
    @property
    def extra(self) -> Mapping[str, Any]: ...


class ScheduleRow(Protocol):
    """Run `module` (for `account`, on `platform`, when set) at every time `cron` names."""

    @property
    def module(self) -> str: ...
    @property
    def account(self) -> str | None: ...
    @property
    def platform(self) -> str | None: ...
    @property
    def cron(self) -> str: ...
    @property
    def misfire(self) -> float: ...


@runtime_checkable
class MetadataSource(Protocol):
    """Where a run's work comes from: which modules run for which accounts, with what config and when."""

    async def assignments(self, *, include_disabled: bool = False) -> Sequence[AssignmentRow]:
        """Every row to run (and, with `include_disabled`, those not to, `disabled_by` saying why)."""
        ...

    async def credentials(self, account: str, platform: str | None = None) -> CredentialsRow | None:
        """The login of `account` on `platform`, or None."""
        ...

    async def schedules(self) -> Sequence[ScheduleRow]:
        """The enabled schedules."""
        ...


@runtime_checkable
class RunLog(Protocol):
    """Where a run's record goes: one per run of an (account, platform, module)."""

    async def run_started(
        self, run_id: str, *, account: str | None, platform: str | None, module: str, worker: str
    ) -> None:
        """A run began."""
        ...

    async def run_finished(
        self, run_id: str, *, status: str, stats: Mapping[str, Any], error: str | None = None
    ) -> None:
        """A run ended: `"succeeded"`, `"failed"` or `"cancelled"`."""
        ...
