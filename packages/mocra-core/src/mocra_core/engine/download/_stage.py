"""`DownloadStage`: request queue → (login) → domain slot → downloader → parse worker or response queue.

A worker prepares a request (robots.txt, middleware, login), then takes its domain's slot without waiting:
a request whose domain cannot start one now is parked by the `DomainFeeder` and the worker takes another,
so one slow, spaced or blocked domain never holds the workers of the others (no head-of-line blocking).

Adaptive pace (`Pace`): with autoscale the feeder's workers hold a slot of the `AutoscaledConcurrency`;
with autothrottle each host's delay in the limiter is the `AutoThrottle`'s: its start delay when the host
is first seen, then moved by every response's latency (after the limiter's feedback) and every download
error; robots.txt's `Crawl-delay` is a floor the throttle never goes under.
"""

from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import msgspec

from ..._errors import DownloadError, HopRefused
from ...http import Routed
from ...http._url import host_of
from ...modules import LoginFailed
from ...topics import REQUESTS
from .._transient import TRANSIENT, retry_later
from ._domain_feeder import DomainFeeder, DownloadSteps
from ._hops import HopGuard
from ._queued import queue_response

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ...control import Hold
    from ...download import DomainLimiter, Downloader, GatedLimiter, RetryPolicy, RobotsPolicy, ShareLimiter
    from ...download._permit import Permit
    from ...http import Request, Response, Routing
    from ...middleware import MiddlewareChain
    from ...modules import CompiledModule
    from ...observe import Stats
    from ...queue import Delivery, QueueBackend
    from .._budget import PageBudget
    from .._fan_in import FanIn
    from .._module_table import ModuleTable
    from .._outage import Outage
    from .._runbook import RunBook
    from .._unparsed import UnparsedMarks
    from ._login import LoginManager
    from ._pace import Pace

__all__ = ("DownloadStage", "Politeness")

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Politeness:
    """How the download stage treats servers: per-domain limits (job-wide when gated), robots.txt, retries."""

    limiter: DomainLimiter | GatedLimiter | ShareLimiter
    retry: RetryPolicy
    robots: RobotsPolicy | None = None
    hops: HopGuard = HopGuard(None, None)  # redirect hops through robots.txt and the seen set
    visibility_timeout: float = 300.0  # the queue's: a request waits parked for its domain a quarter at most


class _Prepared:
    """A request ready for its domain's slot, and what its download needs."""

    __slots__ = ("domain", "downloader", "generation", "module", "request", "routing")

    def __init__(
        self,
        request: Request,
        routing: Routing,
        module: CompiledModule,
        downloader: Downloader,
        generation: int,
        domain: str,
    ) -> None:
        self.request = request
        self.routing = routing
        self.module = module
        self.downloader = downloader
        self.generation = generation
        self.domain = domain


