"""Ask a running Raft member about its cluster, and to add a voter, over pysyncobj's admin protocol.

A node that joins knows one seed. It asks the seed (signed with the cluster password, like every
Raft message) for the current voters, starts its own Raft node with them as partners, then asks the
seed to add its address (the seed forwards the change to the leader). Blocking calls: run them on a
worker thread.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from pysyncobj.poller import createPoller  # type: ignore[import-untyped]

from ._errors import ClusterUnavailable
from ._raft_transport import GuardedConnection

if TYPE_CHECKING:
    from ._raft_auth import MessageAuthenticator

__all__ = ("add_voter", "cluster_of")

_PARTNER = "partner_node_status_server_"
_REPLY_BYTES = 1 << 20
"""Longest reply taken from a seed (a status lists every voter: well under this)."""


class _Exchange:
    """One request and its reply on a fresh connection (pysyncobj's `TcpUtility`, with our signer).

    The connection is a `GuardedConnection`: a reply longer than `_REPLY_BYTES`, or one that does not
    verify, closes it before it is buffered.
    """

    def __init__(self, authenticator: MessageAuthenticator, timeout: float) -> None:
        self._poller = createPoller("auto")
        self._connection = GuardedConnection(
            self._poller,
            max_frame_bytes=_REPLY_BYTES,
            onDisconnected=self._on_disconnected,
            onMessageReceived=self._on_message,
            onConnected=self._on_connected,
            timeout=timeout,
        )
        self._connection.encryptor = authenticator
        self._timeout = timeout
        self._request: list[Any] = []
        self._reply: object = None
        self._open = False

    def run(self, addr: str, request: list[Any]) -> object:
        host, _, port = addr.rpartition(":")
        self._request = request
        self._open = bool(self._connection.connect(host, int(port)))
        deadline = time.monotonic() + self._timeout
        while self._open:
            self._poller.poll(0.05)
            if time.monotonic() > deadline:
                self._connection.disconnect()
        if self._reply is None:
            raise ClusterUnavailable(f"no answer from {addr} to {request[0]!r} (wrong password or down?)")
        return self._reply

    def _on_connected(self) -> None:
        self._connection.recvRandKey = os.urandom(32)
        self._connection.send(self._connection.recvRandKey)

    def _on_message(self, message: object) -> None:
        if not self._connection.sendRandKey:  # the server's half of the key exchange
            self._connection.sendRandKey = message
            self._connection.send(self._request)
            return
        self._reply = message
        self._connection.disconnect()

    def _on_disconnected(self) -> None:
        self._open = False


def cluster_of(seed: str, authenticator: MessageAuthenticator, *, timeout: float = 3.0) -> list[str]:
    """Return the voter addresses the member at `seed` knows, itself included, sorted.

    Raises:
        ClusterUnavailable: the seed does not answer (down, or another password).
    """
    status = _Exchange(authenticator, timeout).run(seed, ["status"])
    if not isinstance(status, dict):
        raise ClusterUnavailable(f"{seed} answered the status request with {status!r}")
    voters = {str(status["self"].id)}
    voters.update(key[len(_PARTNER) :] for key in status if key.startswith(_PARTNER))
    return sorted(voters)


def add_voter(seed: str, addr: str, authenticator: MessageAuthenticator, *, timeout: float = 3.0) -> bool:
    """Ask the member at `seed` once to add the voter `addr`; True once the change is committed.

    False if the leader refused: it allows one membership change at a time (and none before its
    first entry of a term is committed), and refuses an address that already is a voter. The change
    commits only once a majority of the new voter set, `addr` included if the cluster had one
    voter, has it: start the node at `addr` first.

    Raises:
        ClusterUnavailable: the seed does not answer within `timeout` seconds (down, another
            password, or the change is still being committed).
    """
    reply = _Exchange(authenticator, timeout).run(seed, ["add", addr])
    return isinstance(reply, str) and reply.startswith("SUCCESS")
