"""`ClusterConfig`: who a Raft node is, where it listens and stores, and how it finds its cluster."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import msgspec

from ._errors import ClusterConfigError
from ._raft_tuning import RaftTuning

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ("ClusterConfig", "check_address")

_NODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_address(value: str, key: str) -> str:
    """Return `value` if it is a `host:port` address, else raise `ClusterConfigError` naming `key`.

    Example:
        >>> check_address("10.0.0.5:7100", "addr")
        '10.0.0.5:7100'
        >>> check_address("10.0.0.5", "MOCRA_CLUSTER_ADDR")
        Traceback (most recent call last):
        ...
        mocra_cluster._errors.ClusterConfigError: MOCRA_CLUSTER_ADDR: expected host:port, got '10.0.0.5'
    """
    host, sep, port = value.rpartition(":")
    if not sep or not host or any(c.isspace() for c in host) or not port.isdigit():
        raise ClusterConfigError(key, f"expected host:port, got {value!r}")
    if not 0 < int(port) < 65536:
        raise ClusterConfigError(key, f"port must be 1-65535, got {value!r}")
    return value


def _addresses(values: Iterable[str], key: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(check_address(value, key) for value in values))


class ClusterConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The settings of one Raft node; build it with `bootstrap`, `join` or `from_env`.

    Attributes:
        node_id: The member id of this node (its name in `members()`).
        addr: `host:port` the node binds to (that address only) and that peers dial.
        data_dir: Directory of the Raft journal and snapshot; it survives restarts.
        password: Shared secret every message between nodes is signed with; required, because
            pysyncobj unpickles what it receives (an open port would run a stranger's code).
        voters: Addresses of the initial voters (this node included) of a new cluster.
        seeds: Addresses of running members to join through (empty for a new cluster).
        tuning: Raft timings.

    Example:
        >>> config = ClusterConfig.join("b", "127.0.0.1:7101", "/tmp/b", seed="127.0.0.1:7100", password="pw")
        >>> config.seeds, config.voters
        (('127.0.0.1:7100',), ())
        >>> "password='***'" in repr(config)  # the password stays out of reprs and logs
        True
    """

    node_id: str
    addr: str
    data_dir: str
    password: str
    voters: tuple[str, ...] = ()
    seeds: tuple[str, ...] = ()
    tuning: RaftTuning = RaftTuning()

    def __post_init__(self) -> None:
        if not _NODE_ID.fullmatch(self.node_id):
            raise ClusterConfigError(
                "node_id", f"expected 1-128 letters, digits, '.', '_' or '-', got {self.node_id!r}"
            )
        check_address(self.addr, "addr")
        if not self.data_dir:
            raise ClusterConfigError("data_dir", "must not be empty")
        if not self.password:
            raise ClusterConfigError(
                "password", "a cluster password is required (pysyncobj unpickles what peers send)"
            )
        _addresses(self.voters, "voters")
        _addresses(self.seeds, "seeds")
        if self.voters and self.addr not in self.voters:
            raise ClusterConfigError("voters", f"must include this node's address {self.addr!r}")
        if self.voters and self.seeds:
            raise ClusterConfigError("seeds", "give voters (new cluster) or seeds (join), not both")

    def __repr__(self) -> str:
        return (
            f"ClusterConfig(node_id={self.node_id!r}, addr={self.addr!r}, data_dir={self.data_dir!r}, "
            f"password='***', voters={self.voters!r}, seeds={self.seeds!r})"
        )

    @property
    def peers(self) -> tuple[str, ...]:
        """The initial voters other than this node."""
        return tuple(voter for voter in self.voters if voter != self.addr)

    @classmethod
    def bootstrap(
        cls,
        node_id: str,
        addr: str,
        data_dir: str | os.PathLike[str],
        *,
        password: str,
        peers: Iterable[str] = (),
        tuning: RaftTuning | None = None,
    ) -> ClusterConfig:
        """Settings of a node of a new cluster whose initial voters are this node and `peers`.

        Every initial voter must be started with the same set of addresses. A single node
        (no `peers`) leads at once; more nodes join it later with `join`.

        Example:
            >>> ClusterConfig.bootstrap("a", "127.0.0.1:7100", "/tmp/a", password="pw").voters
            ('127.0.0.1:7100',)
        """
        voters = _addresses([addr, *peers], "peers")
        return cls(
            node_id=node_id,
            addr=addr,
            data_dir=os.fspath(data_dir),
            password=password,
            voters=voters,
            tuning=tuning or RaftTuning(),
        )

    @classmethod
    def join(
        cls,
        node_id: str,
        addr: str,
        data_dir: str | os.PathLike[str],
        *,
        seed: str | Iterable[str],
        password: str,
        tuning: RaftTuning | None = None,
    ) -> ClusterConfig:
        """Settings of a node that joins a running cluster through `seed` (one or more members)."""
        seeds = _addresses([seed] if isinstance(seed, str) else seed, "seed")
        if not seeds:
            raise ClusterConfigError("seed", "at least one seed address is required to join")
        return cls(
            node_id=node_id,
            addr=addr,
            data_dir=os.fspath(data_dir),
            password=password,
            seeds=seeds,
            tuning=tuning or RaftTuning(),
        )

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, tuning: RaftTuning | None = None
    ) -> ClusterConfig:
        """Read the settings from `MOCRA_*` variables (`os.environ` unless `environ` is given).

        `MOCRA_NODE_ID`, `MOCRA_CLUSTER_ADDR` (`host:port`), `MOCRA_DATA_DIR` and
        `MOCRA_CLUSTER_PASSWORD` are required. `MOCRA_SEEDS` is a comma-separated address list:
        unset or empty starts a new single-node cluster; a list that contains `MOCRA_CLUSTER_ADDR`
        names the initial voters of a new cluster (give every voter the same list); any other list
        names members to join through.

        Raises:
            ClusterConfigError: a variable is missing or malformed; `key` names it.

        Example:
            >>> env = {"MOCRA_NODE_ID": "a", "MOCRA_CLUSTER_ADDR": "10.0.0.1:7100", "MOCRA_DATA_DIR": "/d",
            ...        "MOCRA_CLUSTER_PASSWORD": "pw", "MOCRA_SEEDS": "10.0.0.1:7100,10.0.0.2:7100"}
            >>> ClusterConfig.from_env(env).voters
            ('10.0.0.1:7100', '10.0.0.2:7100')
            >>> ClusterConfig.from_env({**env, "MOCRA_CLUSTER_ADDR": "10.0.0.1"})
            Traceback (most recent call last):
            ...
            mocra_cluster._errors.ClusterConfigError: MOCRA_CLUSTER_ADDR: expected host:port, got '10.0.0.1'
        """
        env = os.environ if environ is None else environ

        def required(key: str) -> str:
            value = env.get(key, "").strip()
            if not value:
                raise ClusterConfigError(key, "is not set")
            return value

        node_id = required("MOCRA_NODE_ID")
        if not _NODE_ID.fullmatch(node_id):
            raise ClusterConfigError(
                "MOCRA_NODE_ID", f"expected 1-128 letters, digits, '.', '_' or '-', got {node_id!r}"
            )
        addr = check_address(required("MOCRA_CLUSTER_ADDR"), "MOCRA_CLUSTER_ADDR")
        data_dir = required("MOCRA_DATA_DIR")
        password = required("MOCRA_CLUSTER_PASSWORD")
        seeds = _addresses(
            [s.strip() for s in env.get("MOCRA_SEEDS", "").split(",") if s.strip()], "MOCRA_SEEDS"
        )
        if not seeds or addr in seeds:
            return cls.bootstrap(node_id, addr, data_dir, password=password, peers=seeds, tuning=tuning)
        return cls.join(node_id, addr, data_dir, seed=seeds, password=password, tuning=tuning)
