"""Expired values do not pile up: both backends sweep them (white-box: counts what is stored)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from mocra_core.coordination import LmdbCoordination, LocalCoordination

if TYPE_CHECKING:
    import pathlib

    from conftest import FakeClock
    from mocra_core.coordination import Coordination

pytestmark = pytest.mark.anyio


def _stored(coordination: Coordination) -> int:
    if isinstance(coordination, LocalCoordination):
        return len(coordination._data)
    assert isinstance(coordination, LmdbCoordination)
    shared = coordination._shared()
    with shared.env.begin() as txn:
        return int(txn.stat(shared.values)["entries"])


async def test_expired_values_are_swept(coordination: Coordination, clock: FakeClock) -> None:
    if not isinstance(coordination, (LocalCoordination, LmdbCoordination)):
        pytest.skip("Redis frees expired values by PEXPIRE on the real clock only (see test_redis.py)")
    await coordination.set("kept", b"v")
    await coordination.append("list", b"x")
    for round_ in range(4):  # gates with a ttl, never touched again
        for i in range(1_100):
            await coordination.set(f"gate/{round_}/{i}", b"1", ttl=1)
        clock.advance(2)
    assert _stored(coordination) < 2 * 1_100 + 2  # not 4,402: earlier rounds were purged
    assert await coordination.get("kept") == b"v" and await coordination.items("list") == [b"x"]


async def test_lmdb_sweeps_do_not_chase_a_growing_store(tmp_path: pathlib.Path, clock: FakeClock) -> None:
    async with LmdbCoordination(tmp_path, clock=clock) as shared:
        for i in range(1_100):
            await shared.set(f"old/{i}", b"1", ttl=1)
        clock.advance(2)
        for i in range(1_100):
            await shared.set(f"new/{i}", b"1", ttl=100)
        assert _stored(shared) <= 1_100 + 1_100 - 1_000
