"""Every error mocra_dag raises on purpose, rooted at `DagError`.

mocra_dag cannot import mocra_core, so it has its own root; mocra_core maps it into `MocraError` at the seam.

```text
DagError
    GraphError .nodes                      (a graph that cannot be built)
        EmptyGraphError
        InvalidNodeIdError .node → ReservedNodeIdError
        DuplicateNodeError
        UnknownNodeError .node .referenced_by
        CycleError .cycle
        UnreachableNodeError .entry
    NodeTimeout .node .timeout .attempt    (also a TimeoutError: retryable by default)
    CircuitOpen .node .retry_at
    OutputNotSerialisable .subject
    RunAlreadyActive .run_id .holder
    StaleToken .name .token .current
    RunFailed .run_id .errors .result
        RunTimeout .timeout                (also a TimeoutError)
    MissingExtra .extra
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ._run import RunResult

__all__ = (
    "CircuitOpen",
    "CycleError",
    "DagError",
    "DuplicateNodeError",
    "EmptyGraphError",
    "GraphError",
    "InvalidNodeIdError",
    "MissingExtra",
    "NodeTimeout",
    "OutputNotSerialisable",
    "ReservedNodeIdError",
    "RunAlreadyActive",
    "RunFailed",
    "RunTimeout",
    "StaleToken",
    "UnknownNodeError",
    "UnreachableNodeError",
)


class DagError(Exception):
    """Root of every error the DAG engine raises on purpose."""


class GraphError(DagError):
    """A graph is not a valid DAG; `nodes` names the offending node ids."""

    def __init__(self, message: str, nodes: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.nodes: tuple[str, ...] = tuple(nodes)


class EmptyGraphError(GraphError):
    """A graph has no nodes."""

    def __init__(self) -> None:
        super().__init__("a graph needs at least one node")


class InvalidNodeIdError(GraphError):
    """A node id is not a non-empty string without NUL characters."""

    def __init__(self, node: object, problem: str) -> None:
        super().__init__(f"invalid node id {node!r}: {problem}", [str(node)])
        self.node = node


class ReservedNodeIdError(InvalidNodeIdError):
    """A node id starts with `__`, which the engine reserves for itself."""

    def __init__(self, node: str) -> None:
        super().__init__(node, "ids starting with '__' are reserved for the engine")


class DuplicateNodeError(GraphError):
    """Two nodes share an id."""

    def __init__(self, nodes: Iterable[str]) -> None:
        names = sorted(set(nodes))
        super().__init__(f"duplicate node id(s): {', '.join(map(repr, names))}", names)


class UnknownNodeError(GraphError):
    """An edge, an entry or a lookup names a node the graph does not have."""

    def __init__(self, node: str, *, referenced_by: str | None = None) -> None:
        where = f" (referenced by {referenced_by!r})" if referenced_by is not None else ""
        super().__init__(f"unknown node {node!r}{where}", [node])
        self.node = node
        self.referenced_by = referenced_by


class CycleError(GraphError):
    """The edges form a cycle; `cycle` lists it in edge order, first node repeated at the end."""

    def __init__(self, cycle: Iterable[str]) -> None:
        self.cycle = tuple(cycle)
        super().__init__(f"cycle: {' -> '.join(self.cycle)}", dict.fromkeys(self.cycle))


class UnreachableNodeError(GraphError):
    """Some nodes cannot be reached from the declared entry node(s)."""

    def __init__(self, nodes: Iterable[str], entry: Iterable[str]) -> None:
        names = tuple(nodes)
        self.entry = tuple(entry)
        super().__init__(
            f"node(s) {', '.join(map(repr, names))} cannot be reached from entry {list(self.entry)!r}", names
        )


class NodeTimeout(DagError, TimeoutError):
    """One attempt of a node ran longer than its policy's `timeout` seconds."""

    def __init__(self, node: str, timeout: float, attempt: int) -> None:
        super().__init__(f"node {node!r} attempt {attempt} timed out after {timeout:g} s")
        self.node, self.timeout, self.attempt = node, timeout, attempt


class CircuitOpen(DagError):
    """A node's circuit breaker is open: the call failed fast, without running the node."""

    def __init__(self, node: str, retry_at: float) -> None:
        super().__init__(f"circuit of node {node!r} is open until {retry_at:.3f}")
        self.node, self.retry_at = node, retry_at


class OutputNotSerialisable(DagError):
    """A store could not encode an output as msgpack; `subject` says whose (node or cache key)."""

    def __init__(self, subject: str, problem: str) -> None:
        super().__init__(f"{subject}: output cannot be stored as msgpack: {problem}")
        self.subject = subject


class RunAlreadyActive(DagError):
    """Another holder owns the lease of this run id: the same run cannot execute twice at once."""

    def __init__(self, run_id: str, holder: object = None) -> None:
        super().__init__(f"run {run_id!r} is already active (held by {holder!r})")
        self.run_id, self.holder = run_id, holder


class StaleToken(DagError):
    """A write or renewal carried a fencing token older than the newest one seen for `name`."""

    def __init__(self, name: str, token: int, current: int) -> None:
        super().__init__(f"{name!r}: fencing token {token} is stale (current is {current})")
        self.name, self.token, self.current = name, token, current


class RunFailed(DagError):
    """A run finished with failed nodes; `errors` maps node id → error, `result` holds the rest."""

    def __init__(
        self, run_id: str, errors: Mapping[str, BaseException], result: RunResult | None = None
    ) -> None:
        listed = ", ".join(f"{node!r}: {type(exc).__name__}: {exc}" for node, exc in errors.items())
        super().__init__(f"run {run_id!r} failed: {listed or 'no node failed'}")
        self.run_id, self.errors, self.result = run_id, dict(errors), result
        if self.errors:
            self.__cause__ = next(iter(self.errors.values()))


class RunTimeout(RunFailed, TimeoutError):
    """A run did not finish within its `run_timeout` seconds; running nodes were cancelled.

    `errors` holds the nodes that had failed before the timeout, if any.
    """

    def __init__(
        self,
        run_id: str,
        timeout: float,
        result: RunResult | None = None,
        errors: Mapping[str, BaseException] | None = None,
    ) -> None:
        super().__init__(run_id, errors or {}, result)
        self.args = (f"run {run_id!r} timed out after {timeout:g} s",)
        self.timeout = timeout


class MissingExtra(DagError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, extra: str, needed_by: str) -> None:
        super().__init__(f"{needed_by} needs the {extra!r} extra: pip install 'mocra-dag[{extra}]'")
        self.extra = extra
