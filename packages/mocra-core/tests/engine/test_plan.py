"""`BackendPlan`: which backends a run uses, decided once from its settings."""

from __future__ import annotations

from typing import Any

import pytest

from mocra_core import ConfigError
from mocra_core.config import Settings
from mocra_core.engine import BackendPlan

REDIS = "redis://127.0.0.1:6379/15"
NATS = "nats://127.0.0.1:4222"


def plan(queue: str = "memory://", coordination: str | None = None, **crawl: Any) -> BackendPlan:
    settings = {"queue": {"url": queue}, "coordination": {"url": coordination}, "crawl": crawl}
    return BackendPlan.decide(Settings.from_mapping(settings), job="books")


def kinds(plan: BackendPlan) -> tuple[str, str | None, str | None, str | None]:
    def kind(backend: object) -> str | None:
        return None if backend is None else str(getattr(backend, "kind", None))

    return kind(plan.queue), kind(plan.coordination), kind(plan.seen), kind(plan.gate)


@pytest.mark.parametrize(
    ("queue", "coordination", "job_dir", "expected"),
    [
        ("memory://", None, False, ("memory", "memory", "memory", None)),
        ("memory://", None, True, ("lmdb", "lmdb", "lmdb", None)),
        ("lmdb://QUEUE", None, False, ("lmdb", "memory", "memory", None)),
        (REDIS, None, False, ("redis", "redis", "redis", "redis")),
        (REDIS, "memory://", False, ("redis", "memory", "coordination", None)),
        (NATS, REDIS, False, ("nats", "redis", "redis", "redis")),
        (NATS, None, True, ("nats", "lmdb", "coordination", "lmdb")),
        (NATS, "lmdb://COORD", False, ("nats", "lmdb", "coordination", "lmdb")),
    ],
)
def test_each_backend_is_decided_once_from_the_settings(
    queue: str, coordination: str | None, job_dir: bool, expected: tuple[str, ...]
) -> None:
    crawl = {"job_dir": "/var/crawl/job"} if job_dir else {}
    decided = plan(queue, coordination, **crawl)
    assert kinds(decided) == expected
    assert decided.shared == (queue.split("://")[0] not in ("memory", "lmdb"))


def test_a_job_dir_holds_the_queue_seen_set_coordination_and_gates() -> None:
    decided = plan(NATS, None, job_dir="/var/crawl/job")
    assert decided.queue.where == NATS
    assert decided.coordination is not None and decided.coordination.where == "/var/crawl/job/coordination"
    assert decided.gate is not None and decided.gate.where == "/var/crawl/job/gates"
    assert plan(job_dir="/var/crawl/job").queue.where == "/var/crawl/job/queue"
    assert plan(job_dir="/var/crawl/job").seen is not None


def test_without_dedup_there_is_no_seen_set() -> None:
    assert plan(dedup=False).seen is None


def test_describe_names_every_backend_without_passwords() -> None:
    text = plan("redis://:secret@127.0.0.1:6379/15", job_dir="/var/crawl/job").describe()
    assert "secret" not in text
    assert text.startswith("queue redis://:***@127.0.0.1:6379/15 (namespace mocra-books)")
    assert "coordination lmdb /var/crawl/job/coordination" in text and "job dir /var/crawl/job" in text


def test_settings_that_cannot_work_together_fail_before_anything_opens() -> None:
    with pytest.raises(ConfigError, match="coordination.url: workers sharing a nats queue"):
        plan(NATS)
    read_only = BackendPlan.decide(Settings.from_mapping({"queue": {"url": NATS}}), job="j", read_only=True)
    assert read_only.coordination is None  # `mocra dlq` reads such a job's queues, not its counts
    with pytest.raises(ConfigError, match="names no shared coordination store"):
        read_only.make_coordination()


def test_a_cluster_needs_a_broker() -> None:
    from mocra_cluster import ClusterConfig

    node = ClusterConfig.bootstrap("a", "127.0.0.1:7190", "/tmp/a", password="pw")
    with pytest.raises(ConfigError, match="the nodes of a cluster share a crawl through a broker"):
        BackendPlan.decide(Settings(), job="j", cluster=node)
    on_nats = BackendPlan.decide(Settings.from_mapping({"queue": {"url": NATS}}), job="j", cluster=node)
    assert kinds(on_nats) == ("nats", "cluster", "cluster", None)
