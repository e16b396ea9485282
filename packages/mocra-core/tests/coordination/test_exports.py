"""The public surface of `mocra_core.coordination` is a decision: changing it must change this test."""

from __future__ import annotations

import mocra_core.coordination
from mocra_core.coordination import (
    ClusterCoordination,
    Coordination,
    LmdbCoordination,
    LocalCoordination,
    RedisCoordination,
)


def test_coordination_exports() -> None:
    assert mocra_core.coordination.__all__ == (
        "MAX_KEY_BYTES",
        "ClusterCoordination",
        "ControlPlaneOwnership",
        "Coordination",
        "CoordinationError",
        "CoordinationLeaseStore",
        "CoordinationRunStateStore",
        "LmdbCoordination",
        "LocalCoordination",
        "LockInfo",
        "Ownership",
        "RedisCoordination",
        "SingleNodeOwnership",
    )
    for name in mocra_core.coordination.__all__:
        value = getattr(mocra_core.coordination, name)
        if isinstance(value, type):
            assert value.__module__ == "mocra_core.coordination"


def test_the_backends_fit_the_protocol() -> None:
    """mypy checks it statically (see the package `__init__`); here: every protocol method exists."""
    backends: list[type[Coordination]] = [
        LocalCoordination,
        LmdbCoordination,
        RedisCoordination,
        ClusterCoordination,
    ]
    methods = [name for name in vars(Coordination) if not name.startswith("_") or name in ("__aenter__",)]
    for backend in backends:
        for name in methods:
            assert callable(getattr(backend, name)), (backend, name)
