"""`Task`: a unit of work for one node of a module; a node turns it into requests."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ("Task",)


class Task(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Ask node `node` of module `module` to generate requests.

    Attributes:
        module: Name of the module (for a Spider: its `name`).
        node: Node id within the module.
        meta: Data carried through every hop of the task.
        v: Schema version (fields are only ever appended, with defaults).

    Example:
        >>> Task(module="books", node="start").node
        'start'
    """

    module: str
    node: str
    meta: dict[str, Any] = {}
    v: int = 1
