"""`Task`: a unit of work for one node of a module; the node turns it into requests."""

from __future__ import annotations

from typing import Any

import msgspec

from ..http import RoutedRecord  # noqa: TC001 - msgspec resolves it at runtime

__all__ = ("Task",)


class Task(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Ask node `node` of module `module` to generate requests.

    Attributes:
        module: Name of the module (for a Spider: its `name`).
        node: Node id within the module.
        meta: Data carried through every hop of the run.
        run: Id of the module run (one per start, per account, per cron firing).
        account: Account the run works for, if the module has accounts.
        origin: The request whose parse sent this task, with its routing (used by the fallback gate).
        inputs: For a fan-in node: the meta of every task gathered for it.
        v: Schema version (fields are only ever appended, with defaults).
        generation: The generation of its module that made it (`mocra_core.generations`); 0 unknown.

    Example:
        >>> Task(module="books", node="spider").node
        'spider'
    """

    module: str
    node: str
    meta: dict[str, Any] = {}
    run: str | None = None
    account: str | None = None
    origin: RoutedRecord | None = None
    inputs: list[dict[str, Any]] = []
    v: int = 1
    generation: int = 0
