"""`SitemapTasks`: a sitemap task streams one sitemap, admits its pages and queues a task per nested sitemap.

A sitemap (seeded from a spider's `sitemap_urls`, or listed by an index) is one task on the task topic,
for the module's reserved node `SITEMAP_NODE` with meta `{"url": ..., "depth": n}`, so every worker of a
job shares the work, a crash redoes it, and a bad sitemap is dead-lettered with its reason.
"""

from __future__ import annotations

import logging
from contextlib import aclosing
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import anyio
import httpx

from ..._errors import InvalidURL
from ...http import Request, Routing, fingerprint
from ...modules import Task
from ...sitemaps import (
    DEFAULT_MAX_BYTES,
    NestedSitemap,
    SitemapError,
    SitemapPage,
    read_sitemap,
    sitemaps_in_robots,
)
from .._frontier import seen_key, seen_scope
from .._transient import TRANSIENT, retry_delay, retry_later
from ._sitemap_plan import SKIP

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from types import TracebackType

    from ...dedup import SeenSet
    from ...download import DownloadSettings, RobotsPolicy
    from ...modules import CompiledModule
    from ...observe import Stats
    from ...queue import Delivery, QueueBackend
    from .._admission import Admission
    from .._router import TaskRouter
    from ._sitemap_plan import SitemapPlan

__all__ = ("SITEMAP_NODE", "SitemapFetch", "SitemapTasks")

logger = logging.getLogger(__name__)

SITEMAP_NODE = "__sitemap__"
"""The node of sitemap tasks: `mocra_dag` reserves ids starting with `__`, so no module declares it."""
BATCH = 500
"""Pages admitted (and nested sitemaps queued) per call while a sitemap streams."""
_ROBOTS_MAX_BYTES = 512 * 1024  # Google reads the first 500 KiB of a robots.txt


