"""Graph building, validation errors that name the offending nodes, and topological order."""

from __future__ import annotations

import pytest

from mocra_dag import (
    CycleError,
    DagError,
    DuplicateNodeError,
    EmptyGraphError,
    Graph,
    GraphBuilder,
    GraphError,
    InvalidNodeIdError,
    ReservedNodeIdError,
    UnknownNodeError,
    UnreachableNodeError,
)


def test_builder_fan_out_and_fan_in() -> None:
    graph = (
        Graph.builder()
        .node("extract", "E")
        .node("clean", "C", after="extract")
        .node("enrich", "N", after=["extract"])
        .node("join", "J", after=["clean", "enrich"])
        .build()
    )
    assert graph.nodes == {"extract": "E", "clean": "C", "enrich": "N", "join": "J"}
    assert graph.roots == ("extract",)
    assert graph.successors("extract") == ("clean", "enrich")
    assert graph.predecessors("join") == ("clean", "enrich")
    assert graph.predecessors("extract") == ()
    assert graph.edges == (("extract", "clean"), ("extract", "enrich"), ("clean", "join"), ("enrich", "join"))
    assert graph.descendants("clean") == ("join",)
    assert len(graph) == 4 and "join" in graph and "nope" not in graph


def test_graph_is_frozen() -> None:
    graph = Graph.chain(("a", 1), ("b", 2))
    with pytest.raises(TypeError):
        graph.nodes["a"] = 3  # type: ignore[index]
    with pytest.raises(AttributeError):
        graph.x = 1  # type: ignore[attr-defined]


def test_chain_links_nodes_in_order() -> None:
    graph = Graph.chain(("a", 1), ("b", 2), ("c", 3))
    assert graph.edges == (("a", "b"), ("b", "c"))
    assert graph.topological_order() == ("a", "b", "c")
    assert Graph.chain(("only", 0)).roots == ("only",)


def test_topological_order_respects_edges_and_is_stable() -> None:
    # Declared out of order; among ready nodes the earlier declared comes first.
    graph = Graph(
        [("load", 0), ("b", 0), ("a", 0), ("join", 0), ("c", 0)],
        [("a", "join"), ("b", "join"), ("join", "load"), ("c", "load")],
    )
    order = graph.topological_order()
    assert order == ("b", "a", "join", "c", "load")
    position = {node: i for i, node in enumerate(order)}
    for source, target in graph.edges:
        assert position[source] < position[target]
    assert list(graph) == list(order)


def test_payloads_can_be_any_object() -> None:
    class Custom:
        pass

    thing = Custom()
    graph = GraphBuilder[Custom]().node("x", thing).build()
    assert graph.nodes["x"] is thing


def test_repeated_edges_count_once() -> None:
    graph = Graph.builder().node("a", 1).node("b", 2, after=["a", "a"]).edge("a", "b").build()
    assert graph.predecessors("b") == ("a",)


def test_empty_graph() -> None:
    with pytest.raises(EmptyGraphError):
        Graph.builder().build()


def test_duplicate_ids_are_named() -> None:
    with pytest.raises(DuplicateNodeError) as caught:
        Graph.builder().node("a", 1).node("b", 2).node("a", 3).node("b", 4).build()
    assert caught.value.nodes == ("a", "b")
    assert "'a'" in str(caught.value) and "'b'" in str(caught.value)


@pytest.mark.parametrize("bad", ["", "  ", "a\x00b", 7])
def test_invalid_ids_are_named(bad: object) -> None:
    with pytest.raises(InvalidNodeIdError) as caught:
        Graph([(bad, 1)])  # type: ignore[list-item]
    assert caught.value.node == bad
    assert repr(bad) in str(caught.value)


def test_reserved_ids_are_named() -> None:
    with pytest.raises(ReservedNodeIdError) as caught:
        Graph.builder().node("ok", 1).node("__run__", 2).build()
    assert caught.value.nodes == ("__run__",)
    assert "'__run__'" in str(caught.value)


def test_unknown_upstream_is_named_with_its_referrer() -> None:
    with pytest.raises(UnknownNodeError) as caught:
        Graph.builder().node("load", 1, after=["transfrom"]).node("transform", 2).build()
    assert caught.value.node == "transfrom"
    assert caught.value.referenced_by == "load"
    assert "'transfrom'" in str(caught.value) and "'load'" in str(caught.value)


def test_unknown_edge_target_and_lookups() -> None:
    with pytest.raises(UnknownNodeError) as caught:
        Graph.builder().node("a", 1).edge("a", "ghost").build()
    assert caught.value.nodes == ("ghost",)
    graph = Graph.chain(("a", 1))
    for lookup in (graph.successors, graph.predecessors, graph.descendants):
        with pytest.raises(UnknownNodeError, match="'ghost'"):
            lookup("ghost")


def test_cycle_is_named_in_edge_order() -> None:
    with pytest.raises(CycleError) as caught:
        (
            Graph.builder()
            .node("start", 1)
            .node("a", 1, after=["start", "c"])
            .node("b", 1, after="a")
            .node("c", 1, after="b")
            .node("end", 1, after="c")
            .build()
        )
    assert caught.value.cycle == ("a", "b", "c", "a")
    assert set(caught.value.nodes) == {"a", "b", "c"}
    assert "a -> b -> c -> a" in str(caught.value)


def test_self_loop_is_a_cycle() -> None:
    with pytest.raises(CycleError, match="loop -> loop"):
        Graph.builder().node("loop", 1, after="loop").build()


def test_unreachable_nodes_from_entry_are_named() -> None:
    builder = (
        Graph.builder().node("a", 1).node("b", 1, after="a").node("orphan", 1).node("o2", 1, after="orphan")
    )
    assert builder.build().roots == ("a", "orphan")  # without an entry, two roots are fine
    with pytest.raises(UnreachableNodeError) as caught:
        builder.build(entry="a")
    assert caught.value.nodes == ("orphan", "o2")
    assert caught.value.entry == ("a",)
    assert builder.build(entry=["a", "orphan"]).roots == ("a", "orphan")
    with pytest.raises(UnknownNodeError) as unknown:
        builder.build(entry="nope")
    assert unknown.value.referenced_by == "entry"


def test_every_graph_error_is_a_dag_error() -> None:
    for error in (EmptyGraphError, DuplicateNodeError, UnknownNodeError, CycleError, UnreachableNodeError):
        assert issubclass(error, GraphError)
        assert issubclass(error, DagError)
