"""The approximate seen sets (scalable Bloom filters): layout, error rate, growth, several Redis clients."""

from __future__ import annotations

import hashlib
import os
import uuid
from typing import TYPE_CHECKING

import anyio
import pytest
import redis.asyncio

from mocra_core.config import Settings
from mocra_core.dedup import DedupSettings, MemoryBloomSeenSet, RedisBloomSeenSet
from mocra_core.dedup._bloom import SEGMENT_BITS, filter_layout, series_bits
from mocra_core.engine._plan import BackendPlan

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

pytestmark = pytest.mark.anyio

REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

Bloom = MemoryBloomSeenSet | RedisBloomSeenSet


def fp(n: int) -> bytes:
    return hashlib.blake2b(str(n).encode(), digest_size=16).digest()


@pytest.fixture
async def namespace() -> AsyncIterator[str]:
    """A fresh Redis namespace, its keys deleted after the test."""
    name = f"mocra-test-{uuid.uuid4().hex}"
    yield name
    async with redis.asyncio.Redis.from_url(REDIS_URL) as raw:
        keys = await raw.keys(f"{name}:*")
        if keys:
            await raw.delete(*keys)


@pytest.fixture(params=["memory", "redis"])
def make(request: pytest.FixtureRequest, namespace: str) -> Callable[..., Bloom]:
    """Makes a fresh approximate set of either kind (`capacity`, `false_positive_rate`)."""

    def made(**options: float) -> Bloom:
        capacity, rate = int(options["capacity"]), float(options["false_positive_rate"])
        if request.param == "memory":
            return MemoryBloomSeenSet(capacity=capacity, false_positive_rate=rate)
        return RedisBloomSeenSet(REDIS_URL, namespace=namespace, capacity=capacity, false_positive_rate=rate)

    return made


def test_the_rates_of_a_series_add_up_to_less_than_its_rate() -> None:
    layouts = [filter_layout(i, capacity=1000, rate=0.001) for i in range(40)]
    assert sum(layout.rate for layout in layouts) < 0.001
    assert [layout.capacity for layout in layouts[:3]] == [1000, 2000, 4000]
    first = layouts[0]
    assert (first.bits, first.hashes, first.segments) == (15821, 11, 1)  # -n ln(p) / ln² 2, -log2(p); p/2
    assert first.redis_bytes == 1978
    big = filter_layout(0, capacity=100_000_000, rate=0.001)
    assert big.segments == 189 and big.redis_bytes == 189 * SEGMENT_BITS // 8 >= big.bits / 8


def test_100_million_at_a_tenth_of_a_percent_is_under_200_mb() -> None:
    assert series_bits(100_000_000, capacity=100_000_000, rate=0.001) / 8 < 200e6
    assert series_bits(100_000_001, capacity=100_000_000, rate=0.001) > 3 * series_bits(
        1, capacity=100_000_000, rate=0.001
    )


async def test_a_seen_fingerprint_is_never_new_and_new_ones_rarely_seen(make: Callable[..., Bloom]) -> None:
    """Past growth: every added fingerprint stays seen; a fresh one is taken for seen with chance < p."""
    async with make(capacity=1_000, false_positive_rate=0.01) as seen:
        added = [fp(n) for n in range(2_000)]  # the first filter full, the second half
        new = 0
        for start in range(0, len(added), 500):
            new += sum(await seen.add_if_absent(added[start : start + 500]))
        assert new > 2_000 * 0.99
        assert await seen.count() == new
        assert not any(await seen.add_if_absent(added))  # no false negative, ever
        # Asked without adding them: adding the fresh ones would fill further filters as it measures
        # (each adds its share of the rate), and the expected count would creep up to the bound itself.
        fresh = [fp(n) for n in range(100_000, 104_000)]
        taken_for_seen = sum([await seen.contains(f) for f in fresh])
        assert taken_for_seen < 0.01 * len(fresh)  # expected ~0.5 %: Poisson(20) stays under 40


async def test_a_full_filter_gets_a_successor_twice_as_big(make: Callable[..., Bloom]) -> None:
    async with make(capacity=1_000, false_positive_rate=0.001) as seen:
        await seen.add_if_absent([fp(n) for n in range(999)])
        assert await _filters(seen) == 1
        await seen.add_if_absent([fp(n) for n in range(999, 1_001)])  # fills the first, starts the second
        assert await _filters(seen) == 2
        await seen.add_if_absent(
            [fp(n) for n in range(1_001, 3_101)]
        )  # 2,100 more: past the second filter's room
        assert await _filters(seen) == 3


async def _filters(seen: Bloom) -> int:
    if isinstance(seen, MemoryBloomSeenSet):
        return seen.filters
    async with redis.asyncio.Redis.from_url(REDIS_URL) as raw:
        return int(await raw.hget(seen.name, "filters") or 0)


