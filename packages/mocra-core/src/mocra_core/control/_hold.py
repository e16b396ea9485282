"""`Hold`: one worker's pause gate — a flag its stages check before they start work, free while running."""

from __future__ import annotations

import anyio

__all__ = ("Hold",)


class Hold:
    """Whether this worker may start new downloads and generations now (`held`: it may not).

    The stages read `held` (an attribute, no await) before each start and only when it is set wait in
    `wait`; so a job that is not paused pays one attribute check per start. `release` ends the hold for
    good (the run is draining: a paused worker must not wait while it stops).

    Example:
        >>> import anyio
        >>> async def main() -> list[bool]:
        ...     hold = Hold()
        ...     seen = [hold.held]
        ...     hold.pause()
        ...     seen.append(hold.held)
        ...     async with anyio.create_task_group() as tg:
        ...         tg.start_soon(hold.wait)
        ...         hold.resume()
        ...     return [*seen, hold.held]
        >>> anyio.run(main)
        [False, True, False]
    """

    __slots__ = ("_released", "_resumed", "held")

    def __init__(self) -> None:
        self.held = False
        self._released = False
        self._resumed: anyio.Event | None = None  # made when paused (an Event needs a running loop)

    def pause(self) -> None:
        """Hold: starts wait until `resume` (nothing once released)."""
        if self.held or self._released:
            return
        self.held = True
        self._resumed = anyio.Event()

    def resume(self) -> None:
        """Let the waiting starts go on."""
        self.held = False
        if self._resumed is not None:
            self._resumed.set()

    def release(self) -> None:
        """Resume, and ignore any later `pause` (the run drains)."""
        self._released = True
        self.resume()

    async def wait(self) -> None:
        """Return once not held (at once when not held)."""
        while self.held and self._resumed is not None:
            await self._resumed.wait()
