"""What only the NATS JetStream backend does: several instances (workers) on one queue, foreign bytes on
the wire, an unreachable or restarted server. Each test uses a fresh namespace on the NATS of conftest."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import nats
import pytest

from mocra_core import BackendUnavailable, ConfigError
from mocra_core.backends.nats._pull import Puller
from mocra_core.queue import MsgpackCodec, NatsJetStreamQueue, open_queue

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator, Iterator

    from nats.js import JetStreamContext

    from mocra_core.queue import Delivery

pytestmark = pytest.mark.anyio

NATS_URL = os.environ.get("MOCRA_TEST_NATS_URL", "nats://127.0.0.1:4222")  # as in conftest.py
NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"
T = "fetch"


@pytest.fixture
def namespace(nats_namespace: str) -> str:
    return nats_namespace


def open_(namespace: str, url: str = NATS_URL, **options: Any) -> NatsJetStreamQueue:
    return NatsJetStreamQueue(url, codec=MsgpackCodec(), namespace=namespace, **options)


async def take(queue: NatsJetStreamQueue, n: int = 1, *, wait: float = 0.0) -> list[Delivery]:
    return list(await queue.consume(T, group="workers", max_messages=n, wait=wait))


@asynccontextmanager
async def native(url: str = NATS_URL) -> AsyncIterator[JetStreamContext]:
    nc = await nats.connect(url)
    try:
        yield nc.jetstream()
    finally:
        await nc.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# ----------------------------------------------------------------------------------------------- wire


async def test_garbage_written_to_the_stream_is_dead_lettered_and_never_handed_out(namespace: str) -> None:
    async with open_(namespace) as queue:
        await queue.publish(T, ["before"])
        async with native() as js:
            await js.publish(queue.names.lane_subject(T, 0), b"\xc1 not msgpack")
            await js.publish(queue.names.lane_subject(T, 0), b"\x92\x01\x02")  # msgpack, not an envelope
            await js.publish(queue.names.key_subject(T, "0123456789abcdef0123"), b"")
        await queue.publish(T, ["after"], key="site")
        assert await queue.pending(T) == 5
        got = await take(queue, 10)
        assert sorted(d.payload for d in got) == ["after", "before"]  # type: ignore[type-var]
        assert await queue.pending(T) == 2
        letters = await queue.dead_letters(T)
        assert len(letters) == 3
        assert {letter.payload for letter in letters} == {b"\xc1 not msgpack", b"\x92\x01\x02", b""}
        assert all("undecodable envelope" in letter.reason for letter in letters)
        await queue.ack(got)
        assert await queue.pending(T) == 0


async def test_an_undecodable_payload_is_dead_lettered_with_its_bytes(namespace: str) -> None:
    async with NatsJetStreamQueue(NATS_URL, codec=MsgpackCodec(int), namespace=namespace) as queue:
        await queue.publish(T, [1])
        async with native() as js:
            env = {"id": "x1", "topic": T, "body": MsgpackCodec().encode("not an int"), "created": 1.0}
            await js.publish(queue.names.lane_subject(T, 0), msgspec.msgpack.encode(env))
        [one] = await take(queue, 10)
        assert one.payload == 1
        [letter] = await queue.dead_letters(T)
        assert (letter.id, letter.payload) == ("x1", MsgpackCodec().encode("not an int"))
        assert "undecodable payload" in letter.reason


async def test_an_envelope_of_a_newer_minor_version_is_read(namespace: str) -> None:
    async with open_(namespace) as queue:
        newer = {
            "id": "n1",
            "topic": T,
            "body": MsgpackCodec().encode({"url": "https://example.com/"}),
            "created": 1767225600.0,
            "v": 1,
            "trace": {"span": "abc"},  # a field this version does not know
            "key": None,
        }
        async with native() as js:
            await js.publish(queue.names.lane_subject(T, 0), msgspec.msgpack.encode(newer))
        [d] = await take(queue)
        assert (d.id, d.payload, d.created, d.attempt) == (
            "n1",
            {"url": "https://example.com/"},
            1767225600.0,
            1,
        )


# ---------------------------------------------------------------------------------- several instances


async def test_two_instances_share_a_key_one_at_a_time(namespace: str) -> None:
    async with open_(namespace) as a, open_(namespace) as b:
        await a.publish(T, ["k1", "k2"], key="site")
        await a.publish(T, ["u1"])
        [k1] = await take(a)
        assert k1.payload == "k1"
        assert [d.payload for d in await take(b, 10)] == ["u1"]  # k2 waits for k1's lease
        got: list[Delivery] = []

        async def other() -> None:
            got.extend(await take(b, 10, wait=30))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(other)
                await anyio.sleep(0.1)
                assert not got
                await a.ack([k1])
        assert [d.payload for d in got] == ["k2"]


async def test_pending_counts_what_other_workers_hold(namespace: str) -> None:
    async with open_(namespace) as a, open_(namespace) as b:
        await a.publish(T, ["x", "y"])
        await a.publish(T, ["later"], delay=60)
        [x] = await take(a)
        assert await b.pending(T) == 3  # ready, delayed and leased elsewhere
        await a.ack([x])
        assert await b.pending(T) == 2


async def test_a_lane_rings_its_bell_once_a_second_and_a_key_every_time(namespace: str) -> None:
    rung: list[bytes] = []

    async def heard(msg: Any) -> None:
        rung.append(msg.data)

    connection = await nats.connect(NATS_URL)
    try:
        async with open_(namespace) as queue:
            await connection.subscribe(queue.names.bell_subject(T), cb=heard)
            await connection.flush()
            for n in range(20):
                await queue.publish(T, [n])
            await queue.publish(T, ["high"], priority=5)
            await queue.publish(T, ["k1"], key="site-a")
            await queue.publish(T, ["k2"], key="site-a")
            await connection.flush()
            await anyio.sleep(0.2)
    finally:
        await connection.close()

    assert rung.count(b"l0") == 1  # consumers that know a lane have a pull request waiting there
    assert rung.count(b"l5") == 1  # a lane new to them is rung at once
    assert len([bell for bell in rung if bell.startswith(b"k")]) == 2


async def test_workers_that_disagree_on_the_ack_wait_are_warned(
    namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with (
        open_(namespace, visibility_timeout=30) as first,
        open_(namespace, visibility_timeout=60) as same,  # the same ack_wait: the liveness timeout, 10 s
    ):
        await first.publish(T, ["a"])
        await take(first)
        await take(same)
        assert "disagree" not in caplog.text
        async with open_(namespace, visibility_timeout=5) as other:  # the shorter one is the ack_wait
            await take(other)

    assert (
        "disagree on the consumers' ack_wait (queue.liveness_timeout, or queue.visibility_timeout if shorter)"
        in caplog.text
    )
    assert ": 10 s before, 5 s for this one" in caplog.text


async def test_concurrent_acks_share_a_round_trip(namespace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from mocra_core.backends.nats._wire import Replies

    calls = 0
    request_all = Replies.request_all

    async def counted(self: Replies, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return await request_all(self, *args, **kwargs)

    async with open_(namespace) as queue:
        await queue.publish(T, [str(n) for n in range(20)])
        deliveries = await take(queue, 20)
        assert len(deliveries) == 20
        monkeypatch.setattr(Replies, "request_all", counted)
        async with anyio.create_task_group() as tg:
            for delivery in deliveries:
                tg.start_soon(queue.ack, [delivery])
        assert calls <= 2  # the first alone, the 19 that came while it was on the wire together
        assert await queue.pending(T) == 0


async def test_a_delayed_message_counts_attempts_from_its_first_real_delivery(namespace: str) -> None:
    async with open_(namespace) as queue:
        await queue.publish(T, ["later"], delay=0.2)
        assert await take(queue) == []  # held back: not an attempt
        with anyio.fail_after(5):
            [first] = await take(queue, wait=5)
        await queue.nack(first)
        [second] = await take(queue, wait=5)
        assert (first.attempt, second.attempt) == (1, 2)
        await queue.ack([second])


async def test_a_worker_that_dies_leaves_its_lease_to_another(namespace: str) -> None:
    async with open_(namespace, visibility_timeout=0.5) as b:
        async with open_(namespace, visibility_timeout=0.5) as a:
            await a.publish(T, ["x"])
            [first] = await take(a)
        # `a` closed without acking: the lease expires on the server
        with anyio.fail_after(10):
            [again] = await take(b, wait=30)
        assert (again.id, again.payload, again.attempt) == (first.id, "x", 2)
        await b.ack([again])
        assert await b.pending(T) == 0


async def test_messages_buffered_at_close_are_handed_back(namespace: str) -> None:
    async with open_(namespace) as b:
        async with open_(namespace) as a:
            await a.publish(T, ["k1", "k2"], key="site")
            [k1] = await take(a)
            assert await take(a) == []  # leaves a pull request on the key for a moment
            await a.ack([k1])  # k2 is pushed to that request: buffered in `a`
            await anyio.sleep(0.05)
        with anyio.fail_after(10):
            [k2] = await take(b, wait=30)  # handed back by `a`'s close, not after the visibility timeout
        assert (k2.payload, k2.attempt) == ("k2", 2)  # the server counted its delivery to `a`


async def test_a_cancelled_consume_leases_nothing(namespace: str) -> None:
    async with open_(namespace) as queue:
        await queue.publish(T, ["warm up"])  # the lane is known: the waiting consume leaves a pull request
        await queue.ack(await take(queue))
        with anyio.move_on_after(0.2):
            await take(queue, wait=30)
        await queue.publish(T, ["x"])  # caught by the cancelled consume's pull request, if it is still there
        with anyio.fail_after(5):
            [x] = await take(queue, wait=5)
        assert (x.payload, x.attempt) == ("x", 1)


async def test_a_fetch_the_server_answers_late_or_never_neither_stalls_nor_loses(
    namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # nats-server 2.9 queues a `no_wait` pull request that counted on a message about to go to another
    # worker's waiting request, and then never answers it (seen mid-crawl: a 5 s stall of the listing
    # chain). That race cannot be had on demand: here the request is held back instead, and sent later.
    held: list[tuple[str, dict[str, object], str]] = []
    pull = Puller._pull

    async def holding_pull(puller: Puller, consumer: str, request: dict[str, object], reply: str) -> None:
        if request.get("no_wait") and not held:
            held.append((consumer, request, reply))
            return
        await pull(puller, consumer, request, reply)

    async with open_(namespace) as queue:
        await queue.publish(T, ["warm up"])
        await queue.ack(await take(queue))  # the lane is known
        monkeypatch.setattr(Puller, "_pull", holding_pull)
        await queue.publish(T, ["x"])
        started = anyio.current_time()
        assert await take(queue) == []  # no answer
        assert anyio.current_time() - started < 1.0  # it waited 5 s
        puller = queue._consumers.pullers[(T, "workers")]
        await pull(puller, *held[0])  # the answer comes after all: `x`, leased to this queue
        with anyio.fail_after(5):
            [x] = await take(queue, wait=3)
        assert (x.payload, x.attempt) == ("x", 1)  # kept, not left to come back after the lease
        await queue.ack([x])
        assert await queue.pending(T) == 0


async def test_a_second_group_on_a_topic_is_refused(namespace: str) -> None:
    async with open_(namespace) as a, open_(namespace) as b:
        await a.publish(T, ["x"])
        await take(a)
        with pytest.raises(ValueError, match="another group"):
            await b.consume(T, group="others", wait=0)
        with pytest.raises(ValueError, match="consumed by group"):
            await a.consume(T, group="others", wait=0)
        await a.publish("keyed", ["k"], key="site")
        await a.consume("keyed", group="workers", wait=0)
        with pytest.raises(ValueError, match="another group"):
            await b.consume("keyed", group="others", wait=0)


# -------------------------------------------------------------------------------------- the server


async def test_an_unreachable_server_fails_promptly_naming_the_redacted_url() -> None:
    url = f"nats://mocra:s3cret@127.0.0.1:{free_port()}"
    start = anyio.current_time()
    with pytest.raises(BackendUnavailable) as caught:
        async with open_("unreachable", url, timeout=1.0):
            pass
    assert anyio.current_time() - start < 5
    assert "mocra:***@127.0.0.1" in str(caught.value)
    assert "s3cret" not in str(caught.value)
    assert not str(caught.value).endswith("cannot connect: "), "the reason is missing"


def start_server(store: pathlib.Path | None, port: int) -> subprocess.Popen[bytes]:
    """A nats-server of our own: with JetStream on `store`, or without JetStream if `store` is None."""
    jetstream = [] if store is None else ["-js", "-sd", str(store)]
    args = [NATS_SERVER, *jetstream, "-a", "127.0.0.1", "-p", str(port)]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(10)


@contextmanager
def nats_server(store: pathlib.Path, port: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """A nats-server of our own on `port`; the list holds the current process (restarts replace it)."""
    processes = [start_server(store, port)]
    try:
        yield processes
    finally:
        if processes[-1].poll() is None:
            stop_server(processes[-1])


async def wait_until_listening(port: int) -> None:
    with anyio.fail_after(10):
        while True:
            try:
                await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                return
            except OSError:
                await anyio.sleep(0.02)


@pytest.mark.skipif(not os.path.exists(NATS_SERVER), reason="needs the nats-server binary")
async def test_a_restarted_server_is_reconnected_and_work_continues(tmp_path: pathlib.Path) -> None:
    port = free_port()
    with nats_server(tmp_path, port) as server:
        await wait_until_listening(port)
        async with open_("restart", f"nats://127.0.0.1:{port}", timeout=10.0) as queue:
            await queue.publish(T, ["a", "b", "c"])
            [a] = await take(queue)
            await queue.ack([a])
            [b] = await take(queue)  # leased before the restart, acked after it
            got: list[Delivery] = []

            async def consumer() -> None:  # waits through the restart
                got.extend(await take(queue, 10, wait=30))

            with anyio.fail_after(20):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(consumer)
                    stop_server(server[0])
                    await anyio.sleep(0.3)
                    server.append(start_server(tmp_path, port))
                    await wait_until_listening(port)
                    await queue.publish(T, ["d"])  # rides out the reconnect
                    await queue.ack([b])
            rest = got + await take(queue, 10, wait=1)
            assert sorted(d.payload for d in rest) == ["c", "d"]  # type: ignore[type-var]
            await queue.ack(rest)
            assert await queue.pending(T) == 0


@pytest.mark.skipif(not os.path.exists(NATS_SERVER), reason="needs the nats-server binary")
async def test_a_server_without_jetstream_is_named_as_such() -> None:
    port = free_port()
    server = start_server(None, port)
    try:
        await wait_until_listening(port)
        with pytest.raises(BackendUnavailable, match=r"JetStream does not answer: is it enabled on the"):
            async with open_("nojs", f"nats://127.0.0.1:{port}", timeout=1.0):
                pass
    finally:
        stop_server(server)


# ------------------------------------------------------------------------------------------- setup


def test_open_queue_opens_nats_urls() -> None:
    queue = open_queue(NATS_URL, codec=MsgpackCodec(), namespace="nowhere", visibility_timeout=9)
    assert isinstance(queue, NatsJetStreamQueue)
    assert (queue.names.ns, queue.visibility_timeout) == ("nowhere", 9)
    with pytest.raises(ConfigError, match="codec"):
        open_queue(NATS_URL)


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="namespace"):
        open_("a.b")
    with pytest.raises(ValueError, match="visibility_timeout"):
        open_("ok", visibility_timeout=0)
    with pytest.raises(ValueError, match="storage"):
        open_("ok", storage="disk")