class DownloadStage:
    """Runs `concurrency` workers that each lease one request at a time and hand on its response.

    A worker takes a request whose domain can start one now, or prepares a new one; a request whose domain
    is busy, spaced or blocked waits parked (`DomainFeeder`), never a worker. A request is acknowledged only
    after its response is published, so a crash loses nothing. With
    `direct` (the parse stage's `hand`), a response goes straight to a parse worker of this process (the
    download worker waits for one to be free) as the request's delivery: the request stays leased until
    its response is parsed (a crash downloads it again). Failures (network errors, timeouts, retryable
    statuses) go through the retry policy: back to the queue after a
    backoff (`nack`), or to the dead-letter queue with the reason once retries are exhausted.
    """

    def __init__(
        self,
        queue: QueueBackend,
        modules: ModuleTable,
        runbook: RunBook,
        fan_in: FanIn,
        logins: LoginManager,
        politeness: Politeness,
        chain: MiddlewareChain,
        stats: Stats,
        *,
        budget: PageBudget | None = None,
        direct: Callable[[Delivery], Awaitable[bool]] | None = None,
        unparsed: UnparsedMarks | None = None,
        outage: Outage | None = None,
        pace: Pace | None = None,
        hold: Hold | None = None,
    ) -> None:
        self._queue = queue
        self._modules = modules
        self._runbook = runbook
        self._fan_in = fan_in
        self._logins = logins
        self._limiter = politeness.limiter
        self._retry = politeness.retry
        self._robots = politeness.robots
        self._hops = politeness.hops
        self._chain = chain
        self._stats = stats
        self._budget = budget
        self._direct = direct
        self._unparsed = unparsed  # with `direct`: counts the attempts handed back before parse
        self._handing: set[int] = set()  # leases being handed to a parse worker (it may have them)
        self._stopping = False
        self._outage = outage
        self._feeder: DomainFeeder[_Prepared] = DomainFeeder(
            queue,
            REQUESTS,
            "download",
            politeness.limiter,
            outage=outage,
            autoscale=None if pace is None else pace.autoscale,
            visibility_timeout=politeness.visibility_timeout,
            hold=hold,
        )
        self._delays_checked: set[str] = set()
        self._throttle = None if pace is None else pace.throttle
        self._paced: set[str] = set()  # hosts whose delay the throttle has set
        if self._throttle is not None:
            self._throttle.on_change = self._set_delay

    def stop(self) -> None:
        """Take no new requests; workers return after their current one (parked ones go back to the queue)."""
        self._stopping = True
        self._feeder.stop()

    def halt(self) -> None:
        """Take no new requests, now (a lease in progress is cancelled); workers finish their current one."""
        self._stopping = True
        self._feeder.halt()

    async def run(self, concurrency: int) -> None:
        """Run the workers until `stop` is called (each finishes the request it holds)."""
        steps = DownloadSteps(self._prepare, self._fetch, self._hand_back, self._gate_failed)
        await self._feeder.run(concurrency, steps)

    async def _prepare(self, delivery: Delivery) -> tuple[str, _Prepared] | None:
        """All before the domain's slot; its domain and what `_fetch` needs, or None once it is finished."""
        routed: Routed = delivery.payload  # type: ignore[assignment]
        if self._budget is not None and self._budget.spent:
            await self._budget_spent(delivery)
            return None
        module = self._modules.find(routed.routing.node, routed.routing.generation)
        if module is None:
            await self._modules.foreign(delivery, routed.routing.node, routed.routing.generation)
            return None
        try:
            prepared = await self._ready(delivery, routed, module)
        except anyio.get_cancelled_exc_class():
            await self._cancelled(delivery)
            raise
        except Exception as exc:
            await self._failed(delivery, routed, module, exc)
            return None
        return None if prepared is None else (prepared.domain, prepared)

    async def _fetch(self, delivery: Delivery, prepared: _Prepared, permit: Permit) -> None:
        try:
            await self._download(delivery, prepared, permit)
        except anyio.get_cancelled_exc_class():
            await self._cancelled(delivery)
            raise
        except Exception as exc:
            await self._failed(delivery, Routed(prepared.request, prepared.routing), prepared.module, exc)

    async def _cancelled(self, delivery: Delivery) -> None:
        with anyio.move_on_after(5, shield=True):
            if delivery._lease in self._handing:  # a parse worker may have it: no "unparsed" mark
                await self._queue.nack(delivery, delay=0, reason="worker cancelled")
            else:
                await self._hand_back(delivery, 0, "worker cancelled")

    async def _failed(
        self, delivery: Delivery, routed: Routed, module: CompiledModule, exc: Exception
    ) -> None:
        if isinstance(exc, TRANSIENT):  # the politeness gate, seen set or broker is out of reach for now
            if self._unparsed is not None:
                await self._unparsed.note(delivery)
            await retry_later(self._queue, delivery, exc, self._stats, self._outage)
            return
        # a bug in a middleware or a downloader: keep the request, keep crawling
        self._stats.error("download")
        logger.error("download of %s failed unexpectedly", routed.request.url, exc_info=exc)
        await self._dead_letter(delivery, module, routed.routing, _describe(exc))

    async def _gate_failed(self, delivery: Delivery, exc: Exception) -> None:
        routed: Routed = delivery.payload  # type: ignore[assignment]
        module = self._modules.find(routed.routing.node, routed.routing.generation)
        assert module is not None  # it was found when the request was prepared
        await self._failed(delivery, routed, module, exc)

    async def _ready(self, delivery: Delivery, routed: Routed, module: CompiledModule) -> _Prepared | None:
        """Robots.txt, middleware, login: the request ready for its domain's slot, or None once finished.

        Middleware sees the user's request only; its routing stays beside it, unchanged.
        """
        request, routing = routed.request, routed.routing
        if await self._runbook.is_stopped(routing.run):
            await self._drop(delivery, module, routing, "stopped")
            return None
        if self._chain.has_download or module.login is not None:  # the queued request stays as it was
            request = request.replace(
                headers=dict(request.headers), cookies=dict(request.cookies), meta=dict(request.meta)
            )
        if self._chain.has_download:
            changed = await self._chain.before_request(request)
            if changed is None:
                await self._drop(delivery, module, routing, "middleware")
                return None
            request = changed
        if self._robots is not None and not await self._robots.allowed(request):
            logger.debug("robots.txt forbids %s", request.url)
            await self._drop(delivery, module, routing, "robots")
            return None
        downloader = self._logins.downloader_for(module, request, routing.account)
        if downloader is None:
            await self._dead_letter(delivery, module, routing, f"no downloader named {request.downloader!r}")
            return None
        try:
            generation = await self._logins.prepare(module, request, routing.account, downloader)
        except LoginFailed as exc:
            await self._dead_letter(delivery, module, routing, str(exc))
            return None
        domain = host_of(request.url)
        if self._throttle is not None and domain not in self._paced:
            self._paced.add(domain)
            self._set_delay(domain, self._throttle.delay(domain))
        if self._robots is not None and domain not in self._delays_checked:
            self._apply_crawl_delay(domain, request.url)
        return _Prepared(request, routing, module, downloader, generation, domain)

    async def _download(self, delivery: Delivery, prepared: _Prepared, permit: Permit) -> None:
        request, routing, module = prepared.request, prepared.routing, prepared.module
        downloader, generation, domain = prepared.downloader, prepared.generation, prepared.domain
        if self._budget is not None and not await self._budget.take():
            return await self._budget_spent(delivery)
        self._stats.requests += 1
        started = time.monotonic()
        self._stats.in_flight += 1
        try:
            try:
                async with permit:
                    response = await self._hops.download(downloader, request, routing, module)
            finally:
                self._stats.in_flight -= 1
        except DownloadError as exc:
            self._stats.bytes += exc.received  # a body cut at the cap was received too
            if isinstance(exc, HopRefused):
                if exc.reason == "offsite":
                    self._stats.offsite(exc.url)
                    return await self._drop(delivery, module, routing, None)
                return await self._drop(delivery, module, routing, exc.reason)
            if self._throttle is not None:  # an error can lengthen the host's delay, never shorten it
                self._throttle.observe(domain, time.monotonic() - started, None)
            return await self._retry_or_dead_letter(delivery, module, prepared, error=exc)
        response.routing = routing
        retry_after = response.headers.get("retry-after")
        if delivery.attempt == 1 or response.status < 400:  # a URL failing again backs off alone (nack)
            self._limiter.feedback(domain, response.status, retry_after)
        if self._throttle is not None:
            self._throttle.observe(domain, response.elapsed, response.status)
        self._stats.response(domain, response.status, len(response.body), response.elapsed)
        if (by_run := self._stats.pages_by_run) is not None:  # a store records its runs
            by_run[routing.run] += 1
        if response.status in module.relogin_on and self._logins.invalidate(
            module, routing.account, generation
        ):
            self._stats.retries += 1
            await self._hand_back(delivery, 0, f"HTTP {response.status}: logging in again")
            return None
        if response.status in self._retry.statuses:
            return await self._retry_or_dead_letter(
                delivery, module, prepared, response=response, retry_after=retry_after
            )
        if self._chain.has_download:
            changed_response = await self._chain.after_response(response)
            if changed_response is None:
                return await self._drop(delivery, module, routing, "middleware")
            response = changed_response
            response.routing = routing  # a middleware's new response belongs where the request does
        if self._direct is not None:
            self._handing.add(delivery._lease)
            try:
                if await self._direct(msgspec.structs.replace(delivery, payload=response)):
                    return None  # a parse worker of this process has it (and acks the request when done)
            finally:
                self._handing.discard(delivery._lease)
        await queue_response(self._queue, delivery, response, module.name, request.priority)
        return None

    async def _budget_spent(self, delivery: Delivery) -> None:
        self.stop()  # leave the request queued (kept for the job's next run)
        await self._hand_back(delivery, 0, "page budget reached")

    async def _hand_back(self, delivery: Delivery, delay: float, reason: str) -> None:
        """Back to the queue for another attempt, noted as never parsed (see `UnparsedMarks`)."""
        if self._unparsed is not None:
            await self._unparsed.note(delivery)
        await self._queue.nack(delivery, delay=delay, reason=reason)

    def _apply_crawl_delay(self, domain: str, url: str) -> None:
        assert self._robots is not None
        self._delays_checked.add(domain)
        delay = self._robots.crawl_delay(url)
        if delay:
            logger.info("robots.txt of %s asks for a crawl delay of %.2fs", domain, delay)
            if self._throttle is not None:  # a floor of the throttle's delay (which sets the limiter's)
                self._throttle.floor(domain, delay)
            else:
                self._limiter.configure(domain, delay=max(delay, self._limiter.state(domain).delay))

    def _set_delay(self, domain: str, delay: float) -> None:
        """The throttle's delay of `domain` becomes the limiter's."""
        self._limiter.configure(domain, delay=delay)

    async def _drop(
        self, delivery: Delivery, module: CompiledModule, routing: Routing, why: str | None
    ) -> None:
        """Acknowledge a request left out on purpose, counted under `why` (`None`: counted already)."""
        if why is not None:
            self._stats.drop(why)
        await self._fan_in.unit_done(module, routing.run, routing.account, _node(routing), delivery)
        await self._queue.ack([delivery])

    async def _dead_letter(
        self, delivery: Delivery, module: CompiledModule, routing: Routing, why: str
    ) -> None:
        await self._fan_in.unit_done(module, routing.run, routing.account, _node(routing), delivery)
        await self._queue.dead_letter(delivery, reason=why)

    async def _retry_or_dead_letter(
        self,
        delivery: Delivery,
        module: CompiledModule,
        prepared: _Prepared,
        *,
        error: BaseException | None = None,
        response: Response | None = None,
        retry_after: str | None = None,
    ) -> None:
        request, routing = prepared.request, prepared.routing
        status = response.status if response is not None else None
        delay = self._retry.decide(
            request, delivery.attempt, status=status, error=error, retry_after=retry_after
        )
        what = f"HTTP {status}" if status is not None else _describe(error)
        if delay is not None:
            self._stats.retries += 1
            logger.debug("retrying %s in %.2fs (attempt %d): %s", request.url, delay, delivery.attempt, what)
            await self._hand_back(delivery, delay, what)
            return
        if error is not None and not self._retry.is_retryable(error=error):
            logger.warning("not retrying %s: %s", request.url, what)
            return await self._dead_letter(delivery, module, routing, f"{what} (not retryable)")
        logger.warning("giving up on %s after %d attempts: %s", request.url, delivery.attempt, what)
        await self._dead_letter(delivery, module, routing, f"{what} after {delivery.attempt} attempts")


def _node(routing: Routing) -> str:
    return (routing.node or "").rpartition("/")[2]


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    return "".join(traceback.format_exception_only(exc)).strip()
