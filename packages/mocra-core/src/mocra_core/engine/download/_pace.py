"""`Pace`: the download stage's adaptive pace, built from the settings (`crawl.autoscale`, autothrottle).

`AutoscaledConcurrency` bounds the download workers that work at once (`DomainFeeder`); `AutoThrottle`
sets each host's delay in the stage's limiter from the host's latency (`DownloadStage`). Both are values
passed down; `run` samples, rescales and shares their state in the stage runner's task group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from ...download import (
    AutoscaledConcurrency,
    AutoscaleSettings,
    AutoThrottle,
    LocalPaceStore,
    SharedPaceStore,
)

if TYPE_CHECKING:
    from anyio.abc import TaskStatus

    from ...config import Settings
    from ...coordination import Coordination

__all__ = ("Pace",)


@dataclass(frozen=True)
class Pace:
    """The adaptive pace of a run's download stage; a part left None is off.

    Attributes:
        autoscale: How many download workers work at once (`crawl.autoscale`).
        throttle: Each host's delay, following its latency (`download.autothrottle`).
    """

    autoscale: AutoscaledConcurrency | None = None
    throttle: AutoThrottle | None = None

    @classmethod
    def from_settings(cls, settings: Settings, coordination: Coordination, *, shared: bool) -> Pace:
        """The parts `settings` turn on; a `shared` job's hosts' delays meet in `coordination`.

        Example:
            >>> from mocra_core.config import Settings
            >>> from mocra_core.coordination import LocalCoordination
            >>> on = Settings.from_mapping({"crawl": {"autoscale": True, "concurrency": 2}})
            >>> pace = Pace.from_settings(on, LocalCoordination(), shared=False)
            >>> pace.autoscale, pace.throttle
            (<AutoscaledConcurrency desired=2 running=0 [2, 2]>, None)
        """
        crawl, throttling = settings.crawl, settings.download.autothrottle
        autoscale = None
        if crawl.autoscale:
            minimum = min(crawl.min_concurrency, crawl.concurrency)
            autoscale = AutoscaledConcurrency(
                AutoscaleSettings(enabled=True, min_concurrency=minimum), max_concurrency=crawl.concurrency
            )
        throttle = None
        if throttling.enabled:
            store = SharedPaceStore(coordination) if shared else LocalPaceStore()
            throttle = AutoThrottle(throttling, min_delay=crawl.per_domain_delay, store=store)
        return cls(autoscale, throttle)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Sample and rescale (autoscale), share the hosts' delays (autothrottle), until cancelled."""
        async with anyio.create_task_group() as tg:
            if self.autoscale is not None:
                await tg.start(self.autoscale.run)
            if self.throttle is not None:
                await tg.start(self.throttle.run)
            task_status.started()

    def describe(self) -> str:
        """A line for the log at the end of a run ('' when both parts are off)."""
        said = []
        if self.autoscale is not None:
            a = self.autoscale
            state = a.state()
            said.append(
                f"autoscale: {state.desired} requests in flight at most, within [{a.min}, {a.max}], "
                f"after {state.scaled} changes (last: {state.reason})"
            )
        if self.throttle is not None:
            said.append(f"autothrottle: {self.throttle.describe()}")
        return "; ".join(said)
