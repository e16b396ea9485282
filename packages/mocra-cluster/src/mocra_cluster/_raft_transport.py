"""pysyncobj's TCP transport, hardened against peers that do not know the cluster password.

pysyncobj's `TcpConnection` reads a 4-byte length, buffers the whole frame (up to the 2 GiB the
peer announces, growing a `bytes` by concatenation) and checks the signature only then; it reads
until the socket is empty, so a peer that keeps sending holds the Raft thread; and a connection
that trickles a byte now and then is never timed out. One such connection stalls a node.

`GuardedConnection` keeps pysyncobj's wire format and key exchange, and:

* checks a frame's announced length before buffering it: a connection that has not proved it
  knows the password may send frames of `HANDSHAKE_FRAME_BYTES` at most, a proven one frames of
  `PeerLimits.max_frame_bytes`; a longer (or negative) length closes the connection;
* reads at most `_READ_CHUNKS` chunks per poll event, and stops at a complete frame until the
  connection is proven, so neither the Raft thread nor the buffer is held by one peer;
* counts a connection as *authenticated* once it has delivered a signed frame carrying the random
  key this side generated for it (pysyncobj's key exchange): a recorded frame replayed from another
  connection cannot do that. That frame too is handshake-sized: in pysyncobj's protocol it is the
  peer's address, a utility command (`["status"]`, `["add", addr]`) or, on a connection this side
  opened, the peer's own key.

`GuardedTransport` builds its server and its connections from these, keeps at most
`max_pending_connections` incoming connections unauthenticated (a new one closes the oldest, so a
flood cannot lock real peers out for long), and closes one that is not authenticated within
`handshake_timeout` seconds.
"""

from __future__ import annotations

import errno
import functools
import logging
import socket
import struct
import time
import zlib
from typing import TYPE_CHECKING, Any, NamedTuple

from pysyncobj import pickle  # type: ignore[import-untyped]
from pysyncobj.dns_resolver import globalDnsResolver  # type: ignore[import-untyped]
from pysyncobj.poller import POLL_EVENT_TYPE  # type: ignore[import-untyped]
from pysyncobj.tcp_connection import TcpConnection, _getAddrType  # type: ignore[import-untyped]
from pysyncobj.transport import TCPTransport  # type: ignore[import-untyped]

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ("HANDSHAKE_FRAME_BYTES", "GuardedConnection", "GuardedTransport", "PeerLimits")

logger = logging.getLogger(__name__)

HANDSHAKE_FRAME_BYTES = 4096
"""Largest frame a connection may send before it is authenticated (a key, an address, a command
such as `["add", "host:port"]`: about 100-200 bytes each)."""

_LENGTH = struct.Struct("i")  # pysyncobj's length prefix: a native signed 32-bit int
_READ_CHUNKS = 16
"""recv() calls per poll event: one peer cannot hold the Raft thread while others wait."""
_BACKLOG = 64
_ACCEPTS_PER_EVENT = 16
_BROKEN_LISTENER = frozenset({errno.EBADF, errno.EINVAL, errno.ENOTSOCK})


class PeerLimits(NamedTuple):
    """What one node accepts from the connections to its Raft port (see `ClusterConfig`)."""

    max_frame_bytes: int
    max_pending_connections: int
    handshake_timeout: float

    @property
    def max_command_bytes(self) -> int:
        """The longest command that fits in a frame.

        It leaves room for pysyncobj's pickling, zlib's worst case (0.03 % longer) and the
        append-entries batch (64 KiB) the command may share a frame with.
        """
        return self.max_frame_bytes - self.max_frame_bytes // 256 - (128 << 10)


