"""`RetryPolicy`: whether a failed download is tried again, and after how long."""

from __future__ import annotations

import math
import random as _random
import time
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

import msgspec

from .._errors import DownloadError

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..http import Request

__all__ = ("RetryPolicy", "RetrySettings", "parse_retry_after")


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta-seconds or an HTTP-date.

    Args:
        value: The header value.
        now: Current wall-clock time (epoch seconds) for HTTP-dates; `time.time()` when omitted.

    Returns:
        Seconds (0.0 for a date in the past), or `None` when the value is missing or malformed.

    Example:
        >>> parse_retry_after("120")
        120.0
        >>> parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0)
        10.0
        >>> parse_retry_after("soon") is None
        True
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; tolerate a missing zone
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


class RetrySettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """When and how often to retry a failed download. Durations are seconds.

    Attributes:
        max_retries: Retries after the first attempt (`Request.max_retries` overrides it per request).
        statuses: HTTP statuses worth retrying; other statuses reach the parse callback.
        base: Backoff before retry n is drawn uniformly from [0, `base` * 2^(n-1)] ("full jitter").
        max_delay: Cap on that backoff.
        max_retry_after: Cap on a server's `Retry-After`, which otherwise wins over the backoff.
        max_domain_backoff: Cap on how much 429/503 responses slow their whole domain (host): on the
            extra gap they add between the domain's request starts and on how long a `Retry-After`
            holds back the domain's other requests. Only a request's first attempt slows the domain (a
            URL that fails again backs off alone, by its own backoff or `Retry-After`), and a success
            ends the slow-down. 0 never slows a domain for its responses.

    Example:
        >>> sorted(RetrySettings(max_retries=5).statuses)
        [408, 429, 500, 502, 503, 504]
        >>> RetrySettings(max_domain_backoff=float("inf"))
        Traceback (most recent call last):
        ...
        ValueError: max_domain_backoff: must be a finite number of seconds >= 0, got inf
    """

    max_retries: int = 3
    statuses: frozenset[int] = frozenset({408, 429, 500, 502, 503, 504})
    base: float = 0.5
    max_delay: float = 60.0
    max_retry_after: float = 300.0
    max_domain_backoff: float = 30.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries: must be >= 0, got {self.max_retries!r}")
        for name in ("base", "max_delay", "max_retry_after"):
            value = getattr(self, name)
            if not value >= 0:  # also rejects NaN
                raise ValueError(f"{name}: must be >= 0, got {value!r}")
        backoff = self.max_domain_backoff
        if not 0 <= backoff < math.inf:
            raise ValueError(f"max_domain_backoff: must be a finite number of seconds >= 0, got {backoff!r}")
        bad = sorted(s for s in self.statuses if not 100 <= s <= 599)
        if bad:
            raise ValueError(f"statuses: not HTTP statuses: {bad!r}")


class RetryPolicy:
    """Decides whether a failed download is retried, and after how many seconds.

    Retried: the statuses in `settings.statuses`, network errors and timeouts (a `DownloadError` whose
    `retryable` is true, `OSError`, `TimeoutError`). Not retried: a `DownloadError` that is not `retryable`
    (`BodyTooLarge`, `TooManyRedirects`, `UnfetchableURL`: the same request fails the same way), any other
    exception (a bug, not a flaky network) and other statuses.
    Every method is retried alike, POST included (as Scrapy does).

    The delay before retry n (`attempt` = n) is "full jitter" exponential backoff:
    `random() * min(max_delay, base * 2 ** (n - 1))`; a parseable `Retry-After` replaces it, capped at
    `max_retry_after`.

    Args:
        settings: Limits and statuses; `RetrySettings()` when omitted.
        random: Returns a float in [0, 1); inject a fixed one in tests.
        clock: Wall-clock time in epoch seconds, for `Retry-After` HTTP-dates.

    Example:
        >>> from mocra_core.http import Request
        >>> policy = RetryPolicy(random=lambda: 1.0)
        >>> request = Request("https://example.com/")
        >>> [policy.decide(request, n, status=503) for n in (1, 2, 3, 4)]
        [0.5, 1.0, 2.0, None]
        >>> policy.decide(request, 1, status=404) is None
        True
        >>> policy.decide(request, 1, status=429, retry_after="7")
        7.0
    """

    __slots__ = ("_clock", "_random", "settings", "statuses")

    def __init__(
        self,
        settings: RetrySettings | None = None,
        *,
        random: Callable[[], float] = _random.random,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings or RetrySettings()
        self.statuses: frozenset[int] = self.settings.statuses
        """The statuses this policy retries (the engine checks responses against it)."""
        self._random = random
        self._clock = clock

    def is_retryable(self, *, status: int | None = None, error: BaseException | None = None) -> bool:
        """Whether this status or error is worth another attempt at all (ignoring the attempt count)."""
        if error is not None:
            if isinstance(error, DownloadError):
                return error.retryable
            return isinstance(error, (OSError, TimeoutError))
        return status is not None and status in self.statuses

    def decide(
        self,
        request: Request,
        attempt: int,
        *,
        status: int | None = None,
        error: BaseException | None = None,
        retry_after: str | None = None,
    ) -> float | None:
        """Seconds to wait before the next attempt, or `None` to give up.

        Args:
            request: The failed request; its `max_retries`, when set, overrides the settings.
            attempt: Which attempt just failed: 1 for the first try, so retry n follows attempt n.
            status: The response status, when there was a response.
            error: The exception, when there was none.
            retry_after: The response's `Retry-After` header, if any.
        """
        if not self.is_retryable(status=status, error=error):
            return None
        limit = self.settings.max_retries if request.max_retries is None else request.max_retries
        if attempt > limit:
            return None
        if retry_after is not None:
            wait = parse_retry_after(retry_after, self._clock())
            if wait is not None:
                return min(wait, self.settings.max_retry_after)
        ceiling = min(self.settings.max_delay, self.settings.base * 2.0 ** min(max(0, attempt - 1), 64))
        return self._random() * ceiling

    def __repr__(self) -> str:
        return f"<RetryPolicy max_retries={self.settings.max_retries} statuses={sorted(self.statuses)}>"
