"""`HealthCheck`: probing idle proxies against a URL you give, so a cooled-down proxy can come back early."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import anyio
import httpx
import msgspec

from ._outcome import Outcome

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ._entry import Entry
    from ._proxy import Proxy

__all__ = ("HealthCheck", "probe", "probe_loop")

logger = logging.getLogger(__name__)


class HealthCheck(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Probe idle proxies every `interval` seconds by fetching `url` through them.

    At most `concurrency` probes run at once, each within `timeout` seconds; the outcome is reported
    like any other: a success ends a cooldown, a failure counts towards eviction.

    Example:
        >>> HealthCheck(url="http://127.0.0.1:8000/health", interval=30.0)
        HealthCheck(url='http://127.0.0.1:8000/health', interval=30.0, timeout=10.0, concurrency=10)
    """

    url: str
    interval: float = 60.0
    timeout: float = 10.0
    concurrency: int = 10


async def probe(proxy: Proxy, check: HealthCheck, ban_statuses: frozenset[int]) -> Outcome | None:
    """Fetch `check.url` through `proxy`; `None` if this HTTP client cannot use the proxy's scheme.

    A 2xx or 3xx answer that is not a ban status is a success; anything else a failure.
    """
    started = time.perf_counter()
    try:
        async with httpx.AsyncClient(proxy=proxy.url, timeout=check.timeout, trust_env=False) as client:
            response = await client.get(check.url)
    except ImportError:  # socks5 without httpx[socks]
        logger.debug("health check skips %s: no support for its scheme", proxy.redacted)
        return None
    except httpx.HTTPError as exc:
        return Outcome(ok=False, error=type(exc).__name__, latency=time.perf_counter() - started)
    status = response.status_code
    ok = 200 <= status < 400 and status not in ban_statuses
    return Outcome(ok=ok, status=status, latency=time.perf_counter() - started)


async def probe_loop(
    check: HealthCheck,
    idle: Callable[[], list[Entry]],
    report: Callable[[Entry, Outcome], Awaitable[None]],
    ban_statuses: frozenset[int] = frozenset(),
) -> None:
    """Every `check.interval` seconds probe the `idle()` entries and `report` each outcome."""
    limiter = anyio.CapacityLimiter(check.concurrency)

    async def one(entry: Entry) -> None:
        async with limiter:
            outcome = await probe(entry.proxy, check, ban_statuses)
        if outcome is not None:
            await report(entry, outcome)

    while True:
        await anyio.sleep(check.interval)
        async with anyio.create_task_group() as tg:
            for entry in idle():
                tg.start_soon(one, entry)
