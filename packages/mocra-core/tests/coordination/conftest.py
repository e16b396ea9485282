"""Fixtures of the coordination tests: a clock the tests move, and every backend behind one fixture."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from mocra_core.coordination import LmdbCoordination, LocalCoordination
from mocra_dag import ManualClock

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator, Callable

    from mocra_core.coordination import Coordination

BACKENDS = ["local", "lmdb"]


class FakeClock(ManualClock):
    """A clock that moves only when told to: callable for the coordination, a `mocra_dag.Clock` too."""

    def __call__(self) -> float:
        return self.now()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_700_000_000.0)


def open_backend(kind: str, path: pathlib.Path, clock: FakeClock) -> Coordination:
    if kind == "local":
        return LocalCoordination(clock=clock)
    return LmdbCoordination(path / "coordination", clock=clock)


@pytest.fixture
def open_coordination(tmp_path: pathlib.Path, clock: FakeClock) -> Callable[[str], Coordination]:
    """`open_coordination(kind)`: a new store of that kind on the test's directory and clock."""
    return lambda kind: open_backend(kind, tmp_path, clock)


@pytest.fixture(params=BACKENDS)
async def coordination(
    request: pytest.FixtureRequest, tmp_path: pathlib.Path, clock: FakeClock
) -> AsyncIterator[Coordination]:
    async with open_backend(request.param, tmp_path, clock) as found:
        yield found
