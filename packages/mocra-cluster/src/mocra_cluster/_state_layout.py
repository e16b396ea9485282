"""How `StateMachine` lays its state out in a `StateStore`: the keys, and the codecs of what they hold.

Keys are UTF-8, integers in msgpack:

```text
k/<key>                  -> Entry(value, expires)           KV values (a counter: ASCII decimal)
n/<key>                  -> list length                      lists (a key holds a value or a list)
i/<key> NUL <index u64>  -> element                          list elements, from index 0
s/<key> NUL <member>     -> b""                              sets (their own name space, never expire)
c/<key>                  -> set size
l/<key>                  -> LockInfo(holder, token, expires) latest grant of each lock
p/<partition>            -> LockInfo                         latest grant of each partition lease
m/<member id>            -> Member
h/<topic>                -> TopicHead(first, next)           kept window of the topic's log
q/<topic> NUL <seq u64>  -> Message
meta/fence               -> the last fencing token handed out (one counter for locks and partitions)
meta/applied             -> how many commands were applied
```
"""

from __future__ import annotations

import msgspec

from ._records import Entry, LockInfo, Member, Message, TopicHead

__all__ = (
    "APPLIED",
    "FENCE",
    "INT64_MAX",
    "INT64_MIN",
    "decode_entry",
    "decode_head",
    "decode_int",
    "decode_lock",
    "decode_member",
    "decode_message",
    "encode",
    "head_key",
    "items_prefix",
    "length_key",
    "lock_key",
    "member_key",
    "message_key",
    "parse_counter",
    "partition_key",
    "set_prefix",
    "size_key",
    "value_key",
)

FENCE = b"meta/fence"
APPLIED = b"meta/applied"
encode = msgspec.msgpack.encode
decode_entry = msgspec.msgpack.Decoder(Entry).decode
decode_lock = msgspec.msgpack.Decoder(LockInfo).decode
decode_member = msgspec.msgpack.Decoder(Member).decode
decode_message = msgspec.msgpack.Decoder(Message).decode
decode_head = msgspec.msgpack.Decoder(TopicHead).decode
decode_int = msgspec.msgpack.Decoder(int).decode
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def value_key(key: str) -> bytes:
    return b"k/" + key.encode()


def lock_key(key: str) -> bytes:
    return b"l/" + key.encode()


def partition_key(partition: int) -> bytes:
    return b"p/%d" % partition


def member_key(member_id: str) -> bytes:
    return b"m/" + member_id.encode()


def head_key(topic: str) -> bytes:
    return b"h/" + topic.encode()


def message_key(topic: str, seq: int) -> bytes:
    return b"q/" + topic.encode() + b"\0" + encode(seq)


def length_key(key: str) -> bytes:
    return b"n/" + key.encode()


def items_prefix(key: str) -> bytes:
    return b"i/" + key.encode() + b"\0"


def set_prefix(key: str) -> bytes:
    return b"s/" + key.encode() + b"\0"


def size_key(key: str) -> bytes:
    return b"c/" + key.encode()


def parse_counter(value: bytes) -> int | None:
    """Return the counter `value` holds, or None if it is not one (see `Incr`).

    Example:
        >>> parse_counter(b"-41"), parse_counter(b"01"), parse_counter(b"x")
        (-41, None, None)
    """
    if len(value) > 20:
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if str(number).encode() == value else None
