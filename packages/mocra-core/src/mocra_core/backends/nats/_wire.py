"""Names, subjects and reply plumbing of `NatsJetStreamQueue` (see `_queue.py` for the design)."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from typing import TYPE_CHECKING, Protocol, TypeVar

import anyio

from ..._errors import BackendError, BackendUnavailable, PoisonMessage
from ...queue._envelope import Envelope, unpack

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Sequence

    from nats.aio.client import Client
    from nats.aio.msg import Msg
    from nats.aio.subscription import Subscription

__all__ = (
    "DUE_HEADER",
    "POISON_HEADER",
    "RESEND_AFTER",
    "AckInfo",
    "Call",
    "Names",
    "Raw",
    "Replies",
    "check_stored",
    "check_topic",
    "key_token",
    "parse_ack_subject",
    "status_of",
    "topic_token",
)

T = TypeVar("T")


class Call(Protocol):
    """Runs one JetStream API request, retried through a short outage (`NatsJetStreamQueue._call`)."""

    def __call__(self, what: str, call: Callable[[], Awaitable[T]], /) -> Awaitable[T]: ...


_PLAIN = re.compile(r"[A-Za-z0-9_-]{1,64}")

RESEND_AFTER = 1.0
"""Seconds after a reconnect before unanswered requests are sent again."""

DUE_HEADER = "Mocra-Due"
"""Header of a message published with a delay: the epoch second it becomes due."""

POISON_HEADER = "Mocra-Poison"
"""Header of a DLQ entry whose body is the raw bytes of an undecodable message."""


def _digest(text: str, size: int) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=size).hexdigest()


def topic_token(topic: str) -> str:
    """One subject token for `topic`: the topic itself when it is plain, else `~` and a hash."""
    return topic if _PLAIN.fullmatch(topic) else "~" + _digest(topic, 10)


def key_token(key: str) -> str:
    """One subject token for a partition key (always hashed: keys are arbitrary text)."""
    return _digest(key, 10)


class Names:
    """Stream, subject and consumer names of one namespace.

    Every name starts with the namespace, so two namespaces never meet:

    - stream `{ns}-work`, subjects `{ns}.q.{topic}.l.{lane}` (unkeyed) and `{ns}.q.{topic}.k.{key hash}`;
    - stream `{ns}-dlq`, subjects `{ns}.dlq.{topic}`;
    - core-NATS subjects `{ns}.bell.{topic}` (no stream) announce publishes to waiting consumers;
    - durable consumers `{ns}-{hash of topic, group, lane or key}` on `{ns}-work`.
    """

    __slots__ = ("dlq_stream", "ns", "work_stream")

    def __init__(self, namespace: str) -> None:
        if not isinstance(namespace, str) or not _PLAIN.fullmatch(namespace):
            raise ValueError(f"namespace must be 1-64 of A-Z a-z 0-9 _ -, got {namespace!r}")
        self.ns = namespace
        self.work_stream = f"{namespace}-work"
        self.dlq_stream = f"{namespace}-dlq"

    def topic_subjects(self, topic: str) -> str:
        """Wildcard over every work subject of `topic`."""
        return f"{self.ns}.q.{topic_token(topic)}.>"

    def lane_subject(self, topic: str, lane: int) -> str:
        """Work subject of unkeyed messages of one lane."""
        return f"{self.ns}.q.{topic_token(topic)}.l.{lane}"

    def key_subject(self, topic: str, ktok: str) -> str:
        """Work subject of the messages of one partition key (all lanes)."""
        return f"{self.ns}.q.{topic_token(topic)}.k.{ktok}"

    def dlq_subject(self, topic: str) -> str:
        """DLQ subject of `topic`."""
        return f"{self.ns}.dlq.{topic_token(topic)}"

    def bell_subject(self, topic: str) -> str:
        """Core-NATS subject on which publishers announce new messages of `topic`."""
        return f"{self.ns}.bell.{topic_token(topic)}"

    def consumer(self, topic: str, group: str, part: str) -> str:
        """Durable consumer name of `group` on one lane (`part="l5"`) or key (`"k<hash>"`) of `topic`."""
        return f"{self.ns}-{_digest(chr(0).join((topic, group, part)), 12)}"


class AckInfo:
    """What a JetStream ack subject says about a delivery."""

    __slots__ = ("delivered", "pending", "seq")

    def __init__(self, delivered: int, seq: int, pending: int) -> None:
        self.delivered = delivered  # deliveries of this message by its consumer, this one included
        self.seq = seq  # stream sequence
        self.pending = pending  # messages of the consumer not yet delivered at that moment


def parse_ack_subject(subject: str) -> AckInfo | None:
    """Read `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>` (or the v2 form)."""
    tokens = subject.split(".")
    if len(tokens) < 9 or tokens[0] != "$JS" or tokens[1] != "ACK":
        return None
    base = 2 if len(tokens) == 9 else 4  # v2 adds domain and account hash (and a trailing token)
    try:
        return AckInfo(int(tokens[base + 2]), int(tokens[base + 3]), int(tokens[base + 6]))
    except (ValueError, IndexError):
        return None


def status_of(msg: Msg) -> str | None:
    """The status code of a JetStream status message (`"404"`, `"408"`, ...), else `None`."""
    headers = msg.headers
    if headers and not msg.data:
        return headers.get("Status")
    return None


class _Expected:
    __slots__ = ("keep", "missing", "replies", "wake")

    def __init__(self, count: int, keep: bool) -> None:
        self.keep = keep
        self.missing = set(range(count))
        self.replies: list[Msg | None] = [None] * count if keep else []
        self.wake = anyio.Event()


class Replies:
    """One inbox subscription collecting the replies to batches of requests (acks, publishes, API calls).

    `request_all` publishes a batch, each request with its own reply subject, and waits for every reply:
    one round trip for the batch. Requests still unanswered when the connection comes back after an
    outage are sent again (acks, naks and publishes are idempotent or at-least-once anyway).
    """

    __slots__ = ("_nc", "_next", "_pending", "_prefix", "url")

    def __init__(self, nc: Client, url: str) -> None:
        self._nc = nc
        self.url = url
        self._prefix = nc.new_inbox()
        self._pending: dict[str, _Expected] = {}
        self._next = itertools.count(1).__next__

    async def start(self) -> Subscription:
        """Subscribe to the inbox."""
        return await self._nc.subscribe(self._prefix + ".*", cb=self._on_reply)

    def reconnected(self) -> None:
        """The connection came back: make every waiting batch resend what is unanswered."""
        for expected in self._pending.values():
            expected.wake.set()

    async def _on_reply(self, msg: Msg) -> None:
        token, _, index = msg.subject[len(self._prefix) + 1 :].partition("-")
        expected = self._pending.get(token)
        if expected is None:
            return
        i = int(index)
        if i in expected.missing:
            expected.missing.discard(i)
            if expected.keep:
                expected.replies[i] = msg
            if not expected.missing:
                expected.wake.set()

    async def request_all(
        self,
        requests: Sequence[tuple[str, bytes, dict[str, str] | None]],
        budget: float,
        *,
        keep: bool = False,
        then: tuple[str, bytes] | None = None,
    ) -> list[Msg | None]:
        """Send `(subject, payload, headers)` requests; return the replies in order if `keep`.

        `then` is a plain message published right after the requests (in the same write), once.

        Raises:
            BackendUnavailable: not every reply came within `budget` seconds.
        """
        if not requests:
            return []
        token = str(self._next())
        expected = _Expected(len(requests), keep)
        self._pending[token] = expected
        prefix = f"{self._prefix}.{token}-"
        publish = self._nc.publish
        deadline = anyio.current_time() + budget
        try:
            todo: Iterable[int] = range(len(requests))
            while True:
                for i in todo:
                    subject, payload, headers = requests[i]
                    await publish(subject, payload, reply=f"{prefix}{i}", headers=headers)
                if then is not None:
                    await publish(*then)
                    then = None
                with anyio.move_on_after(deadline - anyio.current_time()):
                    await expected.wake.wait()
                if not expected.missing:
                    return expected.replies
                if anyio.current_time() >= deadline:
                    raise BackendUnavailable("nats", self.url, f"no reply within {budget:g} s")
                # woken by a reconnect: what the client buffered meanwhile is being sent now; give the
                # replies a moment, then send again what is still unanswered (lost in the outage)
                expected.wake = anyio.Event()
                with anyio.move_on_after(min(RESEND_AFTER, max(deadline - anyio.current_time(), 0))):
                    await expected.wake.wait()
                if not expected.missing:
                    return expected.replies
                expected.wake = anyio.Event()
                todo = sorted(expected.missing)
        finally:
            del self._pending[token]


class Raw:
    """A message JetStream delivered to this process (leased to it), not yet handed out."""

    __slots__ = ("ack", "data", "due", "envelope", "info", "kt", "priority", "problem", "received", "renewed")

    def __init__(self, msg: Msg, info: AckInfo, kt: str | None, lane: int, received: float) -> None:
        self.ack = msg.reply
        self.info = info
        self.kt = kt
        self.received = received
        self.renewed = received  # when its server lease last began (delivery, or an in-progress ack sent)
        self.data = msg.data
        headers = msg.headers
        due = headers.get(DUE_HEADER) if headers else None
        self.due = float(due) if due else None
        self.problem: str | None = None
        self.envelope: Envelope | None = None
        try:
            self.envelope = unpack(msg.data)
        except PoisonMessage as exc:
            self.problem = exc.reason
        self.priority = lane if self.envelope is None or kt is None else self.envelope.priority

    def order(self) -> tuple[int, int]:
        """Sort key: highest lane first, then stream order."""
        return (-self.priority, self.info.seq)


def check_topic(topic: str) -> None:
    """Raise `ValueError` unless `topic` is a non-empty str without NUL."""
    if not isinstance(topic, str) or not topic or "\0" in topic:
        raise ValueError(f"topic must be a non-empty str without NUL, got {topic!r}")


def check_stored(url: str, replies: list[Msg | None]) -> None:
    """Raise `BackendError` if a JetStream publish was refused."""
    for reply in replies:
        if reply is None:
            continue
        status = status_of(reply)
        if status is not None:
            raise BackendError("nats", url, f"publish refused: status {status} (no stream for the subject?)")
        if b'"error"' in reply.data:
            error = json.loads(reply.data).get("error", {})
            raise BackendError("nats", url, f"publish refused: {error.get('description', error)}")
