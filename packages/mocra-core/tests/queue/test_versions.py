"""Versioned messages: a reader reads every minor of its major and dead-letters a newer major with the
reason, on every backend that encodes (LMDB, Redis, NATS, Kafka; the memory queue passes objects).

The newer messages are built as raw bytes (lists and dicts), the way a later version would write them:
one more field in the envelope, in the request record, in the routing and in the routed pair.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

import anyio
import msgspec
import pytest

from mocra_core import PoisonMessage
from mocra_core.engine import EngineCodec
from mocra_core.http import Request, Response, Routed, Routing
from mocra_core.modules import Task
from mocra_core.queue import (
    DeadLetter,
    Delivery,
    Fence,
    KafkaQueue,
    LmdbQueue,
    NatsJetStreamQueue,
    QueueBackend,
    RedisStreamsQueue,
)
from mocra_core.queue._codec import decode_problem
from mocra_core.queue._envelope import ENVELOPE_MINOR, ENVELOPE_VERSION, pack, unpack

REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")  # as in conftest.py
NATS_URL = os.environ.get("MOCRA_TEST_NATS_URL", "nats://127.0.0.1:4222")
T = "fetch"
LANE0 = f"{2**63:016x}"  # Redis: the stream of priority 0 is `{namespace}:{topic}:q:{LANE0}`
UPGRADE = "message format 2.x; this worker reads 1.x: upgrade it"
URL = "https://example.com/p/1"
ROUTING = Routing("tree/tree", run="tree:-:1", depth=2)


def newer_minor_payload(url: str = URL) -> bytes:
    """A routed request of the next minor: a field appended to the record, the routing and the pair."""
    record = [*msgspec.structs.astuple(Request(url, meta={"n": 1}).to_record()), "a newer field"]
    routing = [*msgspec.structs.astuple(ROUTING), {"a": "newer field"}]
    return b"Q" + msgspec.msgpack.encode([record, routing, ["a", "newer", "element"]])


def newer_major_payload() -> bytes:
    """A payload of the next major: its major as a byte before the tag, then bytes this one cannot read."""
    return b"\x02Q" + msgspec.msgpack.encode({"request": URL, "routing": "tree/tree"})


def envelope(body: bytes, id: str, **extra: Any) -> bytes:
    """The bytes of an envelope as a dict, with `extra` fields (a later version's)."""
    return msgspec.msgpack.encode({"id": id, "topic": T, "body": body, "created": 1767225600.0, **extra})


# ------------------------------------------------------------------------------------------- envelope


def test_todays_envelopes_without_a_version_field_are_read_as_1_0() -> None:
    env = unpack(envelope(b"x", "old", attempt=2))  # what workers before versions wrote: no `v`, no `minor`
    assert (env.id, env.body, env.attempt, env.v, env.minor) == ("old", b"x", 2, 1, 0)


def test_an_envelope_of_a_newer_minor_is_read_and_its_new_fields_ignored() -> None:
    env = unpack(envelope(b"x", "n1", v=1, minor=ENVELOPE_MINOR + 1, trace={"span": "abc"}, key="site"))
    assert (env.id, env.body, env.key, env.v, env.minor) == ("n1", b"x", "site", 1, ENVELOPE_MINOR + 1)


@pytest.mark.parametrize(
    "data",
    [
        envelope(b"x", "m2", v=2, route="new"),  # a major whose envelope still fits this one's fields
        msgspec.msgpack.encode({"v": 2, "msg": "m2", "payload": b"x"}),  # one whose envelope does not
        msgspec.msgpack.encode({"v": 7, "minor": 3}),
    ],
)
def test_an_envelope_of_a_newer_major_is_poison_saying_upgrade(data: bytes) -> None:
    with pytest.raises(PoisonMessage) as caught:
        unpack(data)
    major = msgspec.msgpack.decode(data)["v"]
    assert caught.value.reason == f"message format {major}.x; this worker reads 1.x: upgrade it"


def test_an_envelope_of_an_older_major_is_poison_saying_so() -> None:
    with pytest.raises(PoisonMessage, match=r"^message format 0\.x; this worker reads 1\.x: it no longer"):
        unpack(envelope(b"x", "m0", v=0))


def test_garbage_is_still_an_undecodable_envelope() -> None:
    for data in (b"\xc1 not msgpack", msgspec.msgpack.encode({"v": "two"}), msgspec.msgpack.encode([1])):
        with pytest.raises(PoisonMessage, match="^undecodable envelope"):
            unpack(data)


def test_an_envelope_this_worker_sends_again_carries_its_own_minor() -> None:
    newer = unpack(envelope(b"x", "n1", minor=ENVELOPE_MINOR + 5, trace="dropped"))
    again = msgspec.msgpack.decode(pack(newer))
    assert again.get("minor", 0) == ENVELOPE_MINOR and "trace" not in again
    assert again.get("v", 1) == ENVELOPE_VERSION == 1


# ---------------------------------------------------------------------------------------- payloads


def test_a_routed_request_of_a_newer_minor_is_read_with_its_known_fields() -> None:
    routed = EngineCodec().decode(newer_minor_payload())
    assert isinstance(routed, Routed)
    assert (routed.request.url, routed.request.meta, routed.routing) == (URL, {"n": 1}, ROUTING)


def test_a_response_and_a_task_of_a_newer_minor_are_read() -> None:
    codec = EngineCodec()
    request = [*msgspec.structs.astuple(Request(URL).to_record()), "newer"]
    routing = [*msgspec.structs.astuple(ROUTING), 9]
    record = [URL, 200, [["a", "b"]], b"<p>", request, 0.5, routing, {"claim": "r/1", "token": 2}, "newer"]
    response = codec.decode(b"R" + msgspec.msgpack.encode(record))
    assert isinstance(response, Response)
    assert (response.url, response.status, response.request.url, response.routing) == (URL, 200, URL, ROUTING)
    assert response.fence == Fence("r/1", 2)  # appended in 1.1
    task = codec.decode(b"t" + msgspec.msgpack.encode({"module": "tree", "node": "tree", "later": [1]}))
    assert task == Task(module="tree", node="tree")


def test_a_payload_of_a_newer_major_is_poison_saying_upgrade() -> None:
    with pytest.raises(PoisonMessage) as caught:
        EngineCodec().decode(newer_major_payload())
    assert caught.value.reason == UPGRADE
    assert decode_problem(caught.value) == UPGRADE
    with pytest.raises(ValueError, match="unknown payload tag"):  # not a major byte: foreign bytes
        EngineCodec().decode(b"Zxyz")


# ------------------------------------------------------------------------------- on every backend


class RawBytes:
    """A codec that passes bytes through: what a later version's codec wrote, put in an LMDB queue."""

    def encode(self, obj: object, /) -> bytes:
        assert isinstance(obj, bytes)
        return obj

    def decode(self, data: bytes, /) -> object:
        return data


async def put_raw(backend: str, queue: QueueBackend, namespace: str, data: bytes, kafka_url: str) -> None:
    """Write envelope bytes to the priority-0 lane of topic `T` with the broker's own client."""
    if backend == "redis":
        import redis.asyncio as aioredis

        client = aioredis.Redis.from_url(REDIS_URL)
        try:
            await client.xadd(f"{namespace}:{{{T}}}:q:{LANE0}", {"e": data})
        finally:
            await client.aclose()
    elif backend == "nats":
        import nats

        assert isinstance(queue, NatsJetStreamQueue)
        connection = await nats.connect(NATS_URL)
        try:
            await connection.jetstream().publish(queue.names.lane_subject(T, 0), data)
        finally:
            await connection.close()
    else:
        from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]

        producer = AIOKafkaProducer(bootstrap_servers=kafka_url.removeprefix("kafka://"))
        await producer.start()
        try:
            await producer.send_and_wait(f"{namespace}.{T}.0", data, partition=0)
        finally:
            await producer.stop()


