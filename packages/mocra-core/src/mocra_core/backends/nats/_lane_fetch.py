"""`LaneFetch`: a `Puller`'s `no_wait` pull requests to its lanes; their inboxes stay open for late answers.

nats-server 2.9 never answers a `no_wait` request queued behind another request that then took the
message it counted on. So a fetch waits `QUIET` seconds at most for its answer, and its inbox stays open
`LINGER` seconds more: what still comes is leased to this process and goes to the puller's buffer.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from ._wire import Raw, parse_ack_subject, status_of

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from nats.aio.client import Client
    from nats.aio.msg import Msg
    from nats.aio.subscription import Subscription

__all__ = ("QUIET", "LaneFetch")

logger = logging.getLogger(__name__)

QUIET = 0.1
"""Seconds a `no_wait` fetch of a lane waits for its answer before going on without it."""


class LaneFetch:
    """Fetches from one lane's consumer with `no_wait` pull requests (see the module doc).

    Args:
        nc: The connection.
        topic: The topic (for log lines).
        pull: Sends a pull request `(consumer, request, reply subject)`.
        keep: Takes messages leased to this process that no fetch returns (`notify`: wake the waiters).
        linger: Seconds an unanswered request's inbox stays open.
        clock: Monotonic seconds.
    """

    __slots__ = ("_clock", "_inflight", "_keep", "_linger", "_nc", "_pull", "_quiet", "_topic")

    def __init__(
        self,
        nc: Client,
        topic: str,
        pull: Callable[[str, dict[str, object], str], Awaitable[None]],
        keep: Callable[[list[Raw], bool], None],
        *,
        linger: float,
        clock: Callable[[], float],
    ) -> None:
        self._nc = nc
        self._topic = topic
        self._pull = pull
        self._keep = keep
        self._linger = linger
        self._clock = clock
        self._inflight: set[anyio.Event] = set()  # `no_wait` fetches waiting for their answer
        self._quiet: list[tuple[float, anyio.Event, Subscription]] = []  # unanswered: (until, done, inbox)

    def end_waits(self) -> None:
        """Let every fetch waiting for its answer go on (closing, or their requests were lost)."""
        for done in self._inflight:
            done.set()

    async def fetch(self, lane: int, consumer: str, batch: int) -> list[Raw]:
        """Ask `consumer` (of lane `lane`) for up to `batch` messages, `no_wait`; waits `QUIET` at most."""
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
                self._keep([raw], True)
                return
            got.append(raw)
            if len(got) >= batch:
                done.set()

        await self.close_quiet()
        inbox = self._nc.new_inbox()
        sub = await self._nc.subscribe(inbox, cb=on_msg)
        self._inflight.add(done)
        try:
            await self._pull(consumer, {"batch": batch, "no_wait": True}, inbox)
            with anyio.move_on_after(QUIET) as scope:
                await done.wait()
            if scope.cancelled_caught:
                logger.debug("lane %s of %r: no full answer yet, %d so far", lane, self._topic, len(got))
        except BaseException:
            self._keep(got, False)  # cancelled: what came is leased to us, keep it for the next consume
            raise
        finally:
            late = True
            self._inflight.discard(done)
            if done.is_set():
                with anyio.CancelScope(shield=True):
                    await sub.unsubscribe()
            else:
                self._quiet.append((clock() + self._linger, done, sub))
        return got

    async def close_quiet(self, *, every: bool = False) -> None:
        """Unsubscribe the inboxes of `no_wait` requests answered since, or older than `linger`."""
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
