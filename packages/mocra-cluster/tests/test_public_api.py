"""The public surface is curated and documented, and mocra_cluster imports no other mocra package."""

from __future__ import annotations

import ast
import inspect
import pathlib

import mocra_cluster

SRC = pathlib.Path(mocra_cluster.__file__).parent

STATE_MACHINE_AND_LOCAL_PLANE = {
    "AcquireLock",
    "AcquirePartition",
    "ClusterClosed",
    "ClusterConfigError",
    "ClusterError",
    "ClusterStatus",
    "ClusterUnavailable",
    "Command",
    "CompareAndSet",
    "ControlPlane",
    "Delete",
    "FencedResource",
    "Heartbeat",
    "Join",
    "Liveness",
    "LmdbStateStore",
    "LocalControlPlane",
    "LockInfo",
    "Member",
    "MemoryStateStore",
    "Message",
    "NoQuorum",
    "NotLeader",
    "PARTITIONS",
    "Publish",
    "Purge",
    "ReleaseLock",
    "ReleasePartition",
    "Remove",
    "RenewLock",
    "RenewPartition",
    "Result",
    "Set",
    "StaleToken",
    "StateMachine",
    "StateStore",
    "assignment",
    "decode_command",
    "encode_command",
    "owned_partitions",
    "owner",
    "partition_of",
}


def test_all_is_a_sorted_tuple_of_existing_names() -> None:
    assert isinstance(mocra_cluster.__all__, tuple)
    assert list(mocra_cluster.__all__) == sorted(mocra_cluster.__all__)
    assert len(set(mocra_cluster.__all__)) == len(mocra_cluster.__all__)
    for name in mocra_cluster.__all__:
        assert hasattr(mocra_cluster, name), name


def test_the_state_machine_and_local_plane_are_exported() -> None:
    assert STATE_MACHINE_AND_LOCAL_PLANE <= set(mocra_cluster.__all__)


def test_every_error_derives_from_cluster_error() -> None:
    for name in mocra_cluster.__all__:
        obj = getattr(mocra_cluster, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert issubclass(obj, mocra_cluster.ClusterError), name


def test_public_classes_and_methods_are_documented() -> None:
    for name in sorted(STATE_MACHINE_AND_LOCAL_PLANE):
        obj = getattr(mocra_cluster, name)
        if not isinstance(obj, type):
            continue
        assert inspect.getdoc(obj), name
        for attr, member in vars(obj).items():
            if attr.startswith("_") or not callable(member):
                continue
            assert inspect.getdoc(member), f"{name}.{attr}"


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
                assert not module.startswith("mocra") or module.startswith("mocra_cluster"), (
                    path.name,
                    module,
                )
