"""`/metrics`: a job's snapshot and live counters as Prometheus text, checked with the client's own parser.

The jobs here are `JobView`s over real `Stats` (a test double of mocra's own protocol, not of a backend);
a crawl's real engine view is scraped in test_metrics_crawl.py.
"""

from __future__ import annotations

import json
import math
import pathlib
import re
from collections.abc import Mapping, Sequence

import anyio
import pytest
import yaml  # type: ignore[import-untyped]  # mocra-store[yaml]
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from mocra_core.control import ClusterNode, ControlState, FailureView, JobSnapshot, QueueDepth, WorkerInfo
from mocra_core.observe import METRICS_CONTENT_TYPE, Stats, scrape
from mocra_core.observe._metric_families import TOP_DOMAINS
from mocra_proxy import PoolStats, ProxyPool, StaticSource

pytestmark = pytest.mark.anyio

METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")  # Prometheus data model
SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")  # Prometheus naming practice: snake_case, lower case
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
MONITORING = pathlib.Path(__file__).resolve().parents[4] / "docs" / "monitoring"


class StatsView:
    """A `JobView` over a real `Stats` and what the test says of its queues, workers and cluster."""

    def __init__(
        self,
        job: str,
        stats: Stats,
        *,
        queues: Mapping[str, QueueDepth] | None = None,
        workers: int = 1,
        cluster: Sequence[ClusterNode] = (),
        control: ControlState = "running",
        pools: Mapping[str, PoolStats] | None = None,
    ) -> None:
        self._job, self._stats = job, stats
        self._queues = dict(queues or {})
        self._workers = [
            WorkerInfo(
                id=f"host:{100 + n}:0", host="host", pid=100 + n, started=1.0, seen=2.0, state="active"
            )
            for n in range(workers)
        ]
        self._cluster = list(cluster)
        self._control: ControlState = control
        self._pools = pools

    @property
    def job(self) -> str:
        return self._job

    @property
    def stats(self) -> Stats:
        return self._stats

    async def snapshot(self) -> JobSnapshot:
        return JobSnapshot(
            job=self._job,
            state="active",
            control=self._control,
            stats=self._stats.job_snapshot(),
            run=self._stats.snapshot(),
            queues=self._queues,
            workers=self._workers,
            cluster=self._cluster,
        )

    async def dead_letters(self, topic: str | None = None, *, limit: int = 100) -> Sequence[FailureView]:
        return []

    async def replay(self, topics: Sequence[str] | None = None) -> int:
        return 0

    async def control(self) -> ControlState:
        return self._control

    async def pause(self) -> ControlState:
        self._control = "paused"
        return self._control

    async def resume(self) -> ControlState:
        self._control = "running"
        return self._control

    async def stop(self) -> ControlState:
        self._control = "stopping"
        return self._control


class PooledView(StatsView):
    """A view whose run has proxy pools (the optional `proxy_pools` of `/metrics`)."""

    def proxy_pools(self) -> Mapping[str, PoolStats]:
        assert self._pools is not None
        return self._pools


class StuckView(StatsView):
    """A view whose store does not answer."""

    async def snapshot(self) -> JobSnapshot:
        await anyio.sleep_forever()
        raise AssertionError


def busy_stats() -> Stats:
    """A run that saw a bit of everything: statuses, drops, 30 domains, proxy failures, latencies."""
    stats = Stats()
    for n in range(30):
        for _ in range(n + 1):  # domain n answers n + 1 times: d29 the most
            stats.requests += 1
            stats.response(f"d{n}.example", 200 if n % 3 else 404, 1000, 0.01 * (n + 1))
    stats.items, stats.retries, stats.errors = 40, 3, 2
    stats.drop("duplicate", 5)
    stats.offsite("https://ads.example.net/x")
    stats.dead_letter()
    stats.proxy_failures["http://u:***@10.0.0.1:8080"] += 2
    stats.concurrency = 16
    return stats