class SitemapFetch:
    """How sitemaps are fetched: one httpx client per run (made on first use), robots.txt, a size cap.

    Args:
        settings: Timeouts, user agent, headers, TLS verification and redirects of the client.
        robots: The run's robots.txt policy (`None`: robots.txt is not obeyed).
        max_bytes: Cap on each sitemap's decoded bytes.
    """

    def __init__(
        self, settings: DownloadSettings, robots: RobotsPolicy | None, *, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        self._settings = settings
        self.robots = robots
        self.max_bytes = max_bytes
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        """The run's sitemap client (made now if it was not)."""
        if self._client is None:
            s = self._settings
            self._client = httpx.AsyncClient(
                headers={**s.headers, "User-Agent": s.user_agent},
                timeout=httpx.Timeout(s.read_timeout, connect=s.connect_timeout),
                verify=s.verify,
                follow_redirects=s.max_redirects > 0,
                max_redirects=s.max_redirects,
            )
        return self._client

    async def allows(self, url: str) -> bool:
        """Whether robots.txt lets the crawl fetch `url` (always, without a policy)."""
        return self.robots is None or await self.robots.allows(url)

    async def __aenter__(self) -> SitemapFetch:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._client is not None:
            with anyio.CancelScope(shield=True):
                await self._client.aclose()


class SitemapTasks:
    """Runs sitemap tasks: streams the sitemap, admits pages in batches of `BATCH`, queues nested sitemaps.

    A page passes the spider's `lastmod` window and rules (`SitemapPlan`) and is admitted as a seed of the
    task's run (depth 0) through `Admission` (scope, dedup), while the sitemap streams: memory stays bounded.
    A nested sitemap the plan follows, at most `max_depth` indexes down, becomes a task at `depth + 1`; the
    seen set keeps each sitemap to one fetch per job (loops end there). A redelivered task admits and
    queues again what it did before, past dedup, as the frontier does (nothing is lost to a crash).

    A sitemap that robots.txt disallows is not fetched (`dropped: robots`). Failures: a 5xx, 408 or 429
    status or a transport error is retried (nack with a doubling delay; past `max_attempts` the queue
    dead-letters it with the reason); another status, a malformed, truncated or too large sitemap, or a
    URL that cannot be fetched is dead-lettered at once, the reason naming the sitemap. Pages admitted
    before a failure stay admitted.

    Args:
        queue: The task queue (ack, nack, dead-letter).
        admission: Queues the pages' requests.
        router: Queues the nested sitemap tasks.
        stats: The run's counters.
        fetch: The client, robots.txt policy and size cap.
        plans: Each spider module's `SitemapPlan`, by module name.
        seen: The job's seen set (each sitemap once per job), or None.
    """

    def __init__(  # seven: the seen set is what makes "each sitemap once" job-wide
        self,
        queue: QueueBackend,
        admission: Admission,
        router: TaskRouter,
        stats: Stats,
        fetch: SitemapFetch,
        plans: Mapping[str, SitemapPlan],
        seen: SeenSet | None,
    ) -> None:
        self._queue = queue
        self._admission = admission
        self._router = router
        self._stats = stats
        self._fetch = fetch
        self._plans = plans
        self._seen = seen

    async def seed(self, module: CompiledModule, task: Task, urls: Sequence[str]) -> None:
        """Queue a sitemap task (depth 0) per URL a spider's `start` seeded, in `task`'s run."""
        await self._router.publish([_task(module, task, url, 0) for url in urls])

    async def handle(self, delivery: Delivery, module: CompiledModule, task: Task) -> None:
        """Run one sitemap task, then ack, retry or dead-letter its delivery."""
        url, depth = task.meta.get("url"), task.meta.get("depth", 0)
        plan = self._plans.get(module.name)
        if not isinstance(url, str) or not isinstance(depth, int) or plan is None:
            self._stats.error("sitemap")
            return await self._queue.dead_letter(
                delivery, reason=f"not a sitemap task of a spider: {task.meta!r}"
            )
        redelivered = delivery.attempt > 1
        try:
            if _is_robots_txt(url):
                await self._robots_txt(module, task, url, redelivered=redelivered)
            elif await self._fetch.allows(url):
                await self._sitemap(module, task, plan, url, depth, redelivered=redelivered)
            else:
                self._stats.drop("robots")
                logger.info("sitemap %s: disallowed by robots.txt, not fetched", url)
        except anyio.get_cancelled_exc_class():
            with anyio.move_on_after(5, shield=True):
                await self._queue.nack(delivery, delay=0, reason="worker cancelled")
            raise
        except TRANSIENT as exc:
            return await retry_later(self._queue, delivery, exc, self._stats)
        except SitemapError as exc:
            return await (self._retry if exc.is_retryable else self._dead)(delivery, str(exc))
        except httpx.TransportError as exc:
            return await self._retry(delivery, f"sitemap {url!r}: {type(exc).__name__}: {exc}")
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            return await self._dead(delivery, f"sitemap {url!r}: {type(exc).__name__}: {exc}")
        await self._queue.ack([delivery])

    async def _sitemap(
        self,
        module: CompiledModule,
        task: Task,
        plan: SitemapPlan,
        url: str,
        depth: int,
        *,
        redelivered: bool,
    ) -> None:
        routing = Routing(f"{module.name}/{module.entry}", task.run, 0, task.account)
        scope = f"{seen_scope(module, routing)}:sitemaps"
        if self._seen is not None:
            await self._seen.add_if_absent([_key(url, scope)])  # an index listing itself is not fetched again
        pages: list[Request] = []
        nested: list[str] = []

        async def flush() -> None:
            if pages:
                await self._admission.admit(module, pages, routing, redelivered=redelivered)
                pages.clear()
            if nested:
                await self._nested(module, task, nested, depth + 1, scope, redelivered=redelivered)
                nested.clear()

        try:
            async with aclosing(
                read_sitemap(self._fetch.client, url, max_bytes=self._fetch.max_bytes)
            ) as entries:
                async for entry in entries:
                    if isinstance(entry, NestedSitemap):
                        if plan.follows(entry):
                            nested.append(urljoin(url, entry.url))
                    else:
                        pages.extend(self._requests(plan, url, entry))
                    if len(pages) >= BATCH or len(nested) >= BATCH:
                        await flush()
        except (SitemapError, httpx.HTTPError, httpx.InvalidURL):
            await flush()  # what it listed before failing is crawled
            raise
        await flush()

    def _requests(self, plan: SitemapPlan, url: str, page: SitemapPage) -> list[Request]:
        found = [(page.url, page)]
        if plan.walk.alternates:
            found += [
                (alternate.url, SitemapPage(url=alternate.url, sitemap=url, lastmod=page.lastmod))
                for alternate in page.alternates
                if alternate.url != page.url
            ]
        requests: list[Request] = []
        for link, listed in found:
            callback = plan.callback_for(link)
            if callback == SKIP or not plan.keeps(listed):
                continue
            try:
                requests.append(Request(urljoin(url, link), callback=callback))
            except InvalidURL as exc:
                self._stats.drop("invalid_url")
                logger.debug("sitemap %s: not crawled: %s", url, exc)
        return requests

    async def _nested(
        self,
        module: CompiledModule,
        task: Task,
        urls: list[str],
        depth: int,
        scope: str,
        *,
        redelivered: bool,
    ) -> None:
        max_depth = self._plans[module.name].walk.max_depth
        if depth > max_depth:
            self._stats.drop("sitemap_depth", len(urls))
            logger.warning(
                "%s: %d sitemaps nested deeper than %d indexes not read, e.g. %s", module.name, len(urls),
                max_depth, urls[0],
            )  # fmt: skip
            return
        if self._seen is not None:
            fresh = await self._seen.add_if_absent([_key(url, scope) for url in urls])
            if not redelivered:
                urls = [url for url, new in zip(urls, fresh, strict=True) if new]
        await self._router.publish([_task(module, task, url, depth) for url in urls])

    async def _robots_txt(self, module: CompiledModule, task: Task, url: str, *, redelivered: bool) -> None:
        body = bytearray()
        async with self._fetch.client.stream("GET", url) as response:
            if not response.is_success:
                raise SitemapError(url, f"HTTP {response.status_code}", status=response.status_code)
            async for chunk in response.aiter_bytes():
                body += chunk[: _ROBOTS_MAX_BYTES - len(body)]
                if len(body) >= _ROBOTS_MAX_BYTES:
                    break
        urls = sitemaps_in_robots(body.decode("utf-8", "replace"), robots_url=url)
        logger.info("%s: %d sitemaps listed in %s", module.name, len(urls), url)
        scope = f"{seen_scope(module, Routing(None, task.run, 0, task.account))}:sitemaps"
        if urls:
            await self._nested(module, task, urls, 0, scope, redelivered=redelivered)

    async def _retry(self, delivery: Delivery, reason: str) -> None:
        self._stats.retries += 1
        delay = retry_delay(delivery.attempt)
        logger.warning("%s (attempt %d): retrying in %.0f s", reason, delivery.attempt, delay)
        await self._queue.nack(delivery, delay=delay, reason=reason)

    async def _dead(self, delivery: Delivery, reason: str) -> None:
        self._stats.error("sitemap")
        logger.error("%s: dead-lettered", reason)
        await self._queue.dead_letter(delivery, reason=reason)


def _task(module: CompiledModule, task: Task, url: str, depth: int) -> Task:
    meta: dict[str, Any] = {"url": url, "depth": depth}
    return Task(module=module.name, node=SITEMAP_NODE, meta=meta, run=task.run, account=task.account)


def _key(url: str, scope: str) -> bytes:
    return seen_key(fingerprint("GET", url, None), scope)


def _is_robots_txt(url: str) -> bool:
    return url.partition("?")[0].partition("#")[0].endswith("/robots.txt")
