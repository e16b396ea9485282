"""The public surface of `mocra_core.queue` is a decision: changing it must change this test."""

from __future__ import annotations

import mocra_core.queue


def test_queue_exports() -> None:
    assert mocra_core.queue.__all__ == (
        "Codec",
        "DeadLetter",
        "Delivery",
        "Fence",
        "KafkaQueue",
        "LmdbQueue",
        "MemoryQueue",
        "MsgpackCodec",
        "NatsJetStreamQueue",
        "QueueBackend",
        "RedisStreamsQueue",
        "SpillingQueue",
        "open_queue",
    )
    for name in mocra_core.queue.__all__:
        assert getattr(mocra_core.queue, name).__module__ == "mocra_core.queue"
