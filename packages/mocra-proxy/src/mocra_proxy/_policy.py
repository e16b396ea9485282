"""Selection policies: which of the available proxies a lease gets (`ScorePolicy`, round robin, random)."""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._health import ProxyHealth

__all__ = ("RandomPolicy", "RoundRobinPolicy", "ScorePolicy", "SelectionPolicy")


class SelectionPolicy(Protocol):
    """Chooses one proxy among the candidates a lease may take.

    The pool calls `choose` with the health records of the proxies that are free right now (not cooling
    down, not limited, in the domain's tier), never an empty sequence, and leases the one at the returned
    index. It is called once per lease on the event loop: keep it fast and never await.
    """

    def choose(self, candidates: Sequence[ProxyHealth], now: float) -> int:
        """The index in `candidates` of the proxy to lease."""
        ...


class ScorePolicy:
    """Leases the proxy with the highest score; ties go to the first.

    `score = success × speed × freshness`, where
    `success = (successes + 1) / (successes + failures + 2)` (a new proxy starts at 0.5),
    `speed = 1 / (1 + latency / latency_scale)` (latency: moving average, seconds) and
    `freshness = 1 - exp(-idle / recency_scale)` (idle: seconds since last use; 0 just after a use,
    near 1 after a few `recency_scale` seconds). Equal proxies take turns; under load (idle much
    shorter than `recency_scale`) the score is about `success × speed × idle`, so each proxy's share of
    the leases follows its `success × speed`.

    Example:
        >>> from mocra_proxy import ProxyHealth
        >>> ScorePolicy().choose([ProxyHealth(successes=1, failures=9), ProxyHealth(successes=9)], now=100.0)
        1
    """

    def __init__(self, *, latency_scale: float = 1.0, recency_scale: float = 1.0) -> None:
        self._latency_scale = latency_scale
        self._recency_scale = recency_scale

    def score(self, health: ProxyHealth, now: float) -> float:
        """The proxy's score (between 0 and 1) at `now`."""
        success = (health.successes + 1) / (health.successes + health.failures + 2)
        speed = 1.0 / (1.0 + health.latency / self._latency_scale)
        idle = max(now - health.last_used, 0.0)
        freshness = 1.0 - math.exp(-idle / self._recency_scale) if idle < 50 * self._recency_scale else 1.0
        return success * speed * freshness

    def choose(self, candidates: Sequence[ProxyHealth], now: float) -> int:
        """The index of the best-scoring candidate."""
        best, best_score = 0, -1.0
        for i, health in enumerate(candidates):
            value = self.score(health, now)
            if value > best_score:
                best, best_score = i, value
        return best

    def __repr__(self) -> str:
        return f"ScorePolicy(latency_scale={self._latency_scale!r}, recency_scale={self._recency_scale!r})"


class RoundRobinPolicy:
    """Takes the candidates in turn (a counter modulo how many there are now).

    Example:
        >>> from mocra_proxy import ProxyHealth
        >>> policy, three = RoundRobinPolicy(), [ProxyHealth(), ProxyHealth(), ProxyHealth()]
        >>> [policy.choose(three, now=0.0) for _ in range(4)]
        [0, 1, 2, 0]
    """

    def __init__(self) -> None:
        self._turn = 0

    def choose(self, candidates: Sequence[ProxyHealth], now: float) -> int:
        """The next candidate in turn."""
        index = self._turn % len(candidates)
        self._turn += 1
        return index

    def __repr__(self) -> str:
        return "RoundRobinPolicy()"


class RandomPolicy:
    """Takes a candidate uniformly at random (`rng` injectable for tests).

    Example:
        >>> from mocra_proxy import ProxyHealth
        >>> RandomPolicy(random.Random(1)).choose([ProxyHealth(), ProxyHealth()], now=0.0) in (0, 1)
        True
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()

    def choose(self, candidates: Sequence[ProxyHealth], now: float) -> int:
        """A random candidate."""
        return self._rng.randrange(len(candidates))

    def __repr__(self) -> str:
        return "RandomPolicy()"
