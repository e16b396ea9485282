"""`DownloadStage`: request queue → politeness gate → downloader → response queue."""

from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import anyio

from .._errors import DownloadError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..download import DomainLimiter, Downloader, RetryPolicy, RobotsPolicy
    from ..http import Request, Response
    from ..middleware import MiddlewareChain
    from ..observe import Stats
    from ..queue import Delivery, QueueBackend

__all__ = ("RESPONSES", "DownloadStage")

logger = logging.getLogger(__name__)

RESPONSES = "response"
_REQUESTS = "request"


class DownloadStage:
    """Runs `concurrency` workers that each lease one request at a time and hand on its response.

    A request is acknowledged only after its response is published, so a crash loses nothing. Failures
    (network errors, timeouts, retryable statuses) go through the retry policy: back to the queue after a
    backoff (`nack`), or to the dead-letter queue with the reason once retries are exhausted.
    """

    def __init__(
        self,
        queue: QueueBackend,
        downloaders: Mapping[str, Downloader],
        limiter: DomainLimiter,
        retry: RetryPolicy,
        robots: RobotsPolicy | None,
        chain: MiddlewareChain,
        stats: Stats,
        *,
        max_requests: int | None = None,
    ) -> None:
        self._queue = queue
        self._downloaders = downloaders
        self._limiter = limiter
        self._retry = retry
        self._robots = robots
        self._chain = chain
        self._stats = stats
        self._max_requests = max_requests
        self._stopping = False
        self._delays_checked: set[str] = set()

    def stop(self) -> None:
        """Take no new requests; workers return after their current one."""
        self._stopping = True

    async def run(self, concurrency: int) -> None:
        """Run the workers until `stop` is called."""
        async with anyio.create_task_group() as tg:
            for index in range(concurrency):
                tg.start_soon(self._worker, name=f"download-{index}")

    async def _worker(self) -> None:
        while not self._stopping:
            for delivery in await self._queue.consume(_REQUESTS, group="download", max_messages=1, wait=0.2):
                await self._handle(delivery)

    async def _handle(self, delivery: Delivery) -> None:
        request: Request = delivery.payload  # type: ignore[assignment]
        if self._max_requests is not None and self._stats.requests >= self._max_requests:
            self._stopping = True  # the page budget is spent: leave the request queued (kept in a job dir)
            await self._queue.nack(delivery, delay=0, reason="page budget reached")
            return
        try:
            await self._download(delivery, request)
        except anyio.get_cancelled_exc_class():
            with anyio.move_on_after(5, shield=True):
                await self._queue.nack(delivery, delay=0, reason="worker cancelled")
            raise
        except Exception as exc:  # a bug in a middleware or a downloader: keep the request, keep crawling
            self._stats.errors += 1
            logger.exception("download of %s failed unexpectedly", request.url)
            await self._queue.dead_letter(delivery, reason=_describe(exc))
            self._stats.dead_lettered += 1

    async def _download(self, delivery: Delivery, request: Request) -> None:
        if self._chain.has_download:
            changed = await self._chain.before_request(request)
            if changed is None:
                self._stats.drop("middleware")
                await self._queue.ack([delivery])
                return
            request = changed
        if self._robots is not None and not await self._robots.allowed(request):
            self._stats.drop("robots")
            logger.debug("robots.txt forbids %s", request.url)
            await self._queue.ack([delivery])
            return
        domain = urlsplit(request.url).hostname or ""
        if self._robots is not None and domain not in self._delays_checked:
            self._apply_crawl_delay(domain, request.url)
        downloader = self._downloaders.get(request.downloader or "default")
        if downloader is None:
            self._stats.dead_lettered += 1
            await self._queue.dead_letter(
                delivery,
                reason=f"no downloader named {request.downloader!r}; registered: {sorted(self._downloaders)}",
            )
            return
        self._stats.requests += 1
        try:
            async with self._limiter.slot(domain):
                response = await downloader.download(request)
        except DownloadError as exc:
            await self._retry_or_dead_letter(delivery, request, error=exc)
            return
        retry_after = response.headers.get("retry-after")
        self._limiter.feedback(domain, response.status, retry_after)
        self._stats.response(domain, response.status, len(response.body), response.elapsed)
        if response.status in self._retry.statuses:
            await self._retry_or_dead_letter(delivery, request, response=response, retry_after=retry_after)
            return
        if self._chain.has_download:
            changed_response = await self._chain.after_response(response)
            if changed_response is None:
                self._stats.drop("middleware")
                await self._queue.ack([delivery])
                return
            response = changed_response
        await self._queue.publish(RESPONSES, [response], priority=request.priority)
        await self._queue.ack([delivery])

    def _apply_crawl_delay(self, domain: str, url: str) -> None:
        assert self._robots is not None
        self._delays_checked.add(domain)
        delay = self._robots.crawl_delay(url)
        if delay:
            logger.info("robots.txt of %s asks for a crawl delay of %.2fs", domain, delay)
            self._limiter.configure(domain, delay=max(delay, self._limiter.state(domain).delay))

    async def _retry_or_dead_letter(
        self,
        delivery: Delivery,
        request: Request,
        *,
        error: BaseException | None = None,
        response: Response | None = None,
        retry_after: str | None = None,
    ) -> None:
        status = response.status if response is not None else None
        delay = self._retry.decide(
            request, delivery.attempt, status=status, error=error, retry_after=retry_after
        )
        what = f"HTTP {status}" if status is not None else _describe(error)
        if delay is not None:
            self._stats.retries += 1
            logger.debug("retrying %s in %.2fs (attempt %d): %s", request.url, delay, delivery.attempt, what)
            await self._queue.nack(delivery, delay=delay, reason=what)
            return
        self._stats.dead_lettered += 1
        logger.warning("giving up on %s after %d attempts: %s", request.url, delivery.attempt, what)
        await self._queue.dead_letter(delivery, reason=f"{what} after {delivery.attempt} attempts")


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    return "".join(traceback.format_exception_only(exc)).strip()
