"""`Graph`: a frozen, validated DAG whose nodes carry any payload; `GraphBuilder` builds one fluently."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ._errors import UnknownNodeError
from ._validate import validate

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Self

__all__ = ("Graph", "GraphBuilder")

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
U = TypeVar("U")


def _ids(value: str | Iterable[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


class Graph(Generic[T_co]):
    """A validated, immutable directed acyclic graph of nodes with stable string ids.

    Each node carries a payload of any type: the `Scheduler` runs graphs whose payloads are async
    callables or `Step`s, and other code may use the graph types with its own node objects. Building a
    graph validates it (see `GraphError` and its subclasses), so every `Graph` is a DAG.

    Args:
        nodes: Node id → payload, as a mapping or as `(id, payload)` pairs (pairs can report duplicates).
        edges: `(source, target)` pairs: `target` runs after `source` and receives its output.
        entry: If given, every node must be reachable from these node id(s).

    Raises:
        GraphError: The nodes and edges are not a valid DAG; the error names the node(s).

    Example:
        >>> g = Graph({"a": 1, "b": 2, "c": 3}, [("a", "c"), ("b", "c")])
        >>> g.roots, g.predecessors("c"), g.topological_order()
        (('a', 'b'), ('a', 'b'), ('a', 'b', 'c'))
        >>> g.nodes["c"]
        3
    """

    __slots__ = ("_nodes", "_roots", "_shape")

    def __init__(
        self,
        nodes: Mapping[str, T_co] | Iterable[tuple[str, T_co]],
        edges: Iterable[tuple[str, str]] = (),
        *,
        entry: str | Iterable[str] | None = None,
    ) -> None:
        pairs = list(nodes.items()) if isinstance(nodes, Mapping) else list(nodes)
        ids = [node for node, _ in pairs]
        self._shape = validate(ids, list(edges), None if entry is None else _ids(entry))
        self._nodes: Mapping[str, T_co] = MappingProxyType(dict(pairs))
        self._roots = tuple(node for node in ids if not self._shape.predecessors[node])

    @staticmethod
    def builder() -> GraphBuilder[Any]:
        """Start a fluent `GraphBuilder`.

        Example:
            >>> g = Graph.builder().node("extract", "E").node("load", "L", after="extract").build()
            >>> g.successors("extract")
            ('load',)
        """
        return GraphBuilder()

    @staticmethod
    def chain(*steps: tuple[str, U]) -> Graph[U]:
        """Build a linear graph: each `(id, payload)` runs after the one before it.

        Example:
            >>> Graph.chain(("a", 1), ("b", 2), ("c", 3)).edges
            (('a', 'b'), ('b', 'c'))
        """
        return Graph(steps, [(a[0], b[0]) for a, b in zip(steps, steps[1:], strict=False)])

    @property
    def nodes(self) -> Mapping[str, T_co]:
        """Node id → payload, read-only, in declaration order."""
        return self._nodes

    @property
    def roots(self) -> tuple[str, ...]:
        """Nodes without predecessors, in declaration order."""
        return self._roots

    @property
    def edges(self) -> tuple[tuple[str, str], ...]:
        """Every `(source, target)` edge, by source in declaration order."""
        return tuple((node, nxt) for node in self._nodes for nxt in self._shape.successors[node])

    def successors(self, node: str) -> tuple[str, ...]:
        """Nodes that run after `node` and receive its output.

        Raises:
            UnknownNodeError: The graph has no node `node`.
        """
        try:
            return self._shape.successors[node]
        except KeyError:
            raise UnknownNodeError(node) from None

    def predecessors(self, node: str) -> tuple[str, ...]:
        """Nodes whose outputs `node` receives, in edge declaration order.

        Raises:
            UnknownNodeError: The graph has no node `node`.
        """
        try:
            return self._shape.predecessors[node]
        except KeyError:
            raise UnknownNodeError(node) from None

    def descendants(self, node: str) -> tuple[str, ...]:
        """Every node reachable from `node` (excluding it), in topological order.

        Raises:
            UnknownNodeError: The graph has no node `node`.

        Example:
            >>> Graph.chain(("a", 1), ("b", 2), ("c", 3)).descendants("a")
            ('b', 'c')
        """
        found: set[str] = set()
        stack = list(self.successors(node))
        while stack:
            nxt = stack.pop()
            if nxt not in found:
                found.add(nxt)
                stack.extend(self._shape.successors[nxt])
        return tuple(n for n in self._shape.order if n in found)

    def topological_order(self) -> tuple[str, ...]:
        """Node ids so that every node comes after its predecessors.

        The order is stable: among nodes ready at the same time, the one declared first comes first.
        """
        return self._shape.order

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node: object) -> bool:
        return node in self._nodes

    def __iter__(self) -> Iterator[str]:
        return iter(self._shape.order)

    def __repr__(self) -> str:
        return f"<Graph {len(self._nodes)} nodes, {len(self.edges)} edges: {', '.join(self._shape.order)}>"


class GraphBuilder(Generic[T]):
    """Collects nodes and edges, then validates them once in `build`.

    Mistakes (duplicate or unknown ids, cycles) are reported by `build`, naming the nodes, so the
    builder calls can come in any order.

    Example:
        >>> g = (
        ...     GraphBuilder[str]()
        ...     .node("orders", "read orders")
        ...     .node("users", "read users")
        ...     .node("join", "join them", after=["orders", "users"])
        ...     .build()
        ... )
        >>> g.predecessors("join")
        ('orders', 'users')
    """

    __slots__ = ("_edges", "_nodes")

    def __init__(self) -> None:
        self._nodes: list[tuple[str, T]] = []
        self._edges: list[tuple[str, str]] = []

    def node(self, node_id: str, payload: T, *, after: str | Iterable[str] = ()) -> Self:
        """Add node `node_id` carrying `payload`, to run after every node named in `after`."""
        self._nodes.append((node_id, payload))
        self._edges.extend((source, node_id) for source in _ids(after))
        return self

    def edge(self, source: str, target: str) -> Self:
        """Add an edge: `target` runs after `source`."""
        self._edges.append((source, target))
        return self

    def build(self, *, entry: str | Iterable[str] | None = None) -> Graph[T]:
        """Validate and return the frozen graph.

        Args:
            entry: If given, every node must be reachable from these node id(s).

        Raises:
            GraphError: A subclass naming the offending node(s).
        """
        return Graph(self._nodes, self._edges, entry=entry)
