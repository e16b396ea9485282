"""`IdleWorkers`: the download workers waiting for a request, woken one by one, oldest first."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ("IdleWorkers",)


class IdleWorkers:
    """Where a worker with nothing to do waits until `wake` picks it.

    Args:
        on_wait: Called as a worker starts waiting (the feeder then decides its next lease again).
    """

    __slots__ = ("_on_wait", "_waiters", "waiting")

    def __init__(self, on_wait: Callable[[], None]) -> None:
        self._on_wait = on_wait
        self._waiters: deque[anyio.Event] = deque()
        self.waiting = 0
        """Workers waiting now."""

    async def wait(self) -> None:
        """Wait until woken; cancelled after a wake-up, the wake-up goes to the next worker."""
        event = anyio.Event()
        self._waiters.append(event)
        self.waiting += 1
        self._on_wait()
        try:
            await event.wait()
        except BaseException:
            if event.is_set():
                self.wake(1)  # pass the wake-up on
            else:
                self._waiters.remove(event)
            raise
        finally:
            self.waiting -= 1

    def wake(self, count: int) -> None:
        """Wake up to `count` waiting workers, the longest waiting first."""
        while count > 0 and self._waiters:
            self._waiters.popleft().set()
            count -= 1

    def wake_all(self) -> None:
        """Wake every waiting worker."""
        self.wake(len(self._waiters))