async def test_redis_allocates_each_filter_whole_as_laid_out(namespace: str) -> None:
    async with RedisBloomSeenSet(REDIS_URL, namespace=namespace, capacity=300_000) as seen:
        await seen.add_if_absent([fp(n) for n in range(1_000)])
        keys = await seen.keys()
        layout = filter_layout(0, capacity=300_000, rate=0.001)
        assert layout.segments == 1
        async with redis.asyncio.Redis.from_url(REDIS_URL) as raw:
            assert [await raw.strlen(key) for key in keys[1:]] == [layout.redis_bytes]  # Lua's layout is ours
            await raw.hset(seen.name, "room", 0)  # as if full: the next batch starts filter 1 (2 segments)
            await seen.add_if_absent([fp(n) for n in range(1_000, 1_100)])
            keys = await seen.keys()
            assert [await raw.strlen(key) for key in keys[2:]] == [SEGMENT_BITS // 8] * 2
        assert await seen.memory_usage() >= layout.redis_bytes + 2 * SEGMENT_BITS // 8
        assert not any(await seen.add_if_absent([fp(n) for n in range(1_100)]))


async def test_redis_workers_agree_and_the_first_fixes_the_parameters(namespace: str) -> None:
    """Two clients add overlapping batches at once: each fingerprint is new to exactly one of them."""
    answers: list[int] = []

    async def add(seen: RedisBloomSeenSet, offset: int) -> None:
        async with seen:
            for start in range(offset, offset + 4_000, 400):
                answers.append(sum(await seen.add_if_absent([fp(n) for n in range(start, start + 400)])))

    first = RedisBloomSeenSet(REDIS_URL, namespace=namespace, capacity=1_000)
    other = RedisBloomSeenSet(REDIS_URL, namespace=namespace, capacity=50_000, false_positive_rate=0.1)
    async with anyio.create_task_group() as tg:
        tg.start_soon(add, first, 0)
        tg.start_soon(add, other, 2_000)  # 2,000 fingerprints offered by both
    assert 0.99 * 6_000 < sum(answers) <= 6_000
    async with redis.asyncio.Redis.from_url(REDIS_URL) as raw:
        capacity, rate = await raw.hmget(f"{namespace}:seen", ["capacity", "rate"])
    assert (capacity, rate) in {(b"1000", b"0.001"), (b"50000", b"0.1")}


def test_the_settings_choose_the_approximate_sets_where_they_apply() -> None:
    approximate: dict[str, object] = {
        "dedup": {"approximate": True, "capacity": 5_000, "false_positive_rate": 0.01}
    }
    plan = BackendPlan.decide(Settings.from_mapping(approximate), job="j")
    memory = plan.make_seen(plan.make_coordination())
    assert repr(memory) == "MemoryBloomSeenSet(capacity=5000, false_positive_rate=0.01)"
    on_redis = Settings.from_mapping({**approximate, "queue": {"url": REDIS_URL}})
    plan = BackendPlan.decide(on_redis, job="j")
    assert isinstance(plan.make_seen(plan.make_coordination()), RedisBloomSeenSet)
    in_job_dir = BackendPlan.decide(
        Settings.from_mapping({**approximate, "crawl": {"job_dir": "/x"}}), job="j"
    )
    assert in_job_dir.seen is not None and in_job_dir.seen.kind == "lmdb"  # exact, on disk
    assert not BackendPlan.decide(Settings(), job="j").dedup.approximate


@pytest.mark.parametrize(
    ("options", "problem"),
    [({"false_positive_rate": 0.0}, "must be > 0 and <= 0.5"), ({"capacity": 0}, "must be at least 1")],
)
def test_bad_settings_are_named(options: dict[str, float], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        DedupSettings(**options)  # type: ignore[arg-type]


def test_a_cluster_keeps_an_approximate_seen_set_on_its_redis() -> None:
    from mocra_cluster import ClusterConfig

    node = ClusterConfig(node_id="n1", addr="127.0.0.1:1", data_dir="/tmp/none", password="x")
    approximate = {"dedup": {"approximate": True}}
    on_redis = BackendPlan.decide(
        Settings.from_mapping({**approximate, "queue": {"url": REDIS_URL}}), job="j", cluster=node
    )
    assert on_redis.seen is not None and on_redis.seen.kind == "redis"
    on_nats = BackendPlan.decide(
        Settings.from_mapping({**approximate, "queue": {"url": "nats://127.0.0.1:4222"}}),
        job="j",
        cluster=node,
    )
    assert on_nats.seen is not None and on_nats.seen.kind == "cluster"  # no Redis: the Raft state's exact set
    exact = BackendPlan.decide(Settings.from_mapping({"queue": {"url": REDIS_URL}}), job="j", cluster=node)
    assert exact.seen is not None and exact.seen.kind == "cluster"


async def test_a_new_series_ignores_what_a_deleted_one_left(namespace: str) -> None:
    """A filter is started on fresh zeros even where a series deleted by its hash alone left segments."""
    async with RedisBloomSeenSet(REDIS_URL, namespace=namespace, capacity=100) as seen:
        await seen.add_if_absent([fp(n) for n in range(300)])  # filters 0 and 1
        async with redis.asyncio.Redis.from_url(REDIS_URL) as raw:
            await raw.delete(seen.name)  # only the hash: the segments stay
        assert sum(await seen.add_if_absent([fp(n) for n in range(300)])) > 290  # stale bits: ~200
