"""`Bell`: the consumers of one topic in this process that wait for news, one listening for all of them."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ("Bell",)


class Bell:
    """Waiting consumers of one topic: one *listener* blocks on the broker, the *followers* on it.

    Whatever makes messages ready (publish, nack, replay, a key released, delayed messages moved) rings
    the topic's bell stream with how many became ready. The listener blocks on that stream (one connection
    per topic and process, however many tasks wait); when it rings, the listener wakes that many
    followers and goes back to take messages itself. A consumer that leaves (with messages or without)
    calls `pass_on`, so that a follower takes over listening; a follower woken and then cancelled passes
    its wakeup on.
    """

    __slots__ = ("_followers", "_scope", "listening")

    def __init__(self) -> None:
        self._followers: deque[anyio.Event] = deque()
        self._scope: anyio.CancelScope | None = None
        self.listening = False

    async def listen(self, read: Callable[[float], Awaitable[int]], seconds: float) -> None:
        """Listen for up to `seconds`; `read` blocks on the broker, returning messages rung or -1.

        Returns early (without raising) when `close` is called.
        """
        self.listening = True
        rung = -1
        try:
            with anyio.CancelScope() as self._scope:
                rung = await read(seconds)
        finally:
            self._scope = None
            self.listening = False
        if rung > 0:
            self.notify(rung)

    async def follow(self, seconds: float) -> bool:
        """Wait up to `seconds` for the listener's news; `True` if woken."""
        event = anyio.Event()
        self._followers.append(event)
        try:
            with anyio.move_on_after(seconds):
                await event.wait()
        except BaseException:
            if event.is_set():
                self.notify(1)  # woken, then cancelled: pass the wakeup on
            raise
        finally:
            if not event.is_set():
                self._followers.remove(event)
        return event.is_set()

    def notify(self, n: int) -> None:
        """Wake up to `n` followers, longest waiting first."""
        followers = self._followers
        while n > 0 and followers:
            followers.popleft().set()
            n -= 1

    def pass_on(self) -> None:
        """A consumer leaves: if nobody listens, wake a follower to take over."""
        if not self.listening:
            self.notify(1)

    def close(self) -> None:
        """Stop the listener and wake every follower (the queue is closing)."""
        if self._scope is not None:
            self._scope.cancel()
        self.notify(len(self._followers))