def full_view(stats: Stats | None = None) -> StatsView:
    """A clustered job with queues, 3 workers and a proxy pool: every metric family has a series."""
    pool = PoolStats(proxies=4, cooling=1, limited=0, leased=2, evicted=1, expired=0, waits=7)
    return PooledView(
        "shop",
        stats or busy_stats(),
        queues={"request": QueueDepth(pending=12, dead=1), "response-shop": QueueDepth(pending=3)},
        workers=3,
        cluster=[
            ClusterNode(id="n1", role="leader", term=4, heartbeat=1700000000.5, partitions=[0, 1]),
            ClusterNode(id="n2", role="follower", term=3, heartbeat=1700000000.0, partitions=[2]),
        ],
        control="paused",
        pools={"pool": pool},
    )


async def scraped(views: Sequence[StatsView], **kwargs: object) -> dict[str, list[Sample]]:
    """Scrape `views` and parse the text with prometheus_client's parser: samples by family name."""
    text = (await scrape(views, **kwargs)).decode()  # type: ignore[arg-type]
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def value(families: dict[str, list[Sample]], name: str, **labels: str) -> float:
    """The value of the one sample of `name` (a sample name, e.g. `mocra_responses_total`) with `labels`."""
    family = name.removesuffix("_total").removesuffix("_bucket").removesuffix("_count").removesuffix("_sum")
    found = [s for s in families[family] if s.name == name and labels.items() <= s.labels.items()]
    assert len(found) == 1, (name, labels, found)
    return found[0].value


async def test_names_and_labels_follow_the_prometheus_rules() -> None:
    text = (await scrape([full_view()])).decode()
    families = list(text_string_to_metric_families(text))
    ours = [f for f in families if f.name.startswith("mocra_")]
    assert len(ours) >= 30
    for family in ours:
        assert METRIC_NAME.match(family.name) and SNAKE.match(family.name), family.name
        assert family.documentation, family.name
        assert family.samples, family.name
        if family.type == "counter":
            assert all(s.name.endswith("_total") for s in family.samples), family.name
        else:
            assert not family.name.endswith("_total"), family.name
        if "latency" in family.name or "timestamp" in family.name:
            assert family.name.endswith("_seconds"), family.name
        for sample in family.samples:
            assert sample.labels["mocra_job"] == "shop"
            for label in sample.labels:
                assert LABEL_NAME.match(label) and not label.startswith("__"), label
                assert label not in ("job", "instance"), "Prometheus sets these on every target"
    for family in families:  # the process collectors too
        assert METRIC_NAME.match(family.name), family.name


async def test_counts_queues_workers_cluster_and_control() -> None:
    stats = busy_stats()
    m = await scraped([full_view(stats)])
    responses = sum(range(1, 31))
    assert value(m, "mocra_job_up") == 1
    assert value(m, "mocra_responses_total") == responses == stats.responses
    assert value(m, "mocra_requests_total") == responses
    assert value(m, "mocra_items_total") == 40
    assert value(m, "mocra_retries_total") == 3
    assert value(m, "mocra_errors_total") == 2
    assert value(m, "mocra_dead_letters_total") == 1
    assert value(m, "mocra_response_bytes_total") == 1000 * responses
    assert value(m, "mocra_runs_total") == 1
    assert value(m, "mocra_dropped_total", reason="duplicate") == 5
    assert value(m, "mocra_dropped_total", reason="offsite") == 1
    assert value(m, "mocra_responses_by_status_total", code="404") == sum(n + 1 for n in range(0, 30, 3))
    assert value(m, "mocra_proxy_failures_total", proxy="http://u:***@10.0.0.1:8080") == 2
    assert value(m, "mocra_queue_pending_messages", topic="request") == 12
    assert value(m, "mocra_queue_dead_letter_messages", topic="request") == 1
    assert value(m, "mocra_queue_pending_messages", topic="response-shop") == 3
    assert value(m, "mocra_workers") == 3
    assert value(m, "mocra_download_concurrency") == 16
    assert value(m, "mocra_cluster_nodes") == 2
    assert value(m, "mocra_cluster_term") == 4
    assert value(m, "mocra_cluster_node_role", node="n1", role="leader") == 1
    assert value(m, "mocra_cluster_node_partitions", node="n1") == 2
    assert value(m, "mocra_cluster_node_heartbeat_timestamp_seconds", node="n2") == 1700000000.0
    assert {s.labels["control"]: s.value for s in m["mocra_job_control"]} == {
        "running": 0,
        "paused": 1,
        "stopping": 0,
    }
    states = {s.labels["state"]: s.value for s in m["mocra_job_state"]}
    assert states["active"] == 1 and sum(states.values()) == 1 and "draining" in states
    assert value(m, "mocra_crawl_seconds_total") >= 0


