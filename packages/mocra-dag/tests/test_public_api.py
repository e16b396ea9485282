"""The public surface is curated, documented, free of crawler vocabulary and of other mocra packages."""

from __future__ import annotations

import ast
import inspect
import pathlib
import re

import mocra_dag

SRC = pathlib.Path(mocra_dag.__file__).parent
CRAWLER_WORDS = re.compile(r"request|response|crawl|spider|url", re.IGNORECASE)


def public_names() -> list[str]:
    return [name for name in mocra_dag.__all__ if name != "__version__"]


def test_all_is_a_sorted_tuple_of_existing_names() -> None:
    assert isinstance(mocra_dag.__all__, tuple)
    assert list(mocra_dag.__all__) == sorted(mocra_dag.__all__)
    assert len(set(mocra_dag.__all__)) == len(mocra_dag.__all__)
    for name in mocra_dag.__all__:
        assert hasattr(mocra_dag, name), name
    assert mocra_dag.__version__ == "0.1.0"


def test_all_is_pinned() -> None:
    assert mocra_dag.__all__ == (
        "CircuitOpen",
        "Clock",
        "CycleError",
        "DagError",
        "DuplicateNodeError",
        "EmptyGraphError",
        "EventLog",
        "EventLogger",
        "EventSink",
        "Graph",
        "GraphBuilder",
        "GraphError",
        "Inputs",
        "InvalidNodeIdError",
        "Lease",
        "LeaseStore",
        "LmdbLeaseStore",
        "LmdbRunStateStore",
        "ManualClock",
        "MemoryLeaseStore",
        "MemoryRunStateStore",
        "MissingExtra",
        "NodeEvent",
        "NodeFn",
        "NodePolicy",
        "NodeRecord",
        "NodeStatus",
        "NodeTimeout",
        "OutputNotSerialisable",
        "ReservedNodeIdError",
        "RunAlreadyActive",
        "RunFailed",
        "RunGuard",
        "RunResult",
        "RunStateStore",
        "RunTimeout",
        "Scheduler",
        "SchedulerSettings",
        "StaleToken",
        "Step",
        "SystemClock",
        "UnknownNodeError",
        "UnreachableNodeError",
        "__version__",
    )


def test_every_error_derives_from_dag_error() -> None:
    for name in public_names():
        obj = getattr(mocra_dag, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert issubclass(obj, mocra_dag.DagError), name


def test_public_names_are_documented() -> None:
    for name in public_names():
        obj = getattr(mocra_dag, name)
        if not isinstance(obj, type):
            continue
        assert inspect.getdoc(obj), name
        for attr, member in vars(obj).items():
            if attr.startswith("_") or not callable(member):
                continue
            assert inspect.getdoc(member), f"{name}.{attr}"


def test_no_crawler_vocabulary_in_the_api() -> None:
    words: list[str] = []
    for name in public_names():
        words.append(name)
        obj = getattr(mocra_dag, name)
        members = vars(obj).items() if isinstance(obj, type) else []
        for attr, member in members:
            if attr.startswith("_") and attr != "__init__":
                continue
            words.append(attr)
            target = member.fget if isinstance(member, property) else member
            target = getattr(target, "__func__", target)
            if callable(target):
                try:
                    words.extend(inspect.signature(target).parameters)
                except (TypeError, ValueError):
                    pass
        words.extend(getattr(obj, "__struct_fields__", ()))
    offending = [word for word in words if CRAWLER_WORDS.search(word)]
    assert offending == []
    for path in SRC.glob("*.py"):
        assert not CRAWLER_WORDS.search(path.read_text()), path.name


def test_no_other_mocra_package_is_imported() -> None:
    for path in SRC.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = [node.module or ""]
            else:
                continue
            for module in modules:
                assert not (module.startswith("mocra") and not module.startswith("mocra_dag")), (
                    path.name,
                    module,
                )


def test_modules_stay_small() -> None:
    for path in SRC.glob("*.py"):
        assert len(path.read_text().splitlines()) <= 400, path.name
