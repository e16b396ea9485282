"""`MessageAuthenticator`: signs and checks every message between Raft nodes with the cluster password.

pysyncobj pickles its messages, and unpickling data from a stranger runs the stranger's code: an open
Raft port without a password is remote code execution. pysyncobj checks messages with Fernet when
given a password, which needs the `cryptography` package (not a dependency of mocra-cluster). This
module gives its connections an object with the same three methods that signs with HMAC-SHA256
from the standard library instead, so a message that does not carry a valid signature is dropped
(and its connection closed) before it is unpickled. Messages are signed, not encrypted: run the
cluster on a private network (or inside a VPN/TLS tunnel) if its keys and values are confidential.
Each connection starts with a fresh random key exchange (pysyncobj's), so a recorded message does
not replay on another connection.
"""

from __future__ import annotations

import hashlib
import hmac
import struct

from ._errors import ClusterError

__all__ = ("MessageAuthenticator",)

_VERSION = b"\x01"
_HEADER = struct.Struct(">Q")
_MAC_SIZE = 32
_SALT = b"mocra-cluster/raft/v1"
_ROUNDS = 100_000


class InvalidMessage(ClusterError):
    """A message is malformed or its signature does not match (pysyncobj then drops the connection)."""


class MessageAuthenticator:
    """Signs and verifies messages with a key derived from the cluster password (PBKDF2-SHA256).

    Has the methods pysyncobj's connections call on their encryptor: `encrypt_at_time`,
    `extract_timestamp` and `decrypt`.

    Example:
        >>> auth = MessageAuthenticator("s3cret")
        >>> token = auth.encrypt_at_time(b"hello", 7)
        >>> auth.extract_timestamp(token), auth.decrypt(token)
        (7, b'hello')
        >>> MessageAuthenticator("guess").decrypt(token)
        Traceback (most recent call last):
        ...
        mocra_cluster._raft_auth.InvalidMessage: bad signature
    """

    def __init__(self, password: str) -> None:
        if not password:
            raise ValueError("the cluster password must not be empty")
        self._key = hashlib.pbkdf2_hmac("sha256", password.encode(), _SALT, _ROUNDS)

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._key, body, hashlib.sha256).digest()

    def encrypt_at_time(self, data: bytes, current_time: int) -> bytes:
        """Return `data` with a version byte, the sender's timestamp and a signature around it."""
        body = _VERSION + _HEADER.pack(max(current_time, 0)) + data
        return body + self._mac(body)

    def _verified(self, token: bytes) -> bytes:
        if len(token) < 1 + _HEADER.size + _MAC_SIZE or token[:1] != _VERSION:
            raise InvalidMessage("malformed message")
        body, mac = token[:-_MAC_SIZE], token[-_MAC_SIZE:]
        if not hmac.compare_digest(mac, self._mac(body)):
            raise InvalidMessage("bad signature")
        return body

    def extract_timestamp(self, token: bytes) -> int:
        """Return the sender's timestamp of a verified message."""
        body = self._verified(token)
        (timestamp,) = _HEADER.unpack_from(body, 1)
        return int(timestamp)

    def decrypt(self, token: bytes) -> bytes:
        """Return the payload of a verified message."""
        return self._verified(token)[1 + _HEADER.size :]
