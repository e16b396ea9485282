"""Only `RedisState`: key TTLs, namespaces, its client, the lazy extra, bans shared across processes."""

from __future__ import annotations

import subprocess
import sys
import uuid
from typing import TYPE_CHECKING

import anyio
import pytest
from redis.asyncio import Redis

from mocra_proxy import ProxyHealth, ProxyPool, RedisState, StaticSource

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.anyio

REDIS_URL = "redis://127.0.0.1:6379/0"
P1 = "http://10.0.0.1:8080"


@pytest.fixture
async def client() -> AsyncIterator[Redis]:
    redis = Redis.from_url(REDIS_URL)
    try:
        yield redis
    finally:
        await redis.aclose()


def namespace() -> str:
    return f"test-{uuid.uuid4().hex}"


async def test_every_save_renews_the_ttl_and_expired_records_are_gone(client: Redis) -> None:
    ns = namespace()
    async with RedisState(client, namespace=ns, ttl=60) as state:
        await state.save_health(P1, ProxyHealth(failures=1, last_used=1.0))
        assert 0 < await client.pttl(f"mocra-proxy:{ns}:health:{P1}") <= 60_000
    async with RedisState(client, namespace=ns, ttl=None) as state:
        await state.save_health(P1, ProxyHealth(failures=2, last_used=2.0))
        assert await client.pttl(f"mocra-proxy:{ns}:health:{P1}") == -1  # no expiry
    async with RedisState(client, namespace=ns, ttl=0.05) as state:
        await state.save_health(P1, ProxyHealth(failures=3, last_used=3.0))
        for _ in range(250):  # Redis expires the key on its own clock; wait up to 5 s for it
            if not (await state.load([P1], []))[0]:
                break
            await anyio.sleep(0.02)
        else:
            pytest.fail("the record did not expire")
    assert await client.ping()  # a client passed in stays open


async def test_namespaces_share_nothing_and_clear_removes_only_its_own(client: Redis) -> None:
    job_a, job_b = RedisState(client, namespace=namespace()), RedisState(client, namespace=namespace())
    await job_a.save_health(P1, ProxyHealth(failures=1))
    assert (await job_b.load([P1], []))[0] == {}
    await job_b.save_health(P1, ProxyHealth(successes=1))
    assert await job_a.clear() == 1
    assert (await job_b.load([P1], []))[0][P1].successes == 1
    assert await job_b.clear() == 1


async def test_repr_and_errors_name_the_store_without_credentials() -> None:
    state = RedisState("redis://:s3cret@127.0.0.1:6379/0", namespace="job-x")
    assert repr(state) == "RedisState('redis://127.0.0.1:6379/0', namespace='job-x')"
    await state.aclose()
    assert (
        RedisState(Redis(host="127.0.0.1", port=6379, db=3), namespace="n").store
        == "redis://127.0.0.1:6379/3"
    )


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_import_mocra_proxy_does_not_import_redis() -> None:
    code = (
        "import sys, mocra_proxy\n"
        "assert 'redis' not in sys.modules, 'import'\n"
        "mocra_proxy.RedisState\n"
        "assert 'redis' not in sys.modules, 'attribute'\n"
        "print('ok')"
    )
    done = run_python(code)
    assert done.stdout.strip() == "ok", done.stderr


@pytest.mark.slow
def test_a_missing_extra_is_named() -> None:
    code = (
        "import sys; sys.modules['redis'] = None\n"
        "from mocra_proxy import RedisState, StateError\n"
        "try:\n"
        "    RedisState('redis://:pw@127.0.0.1:6379/0', namespace='x')\n"
        "except StateError as exc:\n"
        "    print(exc)"
    )
    done = run_python(code)
    assert done.stdout.strip() == (
        "pool state at redis://127.0.0.1:6379/0: RedisState needs redis-py: pip install 'mocra-proxy[redis]'"
    ), done.stderr


REPORTER = """
import sys, anyio
from mocra_proxy import Outcome, Proxy, ProxyPool, RedisState, StaticSource

async def main(url: str, namespace: str) -> None:
    source = StaticSource(["http://10.0.0.1:8080", "http://10.0.0.2:8080", "http://10.0.0.3:8080"])
    async with RedisState(url, namespace=namespace) as state:
        async with ProxyPool([source], state=state, cooldown=300, max_errors=3) as pool:
            await pool.report(Proxy.parse("http://10.0.0.1:8080"), Outcome(ok=False, status=403))
            dead = Proxy.parse("http://10.0.0.2:8080")
            for _ in range(3):
                await pool.report(dead, Outcome(ok=False, error="ConnectError"))
            print(len(pool.proxies))

anyio.run(main, sys.argv[1], sys.argv[2])
"""


@pytest.mark.slow
async def test_bans_and_evictions_are_shared_across_processes() -> None:
    ns = namespace()
    source = StaticSource(["http://10.0.0.1:8080", "http://10.0.0.2:8080", "http://10.0.0.3:8080"])
    async with RedisState(REDIS_URL, namespace=ns) as state:
        try:
            async with ProxyPool([source], state=state, cooldown=300, max_errors=3) as pool:
                for _ in range(3):  # this process has used every proxy before the other one's reports
                    async with pool.lease() as lease:
                        await lease.ok()
                done = await anyio.run_process([sys.executable, "-c", REPORTER, REDIS_URL, ns], check=False)
                assert done.returncode == 0 and done.stdout.decode().strip() == "2", done.stderr.decode()
                await pool.sync()
                assert [p.id for p in pool.proxies] == [P1, "http://10.0.0.3:8080"]  # .2 evicted
                for _ in range(5):
                    async with pool.lease() as lease:
                        assert lease.proxy.id == "http://10.0.0.3:8080"  # .1 is banned
                        await lease.ok()
        finally:
            await state.clear()