async def take_and_bury(
    queue: QueueBackend, deliveries: int, dead: int
) -> tuple[list[Delivery], list[DeadLetter]]:
    """Consume until `deliveries` came and `dead` letters are in the DLQ (Kafka buries as it reads)."""
    got: list[Delivery] = []
    with anyio.fail_after(20):
        while len(got) < deliveries:
            got += await queue.consume(T, group="workers", max_messages=10, wait=0.5)
        await queue.ack(got)
        while len(letters := list(await queue.dead_letters(T))) < dead:
            await queue.consume(T, group="workers", max_messages=10, wait=0.2)
    return got, letters


@pytest.mark.anyio
@pytest.mark.parametrize("backend", ["redis", "nats", "kafka"])
async def test_brokers_read_a_newer_minor_and_dead_letter_a_newer_major_with_the_reason(
    backend: str, request: pytest.FixtureRequest
) -> None:
    namespace: str = request.getfixturevalue(f"{backend}_namespace")
    kafka_url = request.getfixturevalue("kafka_url") if backend == "kafka" else ""
    codec = EngineCodec()
    queue: QueueBackend
    if backend == "redis":
        queue = RedisStreamsQueue(REDIS_URL, codec=codec, namespace=namespace)
    elif backend == "nats":
        queue = NatsJetStreamQueue(NATS_URL, codec=codec, namespace=namespace)
    else:
        options = request.getfixturevalue("kafka_options")
        queue = KafkaQueue(kafka_url, codec=codec, namespace=namespace, **options)
    minor = envelope(newer_minor_payload(), "minor", minor=ENVELOPE_MINOR + 1, trace={"span": "abc"})
    major = envelope(newer_minor_payload(), "major", v=2, route="new")
    major_payload = envelope(newer_major_payload(), "major-payload")  # a 1.x envelope, a 2.x payload
    async with queue:
        await queue.publish(T, [Routed(Request("https://example.com/p/0"), ROUTING)])  # makes the lane
        for data in (minor, major, major_payload):
            await put_raw(backend, queue, namespace, data, kafka_url)
        got, letters = await take_and_bury(queue, 2, 2)

        assert sorted(d.id for d in got)[1] == "minor"
        newer = next(d.payload for d in got if d.id == "minor")
        assert isinstance(newer, Routed)
        assert (newer.request.url, newer.request.meta, newer.routing) == (URL, {"n": 1}, ROUTING)
        assert [letter.reason for letter in letters] == [UPGRADE, UPGRADE]
        payloads = {letter.payload for letter in letters}
        assert payloads == {major, newer_major_payload()}  # kept, bytes intact, for a newer worker
        assert any(letter.id == "major-payload" for letter in letters)
        assert await queue.pending(T) == 0


@pytest.mark.anyio
async def test_lmdb_reads_a_newer_minor_and_dead_letters_a_newer_major_with_the_reason(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "queue"
    async with LmdbQueue(path, codec=RawBytes()) as written_by_a_newer_version:
        await written_by_a_newer_version.publish(T, [newer_minor_payload(), newer_major_payload()])
    async with LmdbQueue(path, codec=EngineCodec()) as queue:
        await queue.publish(T, [Routed(Request("https://example.com/p/0"), ROUTING)])
        got, [letter] = await take_and_bury(queue, 2, 1)

        newer = got[0].payload
        assert isinstance(newer, Routed)
        assert (newer.request.url, newer.request.meta, newer.routing) == (URL, {"n": 1}, ROUTING)
        assert (letter.reason, letter.payload) == (UPGRADE, newer_major_payload())
        assert await queue.pending(T) == 0
