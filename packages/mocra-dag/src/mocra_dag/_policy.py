"""`NodePolicy`: how one node is retried, timed out and protected by a circuit breaker."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ._errors import CircuitOpen

__all__ = ("NodePolicy",)

RetryOn = tuple[type[BaseException], ...] | Callable[[BaseException], bool]


class NodePolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Retry, timeout and circuit-breaker settings of a node (durations in seconds).

    A node runs up to `1 + max_retries` attempts. After failed attempt `n` (when the error is retryable
    and retries remain) the scheduler waits `backoff_delay(n, random)`: `backoff * 2 ** (n - 1)` capped at
    `max_backoff`, then scaled down by up to `jitter` of itself by the scheduler's injected `random()`
    (`jitter=0`: exact; `jitter=1`: anywhere between 0 and the full delay).

    The circuit breaker counts failed attempts of the node id across all runs of one `Scheduler`
    (timeouts included, cancellations not). After `breaker_threshold` consecutive failures it opens for
    `breaker_cooldown` seconds on the scheduler's clock: calls then fail fast with `CircuitOpen`, which is
    never retried. After the cool-down one trial attempt may run; its success closes the breaker, its
    failure opens it for another cool-down. A success resets the count.

    Attributes:
        max_retries: Attempts after the first; 0 disables retrying.
        backoff: Delay after the first failed attempt, before jitter.
        max_backoff: Cap of the exponential delay, before jitter.
        jitter: Fraction of the delay that is random, in [0, 1].
        retry_on: Exception types to retry, or a predicate `error -> bool`; other errors fail at once.
        timeout: Limit of one attempt; the attempt then fails with `NodeTimeout`. None: no limit.
        breaker_threshold: Consecutive failed attempts that open the breaker; 0 disables it.
        breaker_cooldown: How long an open breaker fails calls fast.

    Example:
        >>> policy = NodePolicy(max_retries=3, backoff=0.5, max_backoff=1.5, jitter=0.0)
        >>> [policy.backoff_delay(n, lambda: 0.5) for n in (1, 2, 3)]
        [0.5, 1.0, 1.5]
        >>> NodePolicy(backoff=1.0, jitter=0.5).backoff_delay(1, lambda: 0.0)  # random() == 0 → -50 %
        0.5
        >>> NodePolicy(retry_on=(TimeoutError,)).is_retryable(KeyError("x"))
        False
    """

    max_retries: int = 0
    backoff: float = 0.1
    max_backoff: float = 30.0
    jitter: float = 0.5
    retry_on: RetryOn = (Exception,)
    timeout: float | None = None
    breaker_threshold: int = 0
    breaker_cooldown: float = 30.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries!r}")
        if self.backoff < 0 or self.max_backoff < 0:
            raise ValueError(
                f"backoff and max_backoff must be >= 0, got {self.backoff!r}, {self.max_backoff!r}"
            )
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError(f"jitter must be within [0, 1], got {self.jitter!r}")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds or None, got {self.timeout!r}")
        if self.breaker_threshold < 0:
            raise ValueError(f"breaker_threshold must be >= 0, got {self.breaker_threshold!r}")
        if self.breaker_cooldown <= 0:
            raise ValueError(f"breaker_cooldown must be > 0 seconds, got {self.breaker_cooldown!r}")
        if not callable(self.retry_on) and not (
            isinstance(self.retry_on, tuple)
            and all(isinstance(t, type) and issubclass(t, BaseException) for t in self.retry_on)
        ):
            raise TypeError(
                f"retry_on must be a tuple of exception types or a predicate, got {self.retry_on!r}"
            )

    def is_retryable(self, error: BaseException) -> bool:
        """Whether a failed attempt with `error` may be retried (`CircuitOpen` never is)."""
        if isinstance(error, CircuitOpen):
            return False
        if isinstance(self.retry_on, tuple):
            return isinstance(error, self.retry_on)
        return bool(self.retry_on(error))

    def backoff_delay(self, failed_attempt: int, random: Callable[[], float]) -> float:
        """Seconds to wait after failed attempt number `failed_attempt` (1-based), jittered by `random()`."""
        delay = min(self.max_backoff, self.backoff * 2.0 ** min(failed_attempt - 1, 64))
        return delay * (1.0 - self.jitter * (1.0 - random()))
