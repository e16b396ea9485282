"""Per-node circuit breakers shared by every run of one scheduler."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._errors import CircuitOpen

if TYPE_CHECKING:
    from ._clock import Clock
    from ._policy import NodePolicy

__all__ = ("Breakers",)


class _Breaker:
    __slots__ = ("failures", "open_until", "trial")

    def __init__(self) -> None:
        self.failures = 0
        self.open_until: float | None = None  # None: closed
        self.trial = False  # a half-open trial attempt is running


class Breakers:
    """The circuit breakers of one scheduler, one per node id (see `NodePolicy` for the rules).

    Call `admit` before an attempt, then exactly one of `succeeded`, `failed` or `abandoned`.

    Example:
        >>> from mocra_dag import ManualClock, NodePolicy
        >>> clock = ManualClock()
        >>> breakers, policy = Breakers(clock), NodePolicy(breaker_threshold=2, breaker_cooldown=10)
        >>> for _ in range(2):
        ...     trial = breakers.admit("fetch", policy)
        ...     breakers.failed("fetch", policy)
        >>> breakers.admit("fetch", policy)
        Traceback (most recent call last):
        ...
        mocra_dag._errors.CircuitOpen: circuit of node 'fetch' is open until 10.000
        >>> clock.advance(10)
        >>> breakers.admit("fetch", policy)  # the half-open trial
        True
        >>> breakers.succeeded("fetch")
        >>> breakers.is_open("fetch")
        False
    """

    __slots__ = ("_breakers", "_clock")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._breakers: dict[str, _Breaker] = {}

    def admit(self, node: str, policy: NodePolicy) -> bool:
        """Let an attempt of `node` start, or raise `CircuitOpen`; return True for a half-open trial."""
        if not policy.breaker_threshold:
            return False
        breaker = self._breakers.get(node)
        if breaker is None or breaker.open_until is None:
            return False
        if self._clock.now() < breaker.open_until or breaker.trial:
            raise CircuitOpen(node, breaker.open_until)
        breaker.trial = True
        return True

    def succeeded(self, node: str) -> None:
        """Record a successful attempt: the breaker closes and its count resets."""
        breaker = self._breakers.get(node)
        if breaker is not None:
            breaker.failures, breaker.open_until, breaker.trial = 0, None, False

    def failed(self, node: str, policy: NodePolicy) -> None:
        """Record a failed attempt; the breaker opens at the threshold or when a trial fails."""
        if not policy.breaker_threshold:
            return
        breaker = self._breakers.get(node)
        if breaker is None:
            breaker = self._breakers[node] = _Breaker()
        breaker.failures += 1
        if breaker.trial or breaker.failures >= policy.breaker_threshold:
            breaker.open_until = self._clock.now() + policy.breaker_cooldown
        breaker.trial = False

    def abandoned(self, node: str) -> None:
        """Record an attempt that ended without a verdict (cancelled): a trial slot is freed."""
        breaker = self._breakers.get(node)
        if breaker is not None:
            breaker.trial = False

    def is_open(self, node: str) -> bool:
        """Whether calls of `node` would fail fast now (open, or half-open with a trial running)."""
        breaker = self._breakers.get(node)
        if breaker is None or breaker.open_until is None:
            return False
        return self._clock.now() < breaker.open_until or breaker.trial
