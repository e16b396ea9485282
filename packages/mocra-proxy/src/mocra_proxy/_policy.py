"""Selection policies: which of the available proxies a lease gets (`ScorePolicy`, round robin, random)."""

from __future__ import annotations

import itertools
import math
import random
import sys
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from ._health import ProxyHealth

__all__ = ("RandomPolicy", "RoundRobinPolicy", "SamplingPolicy", "ScorePolicy", "SelectionPolicy")

DEFAULT_SAMPLE = 8  # candidates a ScorePolicy compares per lease ("power of k choices")
RANDOM_DRAWS = 16  # positions a RandomPolicy tries before the pool looks at every proxy


class SelectionPolicy(Protocol):
    """Chooses one proxy among the candidates a lease may take.

    The pool calls `choose` with the health records of the proxies that are free right now (not cooling
    down, not limited, in the domain's tier), never an empty sequence, and leases the one at the returned
    index. It is called once per lease on the event loop: keep it fast and never await.
    """

    def choose(self, candidates: Sequence[ProxyHealth], now: float) -> int:
        """The index in `candidates` of the proxy to lease."""
        ...


class SamplingPolicy(SelectionPolicy, Protocol):
    """A policy that looks at a few proxies per lease instead of all of them.

    Optional: the pool uses `visit` when a policy has it, so a lease costs the same with 10 or 10,000
    proxies (`ScorePolicy`, `RoundRobinPolicy` and `RandomPolicy` have it; a policy with `choose` alone
    is offered every free proxy).

    For each lease the pool walks the positions `visit(size)` gives (in its list of `size` proxies),
    keeps those free now, stops at `sample` of them and passes them to `choose`. Only when none of the
    visited proxies is free does it look at every proxy (to lease one, or to know how long to wait).
    """

    sample: int

    def visit(self, size: int) -> Iterable[int]:
        """Positions (`0 <= i < size`, repeats allowed) to look at for one lease, in order."""
        ...


class ScorePolicy:
    """Leases the best-scoring proxy among `sample` free ones drawn at random ("power of k choices").

    With `sample=None` (or a pool no bigger than `sample`) it compares every free proxy; ties go to
    the first. Drawing a few keeps a lease's cost flat however big the pool: a proxy far better than
    most is leased far more often than a bad one all the same, since it wins whenever it is drawn and
    a bad one wins only against worse ones.

    `score = success × speed × freshness`, where
    `success = (successes + 1) / (successes + failures + 2)` (a new proxy starts at 0.5),
    `speed = 1 / (1 + latency / latency_scale)` (latency: moving average, seconds) and
    `freshness = 1 - exp(-idle / recency_scale)` (idle: seconds since last use; 0 just after a use,
    near 1 after a few `recency_scale` seconds). Equal proxies take turns; under load (idle much
    shorter than `recency_scale`) the score is about `success × speed × idle`, so each proxy's share of
    the leases follows its `success × speed`.

    Args:
        latency_scale: Seconds of latency that halve `speed`.
        recency_scale: Seconds of idleness after which `freshness` is about 0.63.
        sample: Free proxies compared per lease (`None`: all of them).
        rng: Draws the sample (inject a seeded `random.Random` in tests).

    Example:
        >>> from mocra_proxy import ProxyHealth
        >>> ScorePolicy().choose([ProxyHealth(successes=1, failures=9), ProxyHealth(successes=9)], now=100.0)
        1
        >>> list(ScorePolicy(sample=4).visit(3)), len(list(ScorePolicy(sample=4).visit(1000)))
        ([0, 1, 2], 8)
    """

    def __init__(
        self,
        *,
        latency_scale: float = 1.0,
        recency_scale: float = 1.0,
        sample: int | None = DEFAULT_SAMPLE,
        rng: random.Random | None = None,
    ) -> None:
        if sample is not None and sample < 1:
            raise ValueError(f"ScorePolicy.sample must be at least 1 or None, got {sample!r}")
        self._latency_scale = latency_scale
        self._recency_scale = recency_scale
        self.sample = sys.maxsize if sample is None else sample
        self._rng = rng or random.Random()

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

    def visit(self, size: int) -> Iterable[int]:
        """Random positions: every one from a random start in a small pool, else independent draws."""
        if size <= self.sample:
            return range(size)
        if size <= 2 * self.sample:  # cheaper than drawing `sample` different ones at random
            start = int(self._rng.random() * size) % size
            return itertools.chain(range(start, size), range(start))
        return _draws(self._rng, size, 2 * self.sample)

    def __repr__(self) -> str:
        return (
            f"ScorePolicy(latency_scale={self._latency_scale!r}, recency_scale={self._recency_scale!r}, "
            f"sample={None if self.sample == sys.maxsize else self.sample!r})"
        )


class RoundRobinPolicy:
    """Takes the proxies in turn: in a pool, the next free one after the last it gave (in pool order).

    Example:
        >>> from mocra_proxy import ProxyHealth
        >>> policy, three = RoundRobinPolicy(), [ProxyHealth(), ProxyHealth(), ProxyHealth()]
        >>> [policy.choose(three, now=0.0) for _ in range(4)]
        [0, 1, 2, 0]
    """

    sample = 1

    def __init__(self) -> None:
        self._turn = 0
        self._cursor = 0

    def choose(self, candidates: Sequence[ProxyHealth], now: float) -> int:
        """The next candidate in turn."""
        index = self._turn % len(candidates)
        self._turn += 1
        return index

    def visit(self, size: int) -> Iterator[int]:
        """Every position once, from the one after the last visited (the pool stops at a free one)."""
        start = self._cursor % size if size else 0
        for step in range(size):
            position = (start + step) % size
            self._cursor = position + 1
            yield position

    def __repr__(self) -> str:
        return "RoundRobinPolicy()"


class RandomPolicy:
    """Takes a free proxy uniformly at random (`rng` injectable for tests).

    Example:
        >>> from mocra_proxy import ProxyHealth
        >>> RandomPolicy(random.Random(1)).choose([ProxyHealth(), ProxyHealth()], now=0.0) in (0, 1)
        True
    """

    sample = 1

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()

    def choose(self, candidates: Sequence[ProxyHealth], now: float) -> int:
        """A random candidate."""
        return self._rng.randrange(len(candidates))

    def visit(self, size: int) -> Iterator[int]:
        """Random positions (the first free one is leased: uniform among the free ones)."""
        return _draws(self._rng, size, RANDOM_DRAWS)

    def __repr__(self) -> str:
        return "RandomPolicy()"


def _draws(rng: random.Random, size: int, count: int) -> Iterator[int]:
    """`count` positions below `size`, uniform and independent."""
    draw = rng.random
    for _ in range(count):
        yield int(draw() * size) % size  # `% size`: a product rounded up to `size` wraps to 0
