"""Checks that node ids and edges form a DAG, and computes its stable topological order."""

from __future__ import annotations

from collections import Counter
from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING

from ._errors import (
    CycleError,
    DuplicateNodeError,
    EmptyGraphError,
    InvalidNodeIdError,
    ReservedNodeIdError,
    UnknownNodeError,
    UnreachableNodeError,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("Shape", "check_node_id", "validate")

RESERVED_PREFIX = "__"


class Shape:
    """The validated structure of a graph: order, predecessors and successors by node id."""

    __slots__ = ("order", "predecessors", "successors")

    def __init__(
        self,
        order: tuple[str, ...],
        predecessors: dict[str, tuple[str, ...]],
        successors: dict[str, tuple[str, ...]],
    ) -> None:
        self.order = order
        self.predecessors = predecessors
        self.successors = successors


def check_node_id(node: object) -> str:
    """Return `node` if it is a usable node id.

    Raises:
        InvalidNodeIdError: Not a string, empty, or contains NUL.
        ReservedNodeIdError: Starts with `__`.

    Example:
        >>> check_node_id("extract")
        'extract'
        >>> check_node_id("__run__")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        mocra_dag._errors.ReservedNodeIdError: invalid node id '__run__': ids starting with '__' ...
    """
    if not isinstance(node, str):
        raise InvalidNodeIdError(node, f"expected a string, got {type(node).__name__}")
    if not node.strip():
        raise InvalidNodeIdError(node, "expected a non-blank string")
    if "\x00" in node:
        raise InvalidNodeIdError(node, "NUL characters are not allowed")
    if node.startswith(RESERVED_PREFIX):
        raise ReservedNodeIdError(node)
    return node


def validate(
    ids: Sequence[str], edges: Sequence[tuple[str, str]], entry: Sequence[str] | None = None
) -> Shape:
    """Validate a graph and return its shape.

    Checks run in this order, and the first that fails raises: empty graph, node ids, duplicates, unknown
    edge ends and entries, cycles, reachability from `entry` (only when given). Repeated edges count once.
    The topological order is stable: among the nodes ready at a time, the one declared first comes first,
    so a graph declared in a valid order keeps that order.

    Args:
        ids: Node ids in declaration order.
        edges: `(source, target)` pairs: `target` runs after `source`.
        entry: If given, every node must be reachable from one of these.

    Raises:
        GraphError: One of its subclasses, naming the offending node(s).

    Example:
        >>> validate(["load", "extract"], [("extract", "load")]).order
        ('extract', 'load')
        >>> validate(["a", "b"], [("a", "b"), ("b", "a")])
        Traceback (most recent call last):
        ...
        mocra_dag._errors.CycleError: cycle: a -> b -> a
    """
    if not ids:
        raise EmptyGraphError
    for node in ids:
        check_node_id(node)
    index = {node: i for i, node in enumerate(ids)}
    if len(index) != len(ids):
        raise DuplicateNodeError(node for node, n in Counter(ids).items() if n > 1)
    preds: dict[str, list[str]] = {node: [] for node in ids}
    succs: dict[str, list[str]] = {node: [] for node in ids}
    for source, target in dict.fromkeys(edges):
        if source not in index:
            raise UnknownNodeError(source, referenced_by=target)
        if target not in index:
            raise UnknownNodeError(target, referenced_by=source)
        if source == target:
            raise CycleError([source, source])
        preds[target].append(source)
        succs[source].append(target)
    for node in entry or ():
        if node not in index:
            raise UnknownNodeError(node, referenced_by="entry")
    order = _topological(ids, index, preds, succs)
    if entry is not None:
        _check_reachable(ids, succs, entry)
    return Shape(
        order,
        {node: tuple(p) for node, p in preds.items()},
        {node: tuple(s) for node, s in succs.items()},
    )


def _topological(
    ids: Sequence[str], index: dict[str, int], preds: dict[str, list[str]], succs: dict[str, list[str]]
) -> tuple[str, ...]:
    waiting = {node: len(p) for node, p in preds.items()}
    ready = [index[node] for node in ids if not waiting[node]]
    heapify(ready)
    order: list[str] = []
    while ready:
        node = ids[heappop(ready)]
        order.append(node)
        for nxt in succs[node]:
            waiting[nxt] -= 1
            if not waiting[nxt]:
                heappush(ready, index[nxt])
    if len(order) != len(ids):
        raise CycleError(_find_cycle({node for node, n in waiting.items() if n}, index, preds))
    return tuple(order)


def _find_cycle(left: set[str], index: dict[str, int], preds: dict[str, list[str]]) -> list[str]:
    # Every node left over by Kahn's algorithm has a predecessor that is also left over: walking
    # predecessors must revisit a node, and the walk between the two visits is a cycle.
    node = min(left, key=index.__getitem__)
    seen: dict[str, int] = {}
    path: list[str] = []
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = next(p for p in preds[node] if p in left)
    cycle = path[seen[node] :]
    cycle.reverse()  # walked backwards: put it in edge order, starting from the first declared node
    first = min(range(len(cycle)), key=lambda i: index[cycle[i]])
    cycle = cycle[first:] + cycle[:first]
    return [*cycle, cycle[0]]


def _check_reachable(ids: Sequence[str], succs: dict[str, list[str]], entry: Sequence[str]) -> None:
    reached = set(entry)
    stack = list(entry)
    while stack:
        for nxt in succs[stack.pop()]:
            if nxt not in reached:
                reached.add(nxt)
                stack.append(nxt)
    missing = [node for node in ids if node not in reached]
    if missing:
        raise UnreachableNodeError(missing, entry)
