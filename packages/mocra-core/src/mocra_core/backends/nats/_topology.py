"""`Topology`: the lanes and partition keys of one `(topic, group)` on NATS, and their durable consumers.

A `Puller` learns of lanes and keys from the topic's subjects (listed at most once a `REDISCOVER`) and
from publishers' bells; each gets a durable pull consumer, created here on first use: a lane's hands out
any number of messages, a key's one at a time (`max_ack_pending=1`).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

import anyio
import nats.js.api as jsapi
import nats.js.errors

from ..._errors import BackendError

if TYPE_CHECKING:
    from collections.abc import Callable

    from nats.js import JetStreamContext

    from ._wire import Call, Names

__all__ = ("REDISCOVER", "SETTLE", "Key", "Topology", "origin_of")

logger = logging.getLogger(__name__)

SETTLE = 0.25
"""Seconds `fetch` waits at most for a key message the server is known to be pushing right now."""
REDISCOVER = 1.0
"""Least seconds between two listings of a topic's subjects."""
_KEY_TOKEN = re.compile(r"[0-9a-f]{20}")


class Key:
    """A partition key of the topic: its consumer, and this process's pull request on it."""

    __slots__ = ("consumer", "expect_until", "request")

    def __init__(self) -> None:
        self.consumer: str | None = None  # durable name once ensured
        self.request: str | None = None  # id of this process's lingering pull request
        self.expect_until = 0.0  # the server should be pushing a message of this key to us until then


def origin_of(subject: str) -> tuple[str | None, int]:
    """The key token (None for a lane) and the lane (0 for a key) of a work subject."""
    kind, _, token = subject.rpartition(".")
    if kind.endswith(".k"):
        return token, 0
    try:
        return None, int(token)
    except ValueError:
        return None, 0


