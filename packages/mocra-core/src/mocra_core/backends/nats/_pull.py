"""`Puller`: how one `(topic, group)` of a `NatsJetStreamQueue` gets messages out of JetStream.

Lanes are fetched on demand (`no_wait` pull requests, highest lane first); while a `consume` waits, each
lane carries one lingering pull request (`expires` at most `LINGER`) per waiting consumer. Each active
partition key gets one lingering pull request of this process (batch 1) on its consumer
(`max_ack_pending=1`) at every `fetch` and while consumers wait, so the server pushes the key's next
message as soon as the key is free. What arrives that way is kept in `buffer`: it is already leased to
this process and handed out by its next `consume`, merged by lane and stream order. A request outlives
the call that made it by at most `LINGER` seconds, which bounds how long a process that stopped
consuming can still catch messages. A `no_wait` request left unanswered for `QUIET` seconds (nats-server
2.9 may never answer one, see `LaneFetch`) is given up, and what it still brings goes to `buffer`.
Which lanes and keys the topic has, and their durable consumers: `Topology` (`_topology.py`).
"""

from __future__ import annotations

import itertools
import json
import logging
from typing import TYPE_CHECKING

import anyio

from ._lane_fetch import LaneFetch
from ._topology import SETTLE, Topology, origin_of
from ._wire import Raw, parse_ack_subject, status_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from nats.aio.client import Client
    from nats.aio.msg import Msg
    from nats.aio.subscription import Subscription
    from nats.js import JetStreamContext

    from ._topology import Key
    from ._wire import Call, Names

__all__ = ("Puller",)

logger = logging.getLogger(__name__)

LINGER = 1.0
"""Seconds a waiting consumer's pull request lingers on a lane before it is renewed."""
_NEXT = "$JS.API.CONSUMER.MSG.NEXT"


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
        self._names = names
        self._clock = clock
        self._inbox = nc.new_inbox()
        self._ids = itertools.count(1)
        self.topology = Topology(
            js,
            names,
            topic,
            group,
            visibility_timeout=visibility_timeout,
            ack_wait=ack_wait,
            clock=clock,
            call=call,
            changed=lambda: self._notify(topology=True),
        )
        self.lanes = self.topology.lanes  # lane -> durable name once ensured
        self.keys = self.topology.keys
        self.buffer: list[Raw] = []
        self._requests: dict[str, tuple[str, int | str]] = {}  # request id -> ("l", lane) | ("k", kt)
        self._lingering: dict[int, list[tuple[str, float]]] = {}  # lane -> (request id, expiry), oldest first
        self._waiting = 0
        self._wake = anyio.Event()
        self.generation = 0  # +1 when lanes or keys appear: waiters must fetch, not only read the buffer
        self._subs: list[Subscription] = []
        self._preparing = anyio.Lock()
        pull = lambda *request: self._pull(*request)  # noqa: E731 (looked up per call: tests replace it)
        self._lane_fetch = LaneFetch(nc, topic, pull, self._keep, linger=LINGER, clock=clock)
        self.closed = False

    async def start(self) -> None:
        """Subscribe to this puller's inbox and to the topic's bell."""
        self._subs.append(await self._nc.subscribe(self._inbox + ".*", cb=self._on_msg))
        self._subs.append(await self._nc.subscribe(self._names.bell_subject(self.topic), cb=self._on_bell))

    async def close(self) -> list[Raw]:
        """Stop receiving; returns the buffered messages (still leased: hand them back)."""
        self.closed = True
        self._lane_fetch.end_waits()
        self._notify(topology=True)
        await self._lane_fetch.close_quiet(every=True)
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
        self.topology.rediscover()
        self._lane_fetch.end_waits()  # their requests may have been lost with the old connection
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
        kt, lane = origin_of(msg.subject)
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

    def _keep(self, raws: list[Raw], notify: bool) -> None:
        self.buffer += raws
        if notify:
            self._notify()

    async def _on_bell(self, msg: Msg) -> None:
        self.topology.heard(msg.data.decode(errors="replace"))

    # -- asking --------------------------------------------------------------------------------------

    async def _pull(self, consumer: str, request: dict[str, object], reply: str) -> None:
        subject = f"{_NEXT}.{self._names.work_stream}.{consumer}"
        await self._nc.publish(subject, json.dumps(request).encode(), reply=reply)

    async def _ask_key(self, kt: str, key: Key, seconds: float = LINGER) -> None:
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

    async def _prepare(self) -> None:
        """List the topic's subjects (at most once a second), ensure new consumers, ask for every key."""
        async with self._preparing:
            await self._prepare_now()

    async def _prepare_now(self) -> None:
        await self.topology.prepare()
        for kt, key in list(self.keys.items()):
            if key.request is None:
                await self._ask_key(kt, key)

    # -- fetching ------------------------------------------------------------------------------------

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
                    consumer = self.lanes[lane]
                    assert consumer is not None
                    fetched = await self._lane_fetch.fetch(lane, consumer, need)
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
