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
_MIN_FRAME = 1 << 20
_MAX_FRAME = (1 << 31) - 1  # the wire's length prefix is a signed 32-bit int


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
        max_frame_bytes: Longest message (one frame on the wire) a peer that knows the password
            may send; a longer one closes its connection before it is read. A write whose command
            would not fit (with room for the framing) fails with `ClusterError` naming this setting.
            At least 1 MiB (pysyncobj's own messages are up to 64 KiB plus one log entry), below
            2 GiB; default 16 MiB. Give every node the same value.
        max_pending_connections: How many incoming connections may be open before they prove they
            know the password (pysyncobj's signed key exchange); one more closes the oldest.
            Default 32.
        handshake_timeout: Seconds an incoming connection has to prove it knows the password before
            it is closed (a real peer needs one round trip). Default 2.

    Before a connection is authenticated its frames may be at most 4 KiB: a stranger cannot make
    a node buffer more than that per connection, nor hold more than `max_pending_connections` of
    them for more than `handshake_timeout`. Change these with `msgspec.structs.replace`.

    Example:
        >>> config = ClusterConfig.join("b", "127.0.0.1:7101", "/tmp/b", seed="127.0.0.1:7100", password="pw")
        >>> config.seeds, config.voters
        (('127.0.0.1:7100',), ())
        >>> "password='***'" in repr(config)  # the password stays out of reprs and logs
        True
        >>> import msgspec
        >>> msgspec.structs.replace(config, max_frame_bytes=64 << 20).max_frame_bytes
        67108864
        >>> msgspec.structs.replace(config, max_frame_bytes=1000)
        Traceback (most recent call last):
        ...
        mocra_cluster._errors.ClusterConfigError: max_frame_bytes: expected 1 MiB to 2 GiB, got 1000
    """

    node_id: str
    addr: str
    data_dir: str
    password: str
    voters: tuple[str, ...] = ()
    seeds: tuple[str, ...] = ()
    tuning: RaftTuning = RaftTuning()
    max_frame_bytes: int = 16 << 20
    max_pending_connections: int = 32
    handshake_timeout: float = 2.0

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
        self._check_limits()

    def _check_limits(self) -> None:
        if not _MIN_FRAME <= self.max_frame_bytes <= _MAX_FRAME:
            raise ClusterConfigError(
                "max_frame_bytes", f"expected 1 MiB to 2 GiB, got {self.max_frame_bytes!r}"
            )
        if self.max_pending_connections < 1:
            raise ClusterConfigError(
                "max_pending_connections", f"expected at least 1, got {self.max_pending_connections!r}"
            )
        if not self.handshake_timeout > 0:
            raise ClusterConfigError(
                "handshake_timeout", f"expected a positive number of seconds, got {self.handshake_timeout!r}"
            )

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
        names members to join through. `MOCRA_CLUSTER_MAX_FRAME_BYTES`,
        `MOCRA_CLUSTER_MAX_PENDING_CONNECTIONS` and `MOCRA_CLUSTER_HANDSHAKE_TIMEOUT` (optional) set
        the limits on what peers may send.

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
            config = cls.bootstrap(node_id, addr, data_dir, password=password, peers=seeds, tuning=tuning)
        else:
            config = cls.join(node_id, addr, data_dir, seed=seeds, password=password, tuning=tuning)
        return _with_limits_from_env(config, env)


_LIMITS_FROM_ENV = {
    "MOCRA_CLUSTER_MAX_FRAME_BYTES": ("max_frame_bytes", int),
    "MOCRA_CLUSTER_MAX_PENDING_CONNECTIONS": ("max_pending_connections", int),
    "MOCRA_CLUSTER_HANDSHAKE_TIMEOUT": ("handshake_timeout", float),
}


def _with_limits_from_env(config: ClusterConfig, env: Mapping[str, str]) -> ClusterConfig:
    """`config` with the peer limits that `MOCRA_CLUSTER_*` variables set; an error names the variable.

    Example:
        >>> config = ClusterConfig.bootstrap("a", "127.0.0.1:7100", "/tmp/a", password="pw")
        >>> _with_limits_from_env(config, {"MOCRA_CLUSTER_HANDSHAKE_TIMEOUT": "5"}).handshake_timeout
        5.0
        >>> for key, bad in [("MAX_FRAME_BYTES", "1kB"), ("MAX_PENDING_CONNECTIONS", "0")]:
        ...     try:
        ...         _with_limits_from_env(config, {f"MOCRA_CLUSTER_{key}": bad})
        ...     except ClusterConfigError as exc:
        ...         print(exc)
        MOCRA_CLUSTER_MAX_FRAME_BYTES: expected an integer, got '1kB'
        MOCRA_CLUSTER_MAX_PENDING_CONNECTIONS: expected at least 1, got 0
    """
    for key, (field, kind) in _LIMITS_FROM_ENV.items():
        raw = env.get(key, "").strip()
        if not raw:
            continue
        try:
            value = kind(raw)
        except ValueError:
            raise ClusterConfigError(
                key, f"expected {'an integer' if kind is int else 'a number'}, got {raw!r}"
            ) from None
        try:
            config = msgspec.structs.replace(config, **{field: value})
        except ClusterConfigError as exc:
            raise ClusterConfigError(key, exc.problem) from None
    return config
