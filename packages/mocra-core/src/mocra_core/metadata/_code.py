"""`CodeSource`: the work of a run as its code declares it (module classes and their `Account`s)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ..modules import Account, CompiledModule

__all__ = ("CodeAssignment", "CodeCredentials", "CodeSchedule", "CodeSource")


@dataclass(frozen=True, slots=True)
class CodeAssignment:
    """An `AssignmentRow` of code: a module and one of its accounts (`""`: its anonymous run)."""

    account: str
    platform: str
    module: str
    version: str
    priority: int = 0
    config: Mapping[str, Any] = field(default_factory=dict)
    enabled: bool = True
    disabled_by: str | None = None


@dataclass(frozen=True, slots=True, repr=False)
class CodeCredentials:
    """A `CredentialsRow` of an `Account` in code; the repr hides the password."""

    username: str
    password: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"CodeCredentials(username={self.username!r}, password='***')"


@dataclass(frozen=True, slots=True)
class CodeSchedule:
    """A `ScheduleRow` of a module's `cron`."""

    module: str
    account: str | None
    platform: str | None
    cron: str
    misfire: float = 60.0


class CodeSource:
    """A `MetadataSource` reading the modules of a run: each account of a module (or one anonymous run).

    Example:
        >>> import anyio
        >>> from mocra_core.modules import Account, Spider, compile_module
        >>> class Shop(Spider[None]):
        ...     name = "shop"
        ...     async def parse(self, response, ctx): ...
        >>> source = CodeSource([compile_module(Shop())])
        >>> [(row.module, row.account) for row in anyio.run(source.assignments)]
        [('shop', '')]
    """

    def __init__(self, modules: Iterable[CompiledModule]) -> None:
        self._modules = {module.name: module for module in modules}

    async def assignments(self, *, include_disabled: bool = False) -> list[CodeAssignment]:
        """One row per account of each module (`account=""` for a module without accounts)."""
        return [
            CodeAssignment(name, "", module.name, module.version or "", config=module.config)
            for module in self._modules.values()
            for name in [account.name for account in module.accounts] or [""]
        ]

    async def credentials(self, account: str, platform: str | None = None) -> CodeCredentials | None:
        """The `Account` named `account` in some module, or None."""
        for module in self._modules.values():
            found = _named(module.accounts, account)
            if found is not None:
                return CodeCredentials(found.username, found.password, found.extra)
        return None

    async def schedules(self) -> list[CodeSchedule]:
        """Each module's `cron`."""
        return [
            CodeSchedule(module.name, None, None, entry.cron, entry.misfire)
            for module in self._modules.values()
            for entry in module.schedules
        ]


def _named(accounts: Iterable[Account], name: str) -> Account | None:
    return next((account for account in accounts if account.name == name), None)