class GuardedConnection(TcpConnection):  # type: ignore[misc]  # pysyncobj is untyped
    """A `TcpConnection` that refuses oversized frames before buffering them and tracks authentication.

    Overrides the three name-mangled read methods of pysyncobj 0.3.x; everything else (sending,
    connecting, timeouts, callbacks) is pysyncobj's.
    """

    recvLastTimestamp: int  # pysyncobj's: the sender's last timestamp, never going back

    def __init__(self, poller: Any, *, max_frame_bytes: int, **options: Any) -> None:
        self.max_frame_bytes = max_frame_bytes
        self.is_authenticated = False
        self.opened = time.monotonic()
        self._inbox = bytearray()
        super().__init__(poller, **options)

    def connect(self, host: str, port: int) -> bool:
        """Open an outgoing connection (pysyncobj's), with an empty buffer and no authentication."""
        self._reset()
        return bool(super().connect(host, port))

    def disconnect(self) -> None:
        """Close the connection and drop what it had buffered (pysyncobj's, plus our state)."""
        self._reset()
        super().disconnect()

    def _reset(self) -> None:
        self._inbox = bytearray()
        self.is_authenticated = False
        self.opened = time.monotonic()

    @property
    def frame_limit(self) -> int:
        """The longest frame this connection may send now."""
        return self.max_frame_bytes if self.is_authenticated else HANDSHAKE_FRAME_BYTES

    def _refuse(self, problem: str) -> None:
        sock = self._TcpConnection__socket
        try:
            peer = "?" if sock is None else ":".join(map(str, sock.getpeername()[:2]))
        except OSError:
            peer = "?"
        state = "authenticated" if self.is_authenticated else "unauthenticated"
        logger.info("closing the %s Raft connection from %s: %s", state, peer, problem)
        self.disconnect()

    def _head_is_refused(self) -> bool:
        """Close the connection if the frame at the head of the buffer announces a bad length."""
        if len(self._inbox) < _LENGTH.size:
            return False
        (size,) = _LENGTH.unpack_from(self._inbox)
        if 0 <= size <= self.frame_limit:
            return False
        self._refuse(f"a frame of {size} bytes announced; at most {self.frame_limit} accepted")
        return True

    def _has_whole_frame(self) -> bool:
        if len(self._inbox) < _LENGTH.size:
            return False
        size: int = _LENGTH.unpack_from(self._inbox)[0]
        return len(self._inbox) >= _LENGTH.size + size

    def _TcpConnection__tryReadBuffer(self) -> None:
        for _ in range(_READ_CHUNKS):
            if not self._receive() or self._head_is_refused():
                break
            if not self.is_authenticated and self._has_whole_frame():
                break  # parse it first: until then the frame limit is the handshake's
        self._TcpConnection__lastReadTime = time.monotonic()

    def _receive(self) -> bool:
        sock = self._TcpConnection__socket
        if sock is None:
            return False
        try:
            incoming = sock.recv(self._TcpConnection__recvBufferSize)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            self.disconnect()
            return False
        if not incoming:
            self.disconnect()
            return False
        self._inbox += incoming
        return True

    def _TcpConnection__processParseMessage(self) -> object:
        if self._head_is_refused() or not self._has_whole_frame():
            return None
        (size,) = _LENGTH.unpack_from(self._inbox)
        data = bytes(self._inbox[_LENGTH.size : _LENGTH.size + size])
        del self._inbox[: _LENGTH.size + size]
        expected_key = self.recvRandKey
        try:
            message = self._open(data, expected_key)
        except Exception as exc:  # a bad signature, a replay, a malformed body: all mean "drop it"
            self._refuse(f"a frame that does not verify ({type(exc).__name__})")
            return None
        if expected_key is not None:
            self.is_authenticated = True
        return message

    def _open(self, data: bytes, expected_key: bytes | None) -> object:
        if self.encryptor is not None:
            timestamp: int = self.encryptor.extract_timestamp(data)
            if timestamp < self.recvLastTimestamp:
                raise ValueError("timestamp went back")
            self.recvLastTimestamp = timestamp
            data = self.encryptor.decrypt(data)
        message = pickle.loads(zlib.decompress(data))
        if expected_key is not None:
            key, message = message
            if key != expected_key:
                raise ValueError("the frame carries another connection's key")
        return message


