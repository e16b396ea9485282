"""GuardedConnection on a socket pair: frame lengths are checked before anything is buffered."""

from __future__ import annotations

import os
import socket
import struct
import time
import zlib
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest
from pysyncobj import pickle  # type: ignore[import-untyped]
from pysyncobj.poller import createPoller  # type: ignore[import-untyped]
from pysyncobj.tcp_connection import CONNECTION_STATE  # type: ignore[import-untyped]

from mocra_cluster._raft_auth import MessageAuthenticator
from mocra_cluster._raft_transport import HANDSHAKE_FRAME_BYTES, GuardedConnection, PeerLimits

if TYPE_CHECKING:
    from collections.abc import Iterator

AUTH = MessageAuthenticator("pw")


class Pair(NamedTuple):
    conn: GuardedConnection
    theirs: socket.socket
    received: list[object]
    poller: Any


@pytest.fixture
def pair() -> Iterator[Pair]:
    """A GuardedConnection (1 MiB frames) on one end of a socket pair; the other end for the test."""
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    poller = createPoller("auto")
    received: list[object] = []
    conn = GuardedConnection(poller, max_frame_bytes=1 << 20, socket=ours, timeout=10.0)
    conn.encryptor = AUTH
    conn.setOnMessageReceivedCallback(received.append)
    yield Pair(conn, theirs, received, poller)
    conn.disconnect()
    theirs.close()


def frame(message: object, rand_key: bytes | None = None, auth: MessageAuthenticator = AUTH) -> bytes:
    data = zlib.compress(pickle.dumps(message if rand_key is None else (rand_key, message)), 3)
    data = auth.encrypt_at_time(data, int(time.monotonic()))
    return struct.pack("i", len(data)) + data


def pump(poller: Any, rounds: int = 20) -> None:
    for _ in range(rounds):
        poller.poll(0.01)


def feed(theirs: socket.socket, data: bytes, poller: Any) -> None:
    """Send `data` while the connection reads it (a socket pair buffers little)."""
    theirs.setblocking(False)
    view = memoryview(data)
    for _ in range(10_000):
        if not view:
            return
        try:
            view = view[theirs.send(view) :]
        except BlockingIOError:
            pump(poller, 1)
    raise AssertionError("the connection stopped reading")


def test_a_huge_length_prefix_closes_before_the_body_is_read(pair: Pair) -> None:
    conn, theirs, received, poller = pair
    theirs.sendall(struct.pack("i", 2**31 - 1) + bytes(1 << 16))
    pump(poller)
    assert conn.state == CONNECTION_STATE.DISCONNECTED
    assert len(conn._inbox) == 0 and received == []


def test_before_the_key_exchange_frames_are_handshake_sized(pair: Pair) -> None:
    conn, theirs, received, poller = pair
    theirs.sendall(struct.pack("i", HANDSHAKE_FRAME_BYTES + 1) + bytes(100))
    pump(poller)
    assert conn.state == CONNECTION_STATE.DISCONNECTED


def test_after_the_key_exchange_frames_up_to_the_limit_pass(pair: Pair) -> None:
    conn, theirs, received, poller = pair
    theirs.sendall(frame(os.urandom(32)))  # their key: signed, but it could be a replay
    pump(poller)
    assert len(received) == 1 and not conn.is_authenticated
    conn.recvRandKey = mine = os.urandom(32)  # what the transport does on the first message
    theirs.sendall(frame("127.0.0.1:7100", rand_key=mine))  # a peer's address: it carries our key
    pump(poller)
    assert conn.is_authenticated
    big = os.urandom(512 << 10)  # incompressible: a frame over the handshake size, under 1 MiB
    feed(theirs, frame(big, rand_key=mine), poller)
    pump(poller)
    assert received[1:] == ["127.0.0.1:7100", big]
    theirs.sendall(frame(b"replayed", rand_key=os.urandom(32)))  # another connection's key
    pump(poller)
    assert conn.state == CONNECTION_STATE.DISCONNECTED and received[3:] == []


def test_a_wrongly_signed_frame_closes_the_connection(pair: Pair) -> None:
    conn, theirs, received, poller = pair
    theirs.sendall(frame(os.urandom(32), auth=MessageAuthenticator("guess")))
    pump(poller)
    assert conn.state == CONNECTION_STATE.DISCONNECTED and received == []


def test_a_command_leaves_room_in_its_frame() -> None:
    limits = PeerLimits(max_frame_bytes=16 << 20, max_pending_connections=32, handshake_timeout=2.0)
    assert 16 << 20 > limits.max_command_bytes > 15 << 20
