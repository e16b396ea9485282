"""`JobControl`: pause, resume and stop a whole job through its coordination store (every worker follows).

Two keys of the job's coordination store hold what the operator asked:

- `control/state` (`CONTROL_KEY`): `running` or `paused`. A worker that starts while the job is paused
  starts paused (a new worker joining a held job does not crawl).
- `control/stops` (`STOPS_KEY`): a counter bumped by every stop. Each run reads it when it starts; a
  higher value later means "stop" for that run. A run started after the stop reads the new value and
  runs: a stopped job is run again as any other (what was not fetched is still queued).

Every worker polls both (`watch`, every `POLL_INTERVAL` seconds: state first, then stops, so a stop that
also cleared a pause is never seen as a resume alone). A write made in the worker's own process acts on
its `Hold` at once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from .._errors import BackendError
from ..coordination import CoordinationError

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..coordination import Coordination
    from ._hold import Hold
    from ._snapshot import ControlState

__all__ = ("CONTROL_KEY", "POLL_INTERVAL", "STOPS_KEY", "JobControl")

logger = logging.getLogger(__name__)

CONTROL_KEY = "control/state"
"""The coordination key of a job's hold flag: `running` or `paused`."""
STOPS_KEY = "control/stops"
"""The coordination counter of a job's stops (see the module docstring)."""
_OUT_OF_REACH = (BackendError, CoordinationError, TimeoutError)
POLL_INTERVAL = 0.5
"""Seconds between two looks of a worker at its job's control keys."""


class JobControl:
    """What the operator asked of one job, read and written in its coordination store.

    Args:
        coordination: The job's coordination store.
        hold: This worker's pause gate (a run's), or None for a reader (an admin process, a test).
        on_stop: Called once when this run is told to stop (the engine ends its run with `stopped`).

    Example:
        >>> import anyio
        >>> from mocra_core.control import Hold
        >>> from mocra_core.coordination import LocalCoordination
        >>> async def main() -> list[str]:
        ...     async with LocalCoordination() as store:
        ...         hold = Hold()
        ...         control = JobControl(store, hold)
        ...         await control.start()
        ...         said = [await control.pause(), str(hold.held)]
        ...         said += [await control.resume(), str(hold.held), await control.stop()]
        ...         return [*said, str(control.stopping)]
        >>> anyio.run(main)
        ['paused', 'True', 'running', 'False', 'stopping', 'True']
    """

    def __init__(
        self,
        coordination: Coordination,
        hold: Hold | None = None,
        *,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        self._coordination = coordination
        self._hold = hold
        self._on_stop = on_stop
        self._baseline: int | None = None  # the stop counter when this run started
        self._stopping = False

    @property
    def stopping(self) -> bool:
        """Whether this run was told to stop."""
        return self._stopping

    async def start(self) -> None:
        """Begin following the job: note its stop counter, and hold if the job is paused."""
        self._baseline = await self._stops()
        if await self._state() == "paused" and self._hold is not None:
            logger.info("the job is paused: this worker waits for `resume`")
            self._hold.pause()

    async def state(self) -> ControlState:
        """What the operator asked of the job: `stopping` once this run saw a stop, else the stored flag."""
        return "stopping" if self._stopping else await self._state()

    async def pause(self) -> ControlState:
        """Hold the job: its workers start no download or generation until `resume`."""
        await self._coordination.set(CONTROL_KEY, b"paused")
        if self._hold is not None:
            self._hold.pause()
        return "paused"

    async def resume(self) -> ControlState:
        """Let the job go on."""
        await self._coordination.set(CONTROL_KEY, b"running")
        if self._hold is not None:
            self._hold.resume()
        return "running"

    async def stop(self) -> ControlState:
        """Stop the job's runs: each drains and returns `stopped`; a later run of the job runs again."""
        await self._coordination.incr(STOPS_KEY)
        await self._coordination.set(CONTROL_KEY, b"running")  # after the bump: see `watch`
        if self._hold is not None:
            self._stopped()
        return "stopping"

    async def watch(self, interval: float = POLL_INTERVAL) -> None:
        """Follow the job's keys every `interval` seconds until told to stop (or cancelled).

        A look that fails (the store out of reach) is logged; the last state holds until the next one.
        """
        hold = self._hold
        while not self._stopping:
            await anyio.sleep(interval)
            try:
                state = await self._state()
                stops = await self._stops()
            except _OUT_OF_REACH as exc:
                logger.debug("cannot read the job's control keys, next time: %s", exc)
                continue
            if self._baseline is not None and stops > self._baseline:
                logger.warning("stopped by an operator: draining")
                self._stopped()
            elif hold is not None and state == "paused" and not hold.held:
                logger.warning("paused by an operator: no new downloads until resumed")
                hold.pause()
            elif hold is not None and state == "running" and hold.held:
                logger.warning("resumed by an operator")
                hold.resume()

    def _stopped(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        if self._hold is not None:
            self._hold.release()
        if self._on_stop is not None:
            self._on_stop()

    async def _state(self) -> ControlState:
        return "paused" if await self._coordination.get(CONTROL_KEY) == b"paused" else "running"

    async def _stops(self) -> int:
        return int(await self._coordination.get(STOPS_KEY) or 0)
