"""`RaftTuning`: the timings of the Raft plane, tuned for a fast failover on a LAN.

Failover time is roughly `election_timeout_max` (followers notice the silent leader) plus one
vote round trip plus one `heartbeat` (the new leader's first commit). The defaults aim at well under
2 s on a LAN; raise every timing together on a slow or lossy network.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._liveness import Liveness

__all__ = ("RaftTuning",)


class RaftTuning(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Timings (seconds) and log compaction thresholds of the Raft plane.

    Attributes:
        heartbeat: Period of the leader's append-entries (heartbeat) messages.
        election_timeout_min: A follower that hears no leader for a random time between
            `election_timeout_min` and `election_timeout_max` starts an election.
        election_timeout_max: Upper bound of that random time.
        connection_timeout: A peer connection silent this long is considered dead.
        reconnect_interval: Delay between connection attempts to an unreachable peer.
        leader_step_down: A leader that hears from no majority this long steps down, so an
            isolated leader stops accepting writes.
        tick: Longest wait of the Raft thread between two checks of its timers.
        commit_timeout: How long a write (or a linearizable read) waits for its commit before
            failing with `NoQuorum`.
        compaction_min_entries: The log is compacted into a snapshot once it holds more entries...
        compaction_min_time: ...or this long after the previous snapshot, whichever comes first.
        batch_appends: Send new entries with the next heartbeat (more writes per second, higher
            latency) instead of at once (lower latency).
        liveness: How often each node proposes its member `Heartbeat` (default every 1 s) and how
            long a silent member stays live (default 5 s): it then owns no partitions.
        join_timeout: How long a node joining through a seed keeps asking to be added (another
            membership change may be in progress) before it fails with `ClusterUnavailable`.
        quorum_grace: How long a write waits for this node to be connected to a majority of the
            voters before it fails with `NoQuorum` (after a leader dies, the survivors may need a
            reconnect and an election).

    Example:
        >>> tuning = RaftTuning()
        >>> tuning.election_timeout_max < 2.0
        True
        >>> RaftTuning(heartbeat=0.2, election_timeout_min=0.5)
        Traceback (most recent call last):
        ...
        ValueError: election_timeout_min (0.5) must exceed 3 heartbeats (0.6)
    """

    heartbeat: float = 0.05
    election_timeout_min: float = 0.3
    election_timeout_max: float = 0.6
    connection_timeout: float = 1.0
    reconnect_interval: float = 0.3
    leader_step_down: float = 1.0
    tick: float = 0.02
    commit_timeout: float = 5.0
    compaction_min_entries: int = 5000
    compaction_min_time: float = 300.0
    batch_appends: bool = False
    liveness: Liveness = Liveness()
    join_timeout: float = 30.0
    quorum_grace: float = 3.0

    def __post_init__(self) -> None:
        for name in (
            "heartbeat",
            "election_timeout_min",
            "connection_timeout",
            "leader_step_down",
            "tick",
            "commit_timeout",
            "compaction_min_time",
            "join_timeout",
            "quorum_grace",
        ):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"{name} must be positive, got {value!r}")
        if self.reconnect_interval < 0:
            raise ValueError(f"reconnect_interval must not be negative, got {self.reconnect_interval!r}")
        if self.election_timeout_min <= 3 * self.heartbeat:
            raise ValueError(
                f"election_timeout_min ({self.election_timeout_min}) must exceed 3 heartbeats "
                f"({3 * self.heartbeat:.3g})"
            )
        if self.election_timeout_max <= self.election_timeout_min:
            raise ValueError(
                f"election_timeout_max ({self.election_timeout_max}) must exceed "
                f"election_timeout_min ({self.election_timeout_min})"
            )
        if self.connection_timeout < self.election_timeout_max:
            raise ValueError(
                f"connection_timeout ({self.connection_timeout}) must be at least "
                f"election_timeout_max ({self.election_timeout_max})"
            )
        if self.leader_step_down <= self.heartbeat:
            raise ValueError(
                f"leader_step_down ({self.leader_step_down}) must exceed heartbeat ({self.heartbeat})"
            )
        if self.compaction_min_entries < 2:
            raise ValueError(
                f"compaction_min_entries must be at least 2, got {self.compaction_min_entries!r}"
            )

    def syncobj_options(self) -> dict[str, Any]:
        """Return these timings as `pysyncobj.SyncObjConf` keyword arguments.

        Example:
            >>> RaftTuning().syncobj_options()["raftMaxTimeout"]
            0.6
        """
        return {
            "appendEntriesPeriod": self.heartbeat,
            "raftMinTimeout": self.election_timeout_min,
            "raftMaxTimeout": self.election_timeout_max,
            "connectionTimeout": self.connection_timeout,
            "connectionRetryTime": self.reconnect_interval,
            "leaderFallbackTimeout": self.leader_step_down,
            "autoTickPeriod": self.tick,
            "logCompactionMinEntries": self.compaction_min_entries,
            "logCompactionMinTime": self.compaction_min_time,
            "appendEntriesUseBatch": self.batch_appends,
        }