async def test_domains_are_bounded_to_the_top_ones_and_other() -> None:
    m = await scraped([full_view()])
    domains = {s.labels["domain"]: s.value for s in m["mocra_domain_responses"]}
    assert len(domains) == TOP_DOMAINS + 1
    assert domains["d29.example"] == 30  # the most answering are kept
    assert "d0.example" not in domains
    assert domains["(other)"] == sum(range(1, 11))  # d0..d9 answered 1..10 times
    assert sum(domains.values()) == sum(range(1, 31))


async def test_latency_histogram_from_the_live_stats() -> None:
    stats = Stats()
    for ms in range(1, 1001):  # 1 ms .. 1 s, evenly
        stats.response("example.com", 200, 10, ms / 1000)
    stats.response("example.com", 200, 10, 90.0)  # past the last bound
    m = await scraped([StatsView("shop", stats)])
    buckets = [s for s in m["mocra_download_latency_seconds"] if s.name.endswith("_bucket")]
    bounds = [float(s.labels["le"]) for s in buckets]
    counts = [s.value for s in buckets]
    assert bounds == sorted(bounds) and math.isinf(bounds[-1])
    assert counts == sorted(counts)  # cumulative
    assert counts[-1] == value(m, "mocra_download_latency_seconds_count") == 1001
    by_bound = dict(zip(bounds, counts, strict=True))
    assert by_bound[60.0] == 1000
    assert abs(by_bound[0.1] - 100) <= 5  # a bucket of LatencyHistogram is ~4.5 % wide
    assert abs(by_bound[0.5] - 500) <= 23
    exact = sum(range(1, 1001)) / 1000 + 90.0
    assert abs(value(m, "mocra_download_latency_seconds_sum") - exact) / exact < 0.03


async def test_proxy_pool_health_of_a_real_pool() -> None:
    source = StaticSource(["http://u:pw@10.0.0.1:8080", "http://10.0.0.2:3128"])
    async with ProxyPool([source]) as pool, pool.lease(domain="example.com") as lease:
        view = PooledView("shop", Stats(), pools={"pool": pool.stats()})
        await lease.ok(200)
        m = await scraped([view])
    assert value(m, "mocra_proxy_pool_proxies", pool="pool") == 2
    assert value(m, "mocra_proxy_pool_leases", pool="pool") == 1
    assert value(m, "mocra_proxy_pool_cooling_proxies", pool="pool") == 0
    assert value(m, "mocra_proxy_pool_waits_total", pool="pool") == 0
    assert "mocra_proxy_pool_proxies" not in await scraped([StatsView("plain", Stats())])


async def test_a_job_that_cannot_be_read_shows_down_and_the_others_still_render() -> None:
    stuck = StuckView("stuck", busy_stats())
    m = await scraped([stuck, full_view()], job_timeout=0.2)
    assert value(m, "mocra_job_up", mocra_job="stuck") == 0
    assert value(m, "mocra_job_up", mocra_job="shop") == 1
    assert value(m, "mocra_responses_total", mocra_job="shop") == sum(range(1, 31))
    assert not [s for s in m["mocra_responses"] if s.labels["mocra_job"] == "stuck"]
    # its own live latencies are still there (they need no store)
    assert value(m, "mocra_download_latency_seconds_count", mocra_job="stuck") == sum(range(1, 31))


