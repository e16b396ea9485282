"""Liveness on Redis and NATS: a killed consumer's leases come back within `liveness_timeout`, a slow live
consumer's never do before the visibility timeout."""

from __future__ import annotations

import sys
import textwrap
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from mocra_core import ConfigError
from mocra_core.config import Settings
from mocra_core.queue import MsgpackCodec, NatsJetStreamQueue, RedisStreamsQueue

from .conftest import NATS_URL, REDIS_URL

if TYPE_CHECKING:
    from collections.abc import Callable

    from mocra_core.queue import QueueBackend

pytestmark = pytest.mark.anyio

T = "fetch"
LIVENESS = 1.0


@pytest.fixture(params=["redis", "nats"])
def open_(request: pytest.FixtureRequest) -> Callable[..., QueueBackend]:
    """Open a queue of the backend under test in a fresh namespace (every call: the same namespace)."""
    if request.param == "redis":
        namespace = request.getfixturevalue("redis_namespace")
        return lambda **options: RedisStreamsQueue(
            REDIS_URL, codec=MsgpackCodec(), namespace=namespace, **options
        )
    namespace = request.getfixturevalue("nats_namespace")
    return lambda **options: NatsJetStreamQueue(
        NATS_URL, codec=MsgpackCodec(), namespace=namespace, **options
    )


def _source(queue: QueueBackend) -> str:
    """Python that opens the same queue, leases one message, says so and waits to be killed."""
    if isinstance(queue, RedisStreamsQueue):
        opening = f"RedisStreamsQueue({REDIS_URL!r}, namespace={queue.namespace!r}"
    else:
        assert isinstance(queue, NatsJetStreamQueue)
        opening = f"NatsJetStreamQueue({NATS_URL!r}, namespace={queue.names.ns!r}"
    return textwrap.dedent(f"""
        import anyio, sys
        from mocra_core.queue import MsgpackCodec, NatsJetStreamQueue, RedisStreamsQueue

        async def main():
            async with {opening}, codec=MsgpackCodec(), liveness_timeout={LIVENESS}) as queue:
                [delivery] = await queue.consume({T!r}, group="g", wait=10)
                print(delivery.payload, flush=True)
                await anyio.sleep_forever()

        anyio.run(main)
    """)


async def test_a_killed_consumers_lease_comes_back_within_the_liveness_timeout(
    open_: Callable[..., QueueBackend],
) -> None:
    async with open_(liveness_timeout=LIVENESS) as survivor:  # visibility timeout: 300 s by default
        await survivor.publish(T, ["x"])
        async with await anyio.open_process([sys.executable, "-c", _source(survivor)]) as doomed:
            assert doomed.stdout is not None
            said = b""
            with anyio.fail_after(20):
                while not said.endswith(b"\n"):
                    said += await doomed.stdout.receive()
            assert said == b"x\n", said  # it holds the lease
            doomed.kill()  # SIGKILL: nothing is handed back
            await doomed.wait()
        started = anyio.current_time()
        got = await survivor.consume(T, group="g", wait=10)
        took = anyio.current_time() - started
        [again] = got
        assert (again.payload, again.attempt) == ("x", 2)
        assert took < 5 * LIVENESS  # not the visibility timeout (a correctness bound, not a speed figure)
        await survivor.ack([again])
        assert await survivor.pending(T) == 0


async def test_a_slow_live_consumers_lease_is_kept_past_the_liveness_timeout(
    open_: Callable[..., QueueBackend],
) -> None:
    options: dict[str, Any] = {"liveness_timeout": LIVENESS, "visibility_timeout": 30}
    async with open_(**options) as slow, open_(**options) as other:
        await slow.publish(T, ["x"])
        [held] = await slow.consume(T, group="g", wait=5)
        assert await other.consume(T, group="g", wait=4 * LIVENESS) == []  # kept alive all along
        await slow.ack([held])  # still its lease: the ack counts
        assert await other.pending(T) == 0


@pytest.mark.parametrize("value", [0, -1.0, float("nan")])
def test_a_liveness_timeout_that_is_not_positive_is_refused(value: float) -> None:
    with pytest.raises(ConfigError, match="liveness_timeout"):
        Settings.from_mapping({"queue": {"liveness_timeout": value}})
    with pytest.raises(ValueError, match="liveness_timeout must be > 0"):
        RedisStreamsQueue(REDIS_URL, codec=MsgpackCodec(), liveness_timeout=value)
