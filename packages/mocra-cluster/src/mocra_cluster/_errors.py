"""The errors of mocra_cluster, all rooted in `ClusterError`; mocra_core maps them into its tree at the seam.

```text
ClusterError
    ClusterConfigError .key      a setting is missing or malformed (names the setting)
    ClusterClosed                the control plane was closed
    ClusterUnavailable           the cluster cannot serve the call right now (retry later)
        NotLeader .leader        this node does not lead; `leader` is the current leader's id, if known
        NoQuorum                 too few voters answer to commit a change
    StaleToken .token .highest   a fenced write carried a token older than one already seen
    Refused .key .problem        the state machine refused a command (a key holds the other kind, ...)
```
"""

from __future__ import annotations

__all__ = (
    "ClusterClosed",
    "ClusterConfigError",
    "ClusterError",
    "ClusterUnavailable",
    "NoQuorum",
    "NotLeader",
    "Refused",
    "StaleToken",
)


class ClusterError(Exception):
    """Root of every error the control plane raises on purpose."""


class ClusterConfigError(ClusterError):
    """A setting of the control plane is missing or malformed.

    Example:
        >>> raise ClusterConfigError("MOCRA_NODE_ID", "is not set")
        Traceback (most recent call last):
        ...
        mocra_cluster._errors.ClusterConfigError: MOCRA_NODE_ID: is not set
    """

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


class ClusterClosed(ClusterError):
    """The control plane was closed; calls after `aclose()` raise this."""


class ClusterUnavailable(ClusterError):
    """The cluster cannot serve the call right now; retrying later may succeed."""


class NotLeader(ClusterUnavailable):
    """This node does not lead the cluster; `leader` names the leader if it is known.

    Example:
        >>> str(NotLeader("node-b"))
        "this node is not the leader (leader: 'node-b')"
    """

    def __init__(self, leader: str | None) -> None:
        super().__init__(f"this node is not the leader (leader: {leader!r})")
        self.leader = leader


class NoQuorum(ClusterUnavailable):
    """Too few voters answer to commit a change."""


class StaleToken(ClusterError):
    """A fenced write carried a token older than the highest one the resource has seen.

    Example:
        >>> str(StaleToken(3, highest=5))
        'fencing token 3 is stale: a write with token 5 was already accepted'
    """

    def __init__(self, token: int, *, highest: int) -> None:
        super().__init__(f"fencing token {token} is stale: a write with token {highest} was already accepted")
        self.token = token
        self.highest = highest


class Refused(ClusterError):
    """The state machine refused a command and changed nothing; `key` names the key concerned.

    Example:
        >>> str(Refused("pages", "holds a list, not a value"))
        "key 'pages': holds a list, not a value"
    """

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"key {key!r}: {problem}")
        self.key = key
        self.problem = problem