class GuardedServer:
    """The listening socket: accepts `GuardedConnection`s (pysyncobj's `TcpServer`, minus its traps).

    Unlike pysyncobj's server it does not stop listening when `accept` fails for lack of file
    descriptors or memory (a flood of connections would otherwise unbind the node for good).
    """

    def __init__(
        self,
        poller: Any,
        addr: tuple[str, int],
        on_connection: Callable[[GuardedConnection], None],
        *,
        conf: Any,
        max_frame_bytes: int,
    ) -> None:
        self._poller = poller
        self._addr = addr
        self._on_connection = on_connection
        self._conf = conf
        self._max_frame_bytes = max_frame_bytes
        self._socket: socket.socket | None = None

    def bind(self) -> None:
        """Bind and listen (raises `OSError` if the address is taken)."""
        sock = socket.socket(_getAddrType(self._addr[0]), socket.SOCK_STREAM)
        try:
            self._tune(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(self._addr)
            sock.listen(_BACKLOG)
        except OSError:
            sock.close()
            raise
        self._socket = sock
        self._poller.subscribe(sock.fileno(), self._accept, POLL_EVENT_TYPE.READ | POLL_EVENT_TYPE.ERROR)

    def unbind(self) -> None:
        """Stop listening."""
        sock, self._socket = self._socket, None
        if sock is not None:
            self._poller.unsubscribe(sock.fileno())
            sock.close()

    def _tune(self, sock: socket.socket) -> None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._conf.sendBufferSize)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._conf.recvBufferSize)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)

    def _accept(self, descr: int, event: int) -> None:
        if self._socket is None or descr != self._socket.fileno():
            return
        if event & POLL_EVENT_TYPE.ERROR:
            self.unbind()
            return
        for _ in range(_ACCEPTS_PER_EVENT):
            if self._socket is None or not self._accept_one(self._socket):
                return

    def _accept_one(self, listener: socket.socket) -> bool:
        try:
            sock, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as exc:
            if exc.errno in _BROKEN_LISTENER:
                self.unbind()
            else:  # EMFILE, ENFILE, ENOBUFS, ECONNABORTED...: this connection only
                logger.warning("cannot accept a Raft connection: %s", exc)
            return False
        self._tune(sock)
        self._on_connection(
            GuardedConnection(
                self._poller,
                max_frame_bytes=self._max_frame_bytes,
                socket=sock,
                timeout=self._conf.connectionTimeout,
                sendBufferSize=self._conf.sendBufferSize,
                recvBufferSize=self._conf.recvBufferSize,
                keepalive=self._conf.tcp_keepalive,
            )
        )
        return True


class GuardedTransport(TCPTransport):  # type: ignore[misc]  # pysyncobj is untyped
    """pysyncobj's `TCPTransport` over `GuardedConnection`s, with bounded unauthenticated connections.

    Pass it to `SyncObj` as `transportClass=GuardedTransport.factory(limits)`.
    """

    def __init__(self, syncObj: Any, selfNode: Any, otherNodes: Any, *, limits: PeerLimits) -> None:
        self._limits = limits  # before TCPTransport builds the server and the outgoing connections
        super().__init__(syncObj, selfNode, otherNodes)

    @classmethod
    def factory(cls, limits: PeerLimits) -> Callable[[Any, Any, Any], GuardedTransport]:
        """The `transportClass` argument of `SyncObj` that builds this transport with `limits`."""
        return functools.partial(cls, limits=limits)

    def _createServer(self) -> None:
        host, port = (self._syncObj.conf.bindAddress or self._selfNode.address).rsplit(":", 1)
        if host != "0.0.0.0":
            host = globalDnsResolver().resolve(host)
        self._server = GuardedServer(
            self._syncObj._poller,
            (host, int(port)),
            self._onNewIncomingConnection,
            conf=self._syncObj.conf,
            max_frame_bytes=self._limits.max_frame_bytes,
        )

    def addNode(self, node: Any) -> None:
        """Add a partner; the outgoing connection to it (if this side dials) is a `GuardedConnection`."""
        super().addNode(node)
        plain = self._connections.get(node)
        if plain is None or isinstance(plain, GuardedConnection):
            return
        conf = self._syncObj.conf
        conn = GuardedConnection(
            self._syncObj._poller,
            max_frame_bytes=self._limits.max_frame_bytes,
            timeout=conf.connectionTimeout,
            sendBufferSize=conf.sendBufferSize,
            recvBufferSize=conf.recvBufferSize,
            keepalive=conf.tcp_keepalive,
        )
        conn.encryptor = self._syncObj.encryptor
        conn.setOnConnectedCallback(functools.partial(self._onOutgoingConnected, conn))
        conn.setOnMessageReceivedCallback(functools.partial(self._onMessageReceived, node))
        conn.setOnDisconnectedCallback(functools.partial(self._onDisconnected, conn))
        self._connections[node] = conn  # the plain one never connected: nothing to close

    def _pending(self) -> list[GuardedConnection]:
        """Incoming connections not authenticated yet, oldest first."""
        return sorted(
            (conn for conn in self._unknownConnections if not conn.is_authenticated),
            key=lambda conn: conn.opened,
        )

    def _onNewIncomingConnection(self, conn: GuardedConnection) -> None:
        pending = self._pending()
        for oldest in pending[: max(0, len(pending) - self._limits.max_pending_connections + 1)]:
            oldest._refuse(
                f"{len(pending) + 1} unauthenticated connections; at most "
                f"{self._limits.max_pending_connections} (max_pending_connections) are kept"
            )
        super()._onNewIncomingConnection(conn)

    def _onTick(self) -> None:
        super()._onTick()
        deadline = time.monotonic() - self._limits.handshake_timeout
        for conn in self._pending():
            if conn.opened > deadline:
                break
            conn._refuse(f"not authenticated within {self._limits.handshake_timeout:g} s (handshake_timeout)")
