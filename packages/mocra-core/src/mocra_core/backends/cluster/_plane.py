"""A run's `mocra_cluster` Raft control plane, and the CLI's helpers for cluster nodes.

The engine starts the plane inside its run and closes it when the run ends; the CLI configures a node
from the environment (`mocra run --cluster`) and asks a node for its status (`mocra cluster status`).
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from ..._errors import BackendUnavailable, ConfigError, MissingExtra

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from mocra_cluster import ClusterConfig, NodeStatus, RaftControlPlane

__all__ = ("READY_TIMEOUT", "cluster_from_env", "cluster_status", "open_cluster")

logger = logging.getLogger(__name__)

READY_TIMEOUT = 60.0
"""Seconds a node waits for a leader (a majority of the voters up) before the run fails."""


def _missing(exc: ModuleNotFoundError, what: str) -> MissingExtra:
    if exc.name is None or exc.name.partition(".")[0] != "mocra_cluster":
        raise exc
    return MissingExtra("cluster", what)


def cluster_from_env(environ: Mapping[str, str] | None = None) -> ClusterConfig:
    """Return this node's `ClusterConfig`, read from `MOCRA_*` variables (`os.environ` by default).

    `MOCRA_NODE_ID`, `MOCRA_CLUSTER_ADDR`, `MOCRA_DATA_DIR`, `MOCRA_CLUSTER_PASSWORD` and optionally
    `MOCRA_SEEDS`, as `mocra_cluster.ClusterConfig.from_env` reads them.

    Raises:
        ConfigError: a variable is missing or malformed; `key` names it.
        MissingExtra: `mocra_cluster` is not installed.

    Example:
        >>> cluster_from_env({"MOCRA_NODE_ID": "a"})
        Traceback (most recent call last):
        ...
        mocra_core._errors.ConfigError: environment: MOCRA_CLUSTER_ADDR: is not set
    """
    try:
        from mocra_cluster import ClusterConfig, ClusterConfigError
    except ModuleNotFoundError as exc:
        raise _missing(exc, "mocra run --cluster") from exc
    try:
        return ClusterConfig.from_env(environ)
    except ClusterConfigError as exc:
        problem = str(exc).removeprefix(f"{exc.key}: ")
        raise ConfigError(exc.key, problem, source="environment") from exc


def cluster_status(addr: str, *, password: str, timeout: float = 3.0) -> NodeStatus:
    """Ask the Raft node at `addr` how it sees the cluster (blocks up to `timeout` seconds).

    Raises:
        ConfigError: `addr` is not `host:port`.
        BackendUnavailable: the node does not answer (down, or another password).
    """
    try:
        from mocra_cluster import ClusterConfigError, ClusterError, node_status
    except ModuleNotFoundError as exc:
        raise _missing(exc, "mocra cluster status") from exc
    try:
        return node_status(addr, password=password, timeout=timeout)
    except ClusterConfigError as exc:
        raise ConfigError("--addr", f"expected host:port, got {addr!r}") from exc
    except ClusterError as exc:
        raise BackendUnavailable("cluster", addr, str(exc)) from exc


@asynccontextmanager
async def open_cluster(
    config: ClusterConfig, *, ready_timeout: float = READY_TIMEOUT
) -> AsyncIterator[RaftControlPlane]:
    """Start this node's Raft plane, wait until it has a leader and is a member, close it on exit.

    Raises:
        MissingExtra: `mocra_cluster` is not installed.
        BackendUnavailable: the node could not start (address taken, bad data dir) or found no
            leader within `ready_timeout` seconds.
    """
    try:
        from mocra_cluster import ClusterError, RaftControlPlane
    except ModuleNotFoundError as exc:
        raise _missing(exc, "a cluster (Mocra.builder().cluster(…), mocra run --cluster)") from exc
    plane = RaftControlPlane(config)
    try:
        await plane.__aenter__()
    except (ClusterError, OSError) as exc:
        raise BackendUnavailable(
            "cluster", config.addr, f"node {config.node_id!r} did not start: {exc}"
        ) from exc
    try:
        with anyio.move_on_after(ready_timeout) as waiting:
            await plane.wait_ready()
        if waiting.cancelled_caught:
            joining = f" (joining through {', '.join(config.seeds)})" if config.seeds else ""
            raise BackendUnavailable(
                "cluster",
                config.addr,
                f"node {config.node_id!r} found no leader within {ready_timeout:g} s{joining}: "
                "is a majority of the voters up?",
            )
        status = await plane.status()
        logger.info(
            "cluster node %s ready: leader %s, term %d, %d members",
            config.node_id,
            status.leader,
            status.term,
            status.members,
        )
        yield plane
    finally:
        await plane.aclose()  # exits the plane's task group: no cancel scope of ours may be open here
