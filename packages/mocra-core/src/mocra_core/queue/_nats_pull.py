"""`Puller`: how one `(topic, group)` of a `NatsJetStreamQueue` gets messages out of JetStream.

Lanes are fetched on demand (`no_wait` pull requests, highest lane first); while a `consume` waits, each
lane carries one lingering pull request (`expires` at most `LINGER`) per waiting consumer. Each active
partition key gets one lingering pull request of this process (batch 1) on its consumer
(`max_ack_pending=1`) at every `fetch` and while consumers wait, so the server pushes the key's next
message as soon as the key is free. What arrives that way is kept in `buffer`: it is already leased to
this process and handed out by its next `consume`, merged by lane and stream order. A request outlives
the call that made it by at most `LINGER` seconds, which bounds how long a process that stopped
consuming can still catch messages. A `no_wait` request left unanswered for `QUIET` seconds (nats-server
2.9 may never answer one, see `_fetch_lane`) is given up, and what it still brings goes to `buffer`.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from typing import TYPE_CHECKING

import anyio
import nats.js.api as jsapi
import nats.js.errors

from .._errors import BackendError
from ._nats_wire import Raw, parse_ack_subject, status_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from nats.aio.client import Client
    from nats.aio.msg import Msg
    from nats.aio.subscription import Subscription
    from nats.js import JetStreamContext

    from ._nats_wire import Call, Names

__all__ = ("Puller",)

logger = logging.getLogger(__name__)

LINGER = 1.0
"""Seconds a waiting consumer's pull request lingers on a lane before it is renewed."""
SETTLE = 0.25
"""Seconds `fetch` waits at most for a key message the server is known to be pushing right now."""
QUIET = 0.1
"""Seconds a `no_wait` fetch of a lane waits for its answer before going on without it."""
REDISCOVER = 1.0
"""Least seconds between two listings of a topic's subjects."""
_NEXT = "$JS.API.CONSUMER.MSG.NEXT"
_KEY_TOKEN = re.compile(r"[0-9a-f]{20}")


class _Key:
    __slots__ = ("consumer", "expect_until", "request")

    def __init__(self) -> None:
        self.consumer: str | None = None  # durable name once ensured
        self.request: str | None = None  # id of this process's lingering pull request
        self.expect_until = 0.0  # the server should be pushing a message of this key to us until then


