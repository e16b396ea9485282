"""`LeasePace`: the pause between leases that find only busy domains stays bounded however long it lasts."""

from __future__ import annotations

from typing import Any

from mocra_core.engine.download._lease_pace import DISCOVERY_MAX, LeasePace


class _BusyParking:
    """A parking full of requests of busy domains: nothing can start, nothing is hungry."""

    total_cap = 4
    parked = 4
    fruitful = False
    returns: list[Any] = []

    def hungry(self) -> int:
        return 0

    def has_ready(self) -> bool:
        return False

    def evict(self, n: int) -> None:
        pass


def test_a_long_fruitless_streak_keeps_the_pause_at_its_cap() -> None:
    now = [0.0]
    pace = LeasePace(lambda: now[0])
    parking: Any = _BusyParking()
    pace.want(parking, waiting=1, unprepared=False)
    for _ in range(5_000):  # a soak: hours of leases that found only busy domains
        pace.leased(parking, 10)
    now[0] = 1_000.0
    size, until = pace.want(parking, waiting=1, unprepared=False)  # raised OverflowError before the cap
    assert (size, until) == (1, float("inf"))
    pace.leased(parking, 1)
    size, until = pace.want(parking, waiting=1, unprepared=False)
    assert size == 0
    assert until == now[0] + DISCOVERY_MAX
