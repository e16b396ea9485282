"""The Prometheus metric families of `/metrics`, built from each job's `JobSample`.

Every series has the label `mocra_job` (the job's name; not `job`, which Prometheus gives each scrape
target). Counts (`*_total`) are the job's, whichever worker answers: with several workers scraped, take
`max by (mocra_job)`, not `sum`. Breakdowns (status, drops, domains, proxy failures) are the job's when
its snapshot keeps them, else the answering worker's run. The latency histogram and the proxy pools are
the answering worker's own: `sum` them over workers.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from ._stats import OTHER_HOSTS

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from ..control import JobSnapshot
    from ._metric_sample import JobSample, PoolCounts
    from ._stats import StatsSnapshot

__all__ = ("JOB_LABEL", "STATES", "TOP_DOMAINS", "families")

JOB_LABEL = "mocra_job"
"""The label naming the job of a series."""
TOP_DOMAINS = 20
"""Domains counted one by one in `mocra_domain_responses_total`; the rest are summed under `(other)`."""
STATES = ("prepare", "ready", "active", "draining", "stopped", "failed")
"""The engine states `mocra_job_state` always shows (1 for the job's, 0 for the others)."""
CONTROLS = ("running", "paused", "stopping")

_TOTALS: dict[str, tuple[str, str]] = {
    "requests": ("mocra_requests", "Downloads started (a retry is one more)."),
    "responses": ("mocra_responses", "Downloads that got an HTTP answer (pages), any status."),
    "items": ("mocra_items", "Items written."),
    "retries": ("mocra_retries", "Requests handed back for another attempt."),
    "errors": ("mocra_errors", "Failures of code: a callback, middleware, sink or downloader that raised."),
    "dead_lettered": ("mocra_dead_letters", "Messages sent to a dead-letter queue."),
    "bytes": ("mocra_response_bytes", "Response body bytes received, after decoding."),
    "elapsed": ("mocra_crawl_seconds", "Seconds of crawling, summed over the job's runs and workers."),
    "runs": ("mocra_runs", "Runs of the job (a worker's run counts one)."),
}
_BREAKDOWNS: dict[str, tuple[str, str, str]] = {
    "dropped": ("mocra_dropped", "reason", "Requests and items left out on purpose, by reason."),
    "status": ("mocra_responses_by_status", "code", "Responses by HTTP status code."),
    "domains": (
        "mocra_domain_responses",
        "domain",
        f"Responses by domain: the {TOP_DOMAINS} most answering, the rest under (other).",
    ),
    "proxy_failures": (
        "mocra_proxy_failures",
        "proxy",
        "Proxy failures (connect or proxy errors, ban statuses) by proxy URL, password redacted.",
    ),
}
_POOL_GAUGES: dict[str, tuple[str, str]] = {
    "proxies": ("mocra_proxy_pool_proxies", "Proxies in the pool (not evicted, not expired)."),
    "cooling": ("mocra_proxy_pool_cooling_proxies", "Proxies cooling down after a ban or connect error."),
    "limited": ("mocra_proxy_pool_limited_proxies", "Proxies at a rate or concurrency limit."),
    "leased": ("mocra_proxy_pool_leases", "Proxy leases held now."),
}
_POOL_COUNTERS: dict[str, tuple[str, str]] = {
    "evicted": ("mocra_proxy_pool_evicted", "Proxies evicted since the pool started."),
    "expired": ("mocra_proxy_pool_expired", "Proxies dropped because their expiry passed."),
    "waits": ("mocra_proxy_pool_waits", "Times a lease had to wait for a free proxy."),
}


class _Families:
    """The families of one scrape, made on first use, in the order first used."""

    def __init__(self) -> None:
        self.made: dict[str, Metric] = {}

    def counter(self, name: str, doc: str, *labels: str) -> CounterMetricFamily:
        family = self.made.get(name)
        if family is None:
            family = self.made[name] = CounterMetricFamily(name, doc, labels=(JOB_LABEL, *labels))
        assert isinstance(family, CounterMetricFamily)
        return family

    def gauge(self, name: str, doc: str, *labels: str) -> GaugeMetricFamily:
        family = self.made.get(name)
        if family is None:
            family = self.made[name] = GaugeMetricFamily(name, doc, labels=(JOB_LABEL, *labels))
        assert isinstance(family, GaugeMetricFamily)
        return family

    def histogram(self, name: str, doc: str) -> HistogramMetricFamily:
        family = self.made.get(name)
        if family is None:
            family = self.made[name] = HistogramMetricFamily(name, doc, labels=(JOB_LABEL,))
        assert isinstance(family, HistogramMetricFamily)
        return family


def families(samples: Iterable[JobSample]) -> list[Metric]:
    """The metric families of `samples`, every series labelled with its job.

    Example:
        >>> from mocra_core.control import JobSnapshot
        >>> from mocra_core.observe import StatsSnapshot
        >>> from mocra_core.observe._metric_sample import JobSample
        >>> snap = JobSnapshot(job="shop", state="active", stats=StatsSnapshot(responses=3))
        >>> made = {f.name: f for f in families([JobSample("shop", snap)])}
        >>> made["mocra_responses"].samples[0].value, made["mocra_responses"].samples[0].labels
        (3.0, {'mocra_job': 'shop'})
    """
    made = _Families()
    for sample in samples:
        job = sample.job
        made.gauge("mocra_job_up", "1 when the job's state could be read at this scrape, else 0.").add_metric(
            [job], 0 if sample.snapshot is None else 1
        )
        if sample.snapshot is not None:
            _job(made, job, sample.snapshot)
        _latency(made, sample)
        if sample.in_flight is not None:
            made.gauge("mocra_downloads_in_flight", "Downloads running now on this worker.").add_metric(
                [job], sample.in_flight
            )
        _pools(made, job, sample.pools)
        if sample.errors_by_kind:
            kinds = made.counter(
                "mocra_worker_errors",
                "The answering worker's failures of code in its run, by kind (parse, generate, sitemap, "
                "sink, download, reported).",
                "kind",
            )
            for kind, count in sorted(sample.errors_by_kind.items()):
                kinds.add_metric([job, kind], count)
    return list(made.made.values())


def _job(made: _Families, job: str, snap: JobSnapshot) -> None:
    """The job's state, control, counts, queues, workers and cluster."""
    _one_of(
        made.gauge("mocra_job_state", "The answering worker's engine state: 1 for it.", "state"),
        job,
        STATES,
        snap.state,
    )
    _one_of(
        made.gauge("mocra_job_control", "What the operator asked of the job: 1 for it.", "control"),
        job,
        CONTROLS,
        snap.control,
    )
    stats, run = snap.stats, snap.run
    for field, (name, doc) in _TOTALS.items():
        made.counter(name, doc + " Job-wide.").add_metric([job], float(getattr(stats, field)))
    for field, (name, label, doc) in _BREAKDOWNS.items():
        counts: Mapping[str, int] = getattr(stats, field) or getattr(run, field)
        if field == "domains":
            counts = _top(counts, TOP_DOMAINS)
        family = made.counter(name, doc, label)
        for key, count in counts.items():
            family.add_metric([job, key], count)
    made.gauge(
        "mocra_download_concurrency", "Downloads the autoscaler lets run at once (0: autoscaling is off)."
    ).add_metric([job], _concurrency(stats, run))
    pending = made.gauge(
        "mocra_queue_pending_messages",
        "Messages waiting in a stage queue (ready, delayed or leased).",
        "topic",
    )
    dead = made.gauge("mocra_queue_dead_letter_messages", "Dead letters of a stage queue.", "topic")
    for topic, depth in snap.queues.items():
        pending.add_metric([job, topic], depth.pending)
        dead.add_metric([job, topic], depth.dead)
    made.gauge("mocra_workers", "Live workers of the job (heartbeats).").add_metric([job], len(snap.workers))
    _cluster(made, job, snap)


def _cluster(made: _Families, job: str, snap: JobSnapshot) -> None:
    """The control plane's nodes, when the job runs on a cluster."""
    if not snap.cluster:
        return
    made.gauge("mocra_cluster_nodes", "Nodes of the job's cluster.").add_metric([job], len(snap.cluster))
    made.gauge("mocra_cluster_term", "The cluster's highest term (leader elections so far).").add_metric(
        [job], max(node.term for node in snap.cluster)
    )
    role = made.gauge("mocra_cluster_node_role", "A cluster node's role: 1 for it.", "node", "role")
    parts = made.gauge("mocra_cluster_node_partitions", "Partitions a cluster node owns.", "node")
    beat = made.gauge(
        "mocra_cluster_node_heartbeat_timestamp_seconds",
        "Unix time of a cluster node's last heartbeat.",
        "node",
    )
    for node in snap.cluster:
        role.add_metric([job, node.id, node.role], 1)
        parts.add_metric([job, node.id], len(node.partitions))
        beat.add_metric([job, node.id], node.heartbeat)


def _latency(made: _Families, sample: JobSample) -> None:
    """The answering worker's download latencies of this run."""
    family = made.histogram(
        "mocra_download_latency_seconds", "Download latency on this worker in this run (sum estimated)."
    )
    buckets = [(_bound(bound), float(count)) for bound, count in sample.latency]
    family.add_metric([sample.job], buckets, sample.latency_sum)


def _pools(made: _Families, job: str, pools: Mapping[str, PoolCounts]) -> None:
    """Each proxy pool's counts on this worker."""
    for pool, counts in pools.items():
        for field, (name, doc) in _POOL_GAUGES.items():
            made.gauge(name, doc, "pool").add_metric([job, pool], getattr(counts, field))
        for field, (name, doc) in _POOL_COUNTERS.items():
            made.counter(name, doc, "pool").add_metric([job, pool], getattr(counts, field))


def _one_of(family: GaugeMetricFamily, job: str, known: Sequence[str], value: str) -> None:
    """A state set: a series per known value (and `value` if unknown), 1 for `value`."""
    for each in (*known, *(() if value in known else (value,))):
        family.add_metric([job, each], 1 if each == value else 0)


def _top(counts: Mapping[str, int], keep: int) -> dict[str, int]:
    """The `keep` largest counts (most first), the rest summed under `(other)`."""
    ranked = sorted(((k, v) for k, v in counts.items() if k != OTHER_HOSTS), key=lambda kv: -kv[1])
    shown = dict(ranked[:keep])
    rest = sum(counts.values()) - sum(shown.values())
    if rest:
        shown[OTHER_HOSTS] = rest
    return shown


def _concurrency(stats: StatsSnapshot, run: StatsSnapshot) -> int:
    """The autoscaler's latest figure: the run's, else the job's."""
    return run.concurrency or stats.concurrency


def _bound(bound: float) -> str:
    """A bucket bound as the `le` label (`+Inf` for infinity)."""
    return "+Inf" if math.isinf(bound) else repr(float(bound))