class Topology:
    """The lanes and keys of one topic for one group, and their consumers (see the module docstring).

    Args:
        js: The JetStream context.
        names: The queue's names.
        topic: The queue topic.
        group: The consumer group.
        visibility_timeout: Seconds a delivery may stay unacked (idle key consumers live 4 times longer).
        ack_wait: The consumers' `ack_wait`.
        clock: Monotonic seconds.
        call: Runs JetStream API calls, retrying outages.
        changed: Called when lanes or keys appear.
    """

    def __init__(
        self,
        js: JetStreamContext,
        names: Names,
        topic: str,
        group: str,
        *,
        visibility_timeout: float,
        ack_wait: float,
        clock: Callable[[], float],
        call: Call,
        changed: Callable[[], None],
    ) -> None:
        self.topic = topic
        self.group = group
        self._js = js
        self._names = names
        self._vis = visibility_timeout
        self._ack_wait = ack_wait  # the server's lease: the lease keeper renews it while we live
        self._clock = clock
        self._call = call
        self._changed = changed
        self.lanes: dict[int, str | None] = {}  # lane -> durable name once ensured
        self.keys: dict[str, Key] = {}
        self._discover_at = 0.0  # 0: list the subjects at the next `prepare`

    def rediscover(self) -> None:
        """List the subjects again at the next `prepare` (after a reconnect)."""
        self._discover_at = 0.0

    def heard(self, token: str) -> None:
        """A publisher's bell named a lane (`l<lane>`) or a key (`k<token>`)."""
        kind, rest = token[:1], token[1:]
        if kind == "l" and rest.lstrip("-").isdigit():
            lane = int(rest)
            if lane not in self.lanes:
                self.lanes[lane] = None
                self._changed()
        elif kind == "k" and _KEY_TOKEN.fullmatch(rest):
            key = self.keys.get(rest)
            if key is None or key.request is None:
                self.keys.setdefault(rest, Key())
                self._changed()

    async def prepare(self) -> None:
        """List the topic's subjects (at most once a `REDISCOVER`) and ensure the consumers of new ones."""
        if self._discover_at <= self._clock():
            await self._discover()
        for lane, consumer in list(self.lanes.items()):
            if consumer is None:
                subject = self._names.lane_subject(self.topic, lane)
                await self._ensure(f"l{lane}", subject, max_ack_pending=-1)
                self.lanes[lane] = self._names.consumer(self.topic, self.group, f"l{lane}")
        new = [(kt, key) for kt, key in self.keys.items() if key.consumer is None]
        if new:
            limiter = anyio.CapacityLimiter(32)  # one round trip each: create them side by side
            try:
                async with anyio.create_task_group() as tg:
                    for kt, key in new:
                        tg.start_soon(self._ensure_key, kt, key, limiter)
            except ExceptionGroup as group:  # the same failure for every key: report it once
                raise group.exceptions[0] from None

    async def _discover(self) -> None:
        now = self._clock()
        if self._discover_at > now:
            return
        self._discover_at = now + REDISCOVER
        names = self._names
        info = await self._call(
            "list subjects",
            lambda: self._js.stream_info(names.work_stream, subjects_filter=names.topic_subjects(self.topic)),
        )
        assert isinstance(info, jsapi.StreamInfo)
        seen: set[str] = set()
        known = len(self.lanes), len(self.keys)
        for subject, count in (info.state.subjects or {}).items():
            if not count:
                continue
            kt, lane = origin_of(subject)
            if kt is None:
                self.lanes.setdefault(lane, None)
            else:
                seen.add(kt)
                self.keys.setdefault(kt, Key())
        if (len(self.lanes), len(self.keys)) != known:
            self._changed()
        for kt, key in list(self.keys.items()):
            if kt not in seen and key.request is None and not key.expect_until:
                del self.keys[kt]  # empty: forget it until a bell names it again

    async def _ensure_key(self, kt: str, key: Key, limiter: anyio.CapacityLimiter) -> None:
        async with limiter:
            info = await self._ensure(f"k{kt}", self._names.key_subject(self.topic, kt), max_ack_pending=1)
        key.consumer = info.name
        if not info.num_ack_pending and info.num_pending:  # free, with a message: the server sends it now
            key.expect_until = self._clock() + SETTLE

    async def _ensure(self, part: str, subject: str, *, max_ack_pending: int) -> jsapi.ConsumerInfo:
        name = self._names.consumer(self.topic, self.group, part)
        config = jsapi.ConsumerConfig(
            name=name,
            durable_name=name,
            description=f"mocra topic={self.topic!r} group={self.group!r} {part}"[:256],
            deliver_policy=jsapi.DeliverPolicy.ALL,
            ack_policy=jsapi.AckPolicy.EXPLICIT,
            ack_wait=self._ack_wait,
            max_deliver=-1,
            filter_subject=subject,
            max_ack_pending=max_ack_pending,
            max_waiting=4096,
            inactive_threshold=max(3600.0, 4 * self._vis),
        )
        await self._check_agreement(name)
        try:
            info = await self._call(
                "create a consumer", lambda: self._js.add_consumer(self._names.work_stream, config)
            )
        except BackendError as exc:
            cause = exc.__cause__
            if isinstance(cause, nats.js.errors.APIError) and cause.err_code == 10100:
                raise ValueError(
                    f"topic {self.topic!r} is consumed by another group than {self.group!r}"
                ) from None
            raise
        assert isinstance(info, jsapi.ConsumerInfo)
        return info

    async def _check_agreement(self, name: str) -> None:
        """Warn when the consumer exists with another `ack_wait`: the last worker to start would set it."""
        try:
            info = await self._call(
                "read a consumer", lambda: self._js.consumer_info(self._names.work_stream, name)
            )
        except BackendError as exc:
            if isinstance(exc.__cause__, nats.js.errors.NotFoundError):
                return
            raise
        theirs = info.config.ack_wait or 0.0
        if abs(theirs - self._ack_wait) > 0.01 * self._ack_wait:
            logger.warning(
                "nats: workers of %s disagree on the consumers' ack_wait (queue.liveness_timeout, or "
                "queue.visibility_timeout if shorter): %g s before, %g s for this one (the last to start "
                "sets it for all, and a lease may come back while another still works on it): give every "
                "worker the same",
                self._names.ns, theirs, self._ack_wait,
            )  # fmt: skip