class Puller:
    """Fetches, buffers and waits for the messages of one topic for one group (see the module doc)."""

    def __init__(
        self,
        nc: Client,
        js: JetStreamContext,
        names: Names,
        topic: str,
        group: str,
        *,
        visibility_timeout: float,
        ack_wait: float,
        clock: Callable[[], float],
        call: Call,
    ) -> None:
        self.topic = topic
        self.group = group
        self._nc = nc
        self._js = js
        self._names = names
        self._vis = visibility_timeout
        self._ack_wait = ack_wait  # the server's lease: the lease keeper renews it while we live
        self._clock = clock
        self._call = call
        self._inbox = nc.new_inbox()
        self._ids = itertools.count(1)
        self.lanes: dict[int, str | None] = {}  # lane -> durable name once ensured
        self.keys: dict[str, _Key] = {}
        self.buffer: list[Raw] = []
        self._requests: dict[str, tuple[str, int | str]] = {}  # request id -> ("l", lane) | ("k", kt)
        self._lingering: dict[int, list[tuple[str, float]]] = {}  # lane -> (request id, expiry), oldest first
        self._waiting = 0
        self._wake = anyio.Event()
        self.generation = 0  # +1 when lanes or keys appear: waiters must fetch, not only read the buffer
        self._discover_at = 0.0  # 0: list the subjects at the next fetch
        self._subs: list[Subscription] = []
        self._preparing = anyio.Lock()
        self._inflight: set[anyio.Event] = set()  # `no_wait` fetches waiting for their answer
        self._quiet: list[tuple[float, anyio.Event, Subscription]] = []  # unanswered: (until, done, inbox)
        self.closed = False

    async def start(self) -> None:
        """Subscribe to this puller's inbox and to the topic's bell."""
        self._subs.append(await self._nc.subscribe(self._inbox + ".*", cb=self._on_msg))
        self._subs.append(await self._nc.subscribe(self._names.bell_subject(self.topic), cb=self._on_bell))

    async def close(self) -> list[Raw]:
        """Stop receiving; returns the buffered messages (still leased: hand them back)."""
        self.closed = True
        for done in self._inflight:
            done.set()
        self._notify(topology=True)
        await self._close_quiet(every=True)
        for sub in self._subs:
            try:
                await sub.unsubscribe()
            except Exception:  # the connection may be gone already
                logger.debug("unsubscribe failed", exc_info=True)
        buffered, self.buffer = self.buffer, []
        return buffered

    def reconnected(self) -> None:
        """The connection came back: the server forgot our pull requests; list and ask again."""
        self._requests.clear()
        self._lingering.clear()
        for key in self.keys.values():
            key.request = None
        self._discover_at = 0.0
        for done in self._inflight:  # their requests may have been lost with the old connection
            done.set()
        self._notify(topology=True)

    # -- arrivals ------------------------------------------------------------------------------------

    def _notify(self, *, topology: bool = False) -> None:
        if topology:
            self.generation += 1
        self._wake.set()
        self._wake = anyio.Event()

    async def _on_msg(self, msg: Msg) -> None:
        status = status_of(msg)
        if status is not None or not msg.reply:
            self._request_ended(msg.subject[len(self._inbox) + 1 :], status)
            return
        info = parse_ack_subject(msg.reply)
        if info is None:
            return
        kt, lane = self._origin(msg.subject)
        self.buffer.append(Raw(msg, info, kt, lane, self._clock()))
        if kt is not None:
            key = self.keys.get(kt)
            if key is not None:
                key.expect_until = 0.0
                if key.request is not None:
                    self._requests.pop(key.request, None)
                    key.request = None
        else:
            lingering = self._lingering.get(lane)
            if lingering:  # the server serves one consumer's requests in order: our oldest one is done
                self._requests.pop(lingering.pop(0)[0], None)
        self._notify()

    def _origin(self, subject: str) -> tuple[str | None, int]:
        kind, _, token = subject.rpartition(".")
        if kind.endswith(".k"):
            return token, 0
        try:
            return None, int(token)
        except ValueError:
            return None, 0

    def _request_ended(self, rid: str, status: str | None) -> None:
        origin = self._requests.pop(rid, None)
        if origin is None or status == "100":  # unknown, or an idle heartbeat
            return
        kind, which = origin
        if kind == "l":
            lingering = self._lingering.get(int(which), [])
            lingering[:] = [entry for entry in lingering if entry[0] != rid]
            if self._waiting and not self.closed:
                self._notify()  # a waiter renews it
        else:
            key = self.keys.get(str(which))
            if key is not None and key.request == rid:
                key.request = None
                key.expect_until = 0.0
                if self._waiting and not self.closed:
                    self._notify()  # a waiter renews it

    async def _on_bell(self, msg: Msg) -> None:
        token = msg.data.decode(errors="replace")
        kind, rest = token[:1], token[1:]
        if kind == "l" and rest.lstrip("-").isdigit():
            lane = int(rest)
            if lane not in self.lanes:
                self.lanes[lane] = None
                self._notify(topology=True)
        elif kind == "k" and _KEY_TOKEN.fullmatch(rest):
            key = self.keys.get(rest)
            if key is None or key.request is None:
                self.keys.setdefault(rest, _Key())
                self._notify(topology=True)

    # -- asking --------------------------------------------------------------------------------------

    async def _pull(self, consumer: str, request: dict[str, object], reply: str) -> None:
        subject = f"{_NEXT}.{self._names.work_stream}.{consumer}"
        await self._nc.publish(subject, json.dumps(request).encode(), reply=reply)

    async def _ask_key(self, kt: str, key: _Key, seconds: float = LINGER) -> None:
        if key.consumer is None or key.request is not None or self.closed:
            return
        rid = f"k{next(self._ids)}"
        key.request = rid
        self._requests[rid] = ("k", kt)
        await self._pull(key.consumer, {"batch": 1, "expires": int(seconds * 1e9)}, f"{self._inbox}.{rid}")

    def key_released(self, kt: str, *, more: bool) -> None:
        """This process ended the lease of a key message; `more`: the key has further messages."""
        key = self.keys.get(kt)
        if key is not None and more:
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
            kt, lane = self._origin(subject)
            if kt is None:
                self.lanes.setdefault(lane, None)
            else:
                seen.add(kt)
                self.keys.setdefault(kt, _Key())
        if (len(self.lanes), len(self.keys)) != known:
            self._notify(topology=True)
        for kt, key in list(self.keys.items()):
            if kt not in seen and key.request is None and not key.expect_until:
                del self.keys[kt]  # empty: forget it until a bell names it again

    async def _prepare(self) -> None:
        """List the topic's subjects (at most once a second), ensure new consumers, ask for every key."""
        async with self._preparing:
            await self._prepare_now()

    async def _prepare_now(self) -> None:
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
        for kt, key in list(self.keys.items()):
            if key.request is None:
                await self._ask_key(kt, key)

    async def _ensure_key(self, kt: str, key: _Key, limiter: anyio.CapacityLimiter) -> None:
        async with limiter:
            info = await self._ensure(f"k{kt}", self._names.key_subject(self.topic, kt), max_ack_pending=1)
        key.consumer = info.name
        if not info.num_ack_pending and info.num_pending:  # free, with a message: the server sends it now
            key.expect_until = self._clock() + SETTLE

    # -- fetching ------------------------------------------------------------------------------------

    async def _fetch_lane(self, lane: int, batch: int) -> list[Raw]:
        """Ask lane `lane` for up to `batch` messages with a `no_wait` pull request; wait `QUIET` at most.

        nats-server 2.9 never answers a `no_wait` request queued behind another request that then took
        the message it counted on. So the wait is short, and the request's inbox stays open `LINGER`
        seconds more: what still comes is leased to this process and goes to `buffer`.
        """
        consumer = self.lanes[lane]
        assert consumer is not None
        got: list[Raw] = []
        done = anyio.Event()
        late = False
        clock = self._clock

        async def on_msg(msg: Msg) -> None:
            if status_of(msg) is not None or not msg.reply:
                done.set()
                return
            info = parse_ack_subject(msg.reply)
            if info is None:
                return
            raw = Raw(msg, info, None, lane, clock())
            if late:
                self.buffer.append(raw)
                self._notify()
                return
            got.append(raw)
            if len(got) >= batch:
                done.set()

        await self._close_quiet()
        inbox = self._nc.new_inbox()
        sub = await self._nc.subscribe(inbox, cb=on_msg)
        self._inflight.add(done)
        try:
            await self._pull(consumer, {"batch": batch, "no_wait": True}, inbox)
            with anyio.move_on_after(QUIET) as scope:
                await done.wait()
            if scope.cancelled_caught:
                logger.debug("lane %s of %r: no full answer yet, %d so far", lane, self.topic, len(got))
        except BaseException:
            self.buffer += got  # cancelled: what came is leased to us, keep it for the next consume
            raise
        finally:
            late = True
            self._inflight.discard(done)
            if done.is_set():
                with anyio.CancelScope(shield=True):
                    await sub.unsubscribe()
            else:
                self._quiet.append((clock() + LINGER, done, sub))
        return got

    async def _close_quiet(self, *, every: bool = False) -> None:
        """Unsubscribe the inboxes of `no_wait` requests answered since, or older than `LINGER`."""
        now = self._clock()
        keep: list[tuple[float, anyio.Event, Subscription]] = []
        for entry in self._quiet:
            until, done, sub = entry
            if every or done.is_set() or until <= now:
                try:
                    await sub.unsubscribe()
                except Exception:  # the connection may be gone already
                    logger.debug("unsubscribe failed", exc_info=True)
            else:
                keep.append(entry)
        self._quiet = keep

    async def _settle(self) -> None:
        now = self._clock()
        until = max((key.expect_until for key in self.keys.values()), default=0.0)
        while until > now and not self.closed:
            with anyio.move_on_after(until - now):
                await self._wake.wait()
            now = self._clock()
            until = max((key.expect_until for key in self.keys.values()), default=0.0)

    async def fetch(self, n: int) -> list[Raw]:
        """Lease up to `n` messages now: buffered and fetched, highest lane first, then stream order."""
        await self._prepare()
        await self._settle()
        chosen: list[Raw] = []
        buffer = self.buffer
        try:
            for lane in sorted(set(self.lanes) | {raw.priority for raw in buffer}, reverse=True):
                need = n - len(chosen)
                if need <= 0:
                    break
                fetched: list[Raw] = []
                if self.lanes.get(lane) and sum(raw.priority == lane for raw in buffer) < need:
                    fetched = await self._fetch_lane(lane, need)
                here = [raw for raw in buffer if raw.priority == lane] + fetched
                buffer[:] = [raw for raw in buffer if raw.priority != lane]
                here.sort(key=Raw.order)
                chosen += here[:need]
                buffer += here[need:]
        except BaseException:
            buffer += chosen  # cancelled: nothing is handed out, all of it stays leased to us
            raise
        return chosen

    def take_buffered(self, n: int) -> list[Raw]:
        """Up to `n` buffered messages, highest lane first."""
        buffer = self.buffer
        if not buffer:
            return []
        buffer.sort(key=Raw.order)
        chosen = buffer[:n]
        del buffer[:n]
        return chosen

    # -- waiting -------------------------------------------------------------------------------------

    async def _linger(self, seconds: float) -> None:
        """Make sure every lane has a lingering pull request per waiting consumer."""
        seconds = max(min(seconds, LINGER), 0.01)
        now = self._clock()
        for lane, consumer in self.lanes.items():
            if consumer is None:
                continue
            lingering = self._lingering.setdefault(lane, [])
            while lingering and lingering[0][1] < now:  # expired long ago: its status got lost
                self._requests.pop(lingering.pop(0)[0], None)
            while len(lingering) < self._waiting:
                rid = f"l{next(self._ids)}"
                self._requests[rid] = ("l", lane)
                lingering.append((rid, now + seconds + 1.0))
                await self._pull(
                    consumer, {"batch": 1, "expires": int(seconds * 1e9)}, f"{self._inbox}.{rid}"
                )
        for kt, key in list(self.keys.items()):
            await self._ask_key(kt, key, seconds)

    async def wait(self, deadline: float) -> bool:
        """Wait until something arrives or the topology changes (True), or until `deadline` (False).

        `deadline` is on the event loop's clock. Raises `anyio.ClosedResourceError` once closed.
        """
        if self.closed:
            raise anyio.ClosedResourceError
        if self.buffer:
            return True
        self._waiting += 1
        try:
            wake = self._wake
            await self._linger(deadline - anyio.current_time())
            with anyio.move_on_after(deadline - anyio.current_time()):
                await wake.wait()
                return True
            return False
        finally:
            self._waiting -= 1
            if self.closed:
                raise anyio.ClosedResourceError