async def test_two_jobs_one_scrape_and_no_process_metrics_on_request() -> None:
    a, b = Stats(), Stats()
    a.response("a.example", 200, 1, 0.1)
    m = await scraped([StatsView("a", a), StatsView("b", b)], process=False)
    assert value(m, "mocra_responses_total", mocra_job="a") == 1
    assert value(m, "mocra_responses_total", mocra_job="b") == 0
    assert not [name for name in m if name.startswith(("process_", "python_"))]


async def test_content_type_is_prometheus_text() -> None:
    assert METRICS_CONTENT_TYPE.startswith("text/plain; version=")


def dashboard_panels(dashboard: dict[str, object]) -> list[dict[str, object]]:
    """Every panel of a Grafana dashboard, those inside rows too."""
    panels: list[dict[str, object]] = []
    for panel in dashboard["panels"]:  # type: ignore[attr-defined]
        panels.append(panel)
        panels.extend(panel.get("panels", []))
    return panels


async def test_every_metric_the_grafana_dashboard_queries_is_in_the_output() -> None:
    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    assert dashboard["title"] and dashboard["uid"] and isinstance(dashboard["schemaVersion"], int)
    panels = [p for p in dashboard_panels(dashboard) if p["type"] != "row"]
    assert len(panels) >= 12
    ids = [p["id"] for p in dashboard_panels(dashboard)]
    assert len(ids) == len(set(ids))
    exprs: list[str] = []
    for panel in panels:
        assert panel["title"] and {"x", "y", "w", "h"} <= panel["gridPos"].keys(), panel  # type: ignore[attr-defined]
        targets = panel["targets"]
        assert targets, panel["title"]
        refs = [t["refId"] for t in targets]  # type: ignore[attr-defined]
        assert len(refs) == len(set(refs)), panel["title"]
        exprs.extend(t["expr"] for t in targets)  # type: ignore[attr-defined]
    templating = dashboard["templating"]["list"]
    exprs.extend(v["definition"] for v in templating if v["type"] == "query")
    for name in ("datasource", "mocra_job"):
        assert name in {v["name"] for v in templating}

    text = (await scrape([full_view()])).decode()
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    names = {s.name for s in samples}
    labels = {label for s in samples for label in s.labels}
    used = {token for expr in exprs for token in re.findall(r"\bmocra_[a-z0-9_]+", expr)} - labels
    assert len(used) >= 25
    assert sorted(used - names) == []
    for expr in exprs:  # every selector names its job, every by() groups on labels the metrics have
        for group in re.findall(r"by \(([^)]*)\)", expr):
            assert {g.strip() for g in group.split(",")} <= labels | {"le"}, expr
        assert expr.count("(") == expr.count(")"), expr


def test_the_prometheus_scrape_example_is_a_scrape_config_of_metrics() -> None:
    config = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    (job,) = config["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"][0]["targets"] == ["127.0.0.1:12800"]


class CountingStats(Stats):
    """Stats that count the downloads running now (the hook `/metrics` reads when present)."""

    in_flight = 0


async def test_downloads_in_flight_when_the_stats_count_them() -> None:
    stats = CountingStats()
    stats.in_flight = 7
    m = await scraped([StatsView("shop", stats)])
    assert value(m, "mocra_downloads_in_flight") == 7
    assert value(await scraped([StatsView("shop", Stats())]), "mocra_downloads_in_flight") == 0


async def test_a_workers_errors_by_kind() -> None:
    stats = Stats()
    stats.error("parse")
    stats.error("parse")
    stats.error("sink")
    m = await scraped([StatsView("shop", stats)])
    assert value(m, "mocra_worker_errors_total", kind="parse") == 2
    assert value(m, "mocra_worker_errors_total", kind="sink") == 1
