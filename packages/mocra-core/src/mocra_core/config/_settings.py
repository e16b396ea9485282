"""Typed settings: every knob has a type, a default and a home; typos fail at start."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .._bounds import at_least, positive
from ..dedup._settings import DedupSettings
from ..download import DownloadSettings, HttpCacheSettings, RetrySettings
from ..download._proxy_pool import pool_config
from ..download._proxy_route import POOL, check_pool_name
from ..scope import ScopeStrategy  # noqa: TC001 - msgspec resolves it at runtime
from ._admin import AdminSettings

__all__ = (
    "CoordinationSettings",
    "CrawlSettings",
    "KafkaQueueSettings",
    "NatsQueueSettings",
    "ProxySettings",
    "QueueSettings",
    "RedisQueueSettings",
    "Settings",
    "SinkSettings",
)


class CrawlSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """How hard and how politely to crawl.

    Attributes:
        concurrency: Requests in flight at once, over all domains (with `autoscale`: at most).
        autoscale: Let the requests in flight follow the process's headroom: start at a quarter of
            `concurrency`, grow while CPU, memory and event-loop lag leave room and the workers are busy,
            shrink when one is overloaded, always within [`min_concurrency`, `concurrency`]
            (`AutoscaledConcurrency`).
        min_concurrency: With `autoscale`, never fewer requests in flight than this (at least 1; above
            `concurrency` it is `concurrency`).
        parse_workers: Responses parsed at once, per module (each module parses in its own lane, so a slow
            sink holds only its module's workers; parsing runs on the event loop; more helps when sinks
            await).
        per_domain_concurrency: Requests in flight at once to one host.
        per_domain_delay: Minimum seconds between two request starts to one host (0 = none).
        obey_robots: Fetch and obey robots.txt.
        dedup: Drop requests whose fingerprint was already seen in this job (`dont_filter` skips the check).
        max_depth: Follow links at most this many hops from a seed (0 = the seeds only; `None` = unlimited).
        scope: Which links a crawl follows, relative to the page each was found on: `"same-domain"` (the
            registrable domain by the Public Suffix List: `shop.example.co.uk` from `example.co.uk`),
            `"same-hostname"`, `"same-origin"` (scheme, host and port) or `"all"`; links out of scope are
            dropped (`offsite`). A spider's or module's own `scope` or `allowed_domains` wins.
        max_pages: Start at most this many downloads in the job, then stop (`None` = unlimited; 0 is
            refused, as a job allowed no download has nothing to do); the workers of a shared queue or a
            cluster share the budget.
        cron_max_fires: Stop after this many cron firings of each cron module, once their work is done
            (`None` = keep firing until interrupted; at least 1).
        account_affinity: On a cluster, queue each account's tasks and requests under its partition key
            (`p<n>`), so one account's work goes through one partition lane, one message at a time.
        direct_parse: Hand a downloaded response straight to an idle parse worker of its module in the same
            process instead of through the module's response queue (on a broker: no response round trip;
            when none of the module's workers is idle, the response is queued). The request stays
            leased until its response is parsed, so a crash downloads it again, and a failed parse retries
            or dead-letters the request (replay downloads again). `False`: every response goes through the
            response queue, so a failed parse is retried or replayed without downloading again.
        job: Name of the crawl job: workers started with the same name (and queue URL) share one crawl; it
            namespaces queues, dedup and coordination on shared backends. Default: the spider/module names.
        job_dir: Directory for crash-safe state (frontier, seen set, stats); `None` = all in memory.
        outage_timeout: Seconds a worker keeps retrying while its broker or shared store does not answer;
            after that it stops (`reason = "unavailable"`) and what it held leased returns to the others.
        drain_timeout: Seconds a run has to drain once it is over (Ctrl-C / SIGTERM, `Engine.interrupt`,
            the page budget): downloads in flight finish, their responses are parsed and sinks flushed;
            what is still in flight after this is cancelled and handed back to its queue (the job's next
            run, or another worker, does it).
    """

    concurrency: int = 64
    autoscale: bool = False
    min_concurrency: int = 4
    parse_workers: int = 16
    per_domain_concurrency: int = 8
    per_domain_delay: float = 0.0
    obey_robots: bool = True
    dedup: bool = True
    max_depth: int | None = None
    scope: ScopeStrategy = "same-domain"
    max_pages: int | None = None
    cron_max_fires: int | None = None
    account_affinity: bool = False
    direct_parse: bool = True
    job: str | None = None
    job_dir: str | None = None
    outage_timeout: float = 300.0
    drain_timeout: float = 30.0

    def __post_init__(self) -> None:
        at_least(self, 1, "concurrency", "min_concurrency", "parse_workers", "per_domain_concurrency")
        at_least(self, 0, "per_domain_delay", "max_depth")
        at_least(self, 1, "max_pages", "cron_max_fires", unset="no limit")
        positive(self, "outage_timeout", "drain_timeout")


_QUEUE_SCHEMES = ("memory", "lmdb", "redis", "rediss", "nats", "kafka")
_COORDINATION_SCHEMES = ("memory", "lmdb", "redis", "rediss")


def _check_scheme(name: str, url: str, schemes: tuple[str, ...], *, example: str) -> None:
    scheme, sep, _ = url.partition("://")
    if not sep:
        raise ValueError(f"{name}: expected scheme://…, e.g. {example}, got {url!r}")
    if scheme not in schemes:
        known = [s for s in schemes if s != "rediss"]  # `rediss` is `redis` over TLS
        expected = f"{', '.join(known[:-1])} or {known[-1]}" if len(known) > 1 else known[0]
        raise ValueError(f"{name}: unknown scheme {scheme!r}; expected {expected}")


class RedisQueueSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Options of a `redis://` queue (`RedisStreamsQueue`).

    Attributes:
        connect_timeout: Seconds to reach the server when opening.
        reconnect_timeout: Seconds a call keeps retrying a lost server before raising `BackendUnavailable`.

    Example:
        >>> RedisQueueSettings(reconnect_timeout=120).reconnect_timeout
        120
    """

    connect_timeout: float = 5.0
    reconnect_timeout: float = 30.0

    def __post_init__(self) -> None:
        positive(self, "connect_timeout", "reconnect_timeout")


class NatsQueueSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Options of a `nats://` queue (`NatsJetStreamQueue`).

    Attributes:
        storage: Where JetStream keeps the streams it creates: `"file"` (survives a server restart) or
            `"memory"`.
        timeout: Seconds one request to the server may take.

    Example:
        >>> Settings.from_mapping({"queue": {"nats": {"storage": "memory"}}}).queue.nats.storage
        'memory'
    """

    storage: Literal["file", "memory"] = "file"
    timeout: float = 5.0

    def __post_init__(self) -> None:
        positive(self, "timeout")


class KafkaQueueSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Options of a `kafka://` queue (`KafkaQueue`).

    Attributes:
        partitions: Partitions of each topic the queue creates: at most this many workers share a topic.
        session_timeout: Seconds without a heartbeat before the group gives a worker's partitions to the
            others. Apache Kafka accepts 6 to 1,800 by default; tansu also takes less, and a worker joins
            its groups in half of it there.
        fetch_wait: Seconds the reads of the state and DLQ topics wait at the broker per fetch.
        fetch_wait_min: Seconds a worker's fetches wait at the broker, at first: on tansu, which holds
            each fetch for its wait, the latency of each hop of a crawl. On Apache Kafka (which answers
            as soon as records arrive) a short wait only means more idle fetches: 0.5 suits it.
        fetch_wait_max: The most the wait grows to. tansu answers a fetch with what it read by then, and
            reads a partition slower the longer it is; a worker far behind whose fetches keep answering
            short doubles its wait, up to this.
        reconnect_timeout: Seconds a call keeps retrying a lost broker before raising `BackendUnavailable`.
        lanes: Priority lanes created with each topic, by `Request.priority` (any 64-bit int: -1 is below
            the default 0); another lane is created when first used, and every worker's groups rebalance then.

    Example:
        >>> KafkaQueueSettings(partitions=0)
        Traceback (most recent call last):
        ...
        ValueError: partitions: must be at least 1, got 0
    """

    partitions: int = 4
    session_timeout: float = 10.0
    fetch_wait: float = 0.05
    fetch_wait_min: float = 0.01
    fetch_wait_max: float = 1.0
    reconnect_timeout: float = 30.0
    lanes: tuple[int, ...] = (-1, 0, 1)

    def __post_init__(self) -> None:
        at_least(self, 1, "partitions")
        positive(self, "session_timeout", "fetch_wait", "fetch_wait_min", "fetch_wait_max")
        positive(self, "reconnect_timeout")
        if self.fetch_wait_min > self.fetch_wait_max:
            waits = f"{self.fetch_wait_min!r} > {self.fetch_wait_max!r}"
            raise ValueError(f"fetch_wait_min: must be at most fetch_wait_max, got {waits}")
        for lane in self.lanes:
            if not -(2**63) <= lane < 2**63:
                raise ValueError(f"lanes: must be 64-bit ints, got {lane}")


class QueueSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Where the queues between stages live.

    Attributes:
        url: `memory://` (default; one process), `lmdb:///dir` (on disk), or a shared broker: `redis://…`,
            `nats://…`, `kafka://…`; another scheme fails at start.
        visibility_timeout: Seconds a leased message may stay unacknowledged before it is redelivered (> 0).
        liveness_timeout: Redis and NATS: seconds after a worker's last sign of life (a heartbeat or lease
            extension, sent every fifth of it) before the others take over what it leased (> 0).
        max_attempts: Deliveries of one message before it is dead-lettered whatever the retry policy says
            (at least 1: the first delivery).
        spill_threshold: In memory: requests kept as objects before new ones spill to a temporary LMDB
            queue on disk (bounds the memory of a large frontier; at least 1).
        redis: Options used when `url` is `redis://…` (`[queue.redis]`).
        nats: Options used when `url` is `nats://…` (`[queue.nats]`).
        kafka: Options used when `url` is `kafka://…` (`[queue.kafka]`).

    Example:
        >>> Settings.from_mapping({"queue": {"kafka": {"partitions": 8}}}).queue.kafka.partitions
        8
    """

    url: str = "memory://"
    visibility_timeout: float = 300.0
    liveness_timeout: float = 10.0
    max_attempts: int = 10
    spill_threshold: int = 100_000
    redis: RedisQueueSettings = RedisQueueSettings()
    nats: NatsQueueSettings = NatsQueueSettings()
    kafka: KafkaQueueSettings = KafkaQueueSettings()

    def __post_init__(self) -> None:
        _check_scheme("url", self.url, _QUEUE_SCHEMES, example="redis://127.0.0.1:6379/0")
        if self.url.startswith("lmdb://") and not self.url.removeprefix("lmdb://"):
            raise ValueError("url: lmdb:// needs a directory, e.g. lmdb:///var/crawl/queue")
        positive(self, "visibility_timeout", "liveness_timeout")
        at_least(self, 1, "max_attempts", "spill_threshold")


class CoordinationSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Where the workers of a job share gates, locks, seed-once flags and (with Redis) the seen set.

    Attributes:
        url: `memory://` (one process), `lmdb:///dir` (processes on one host) or `redis://host:port/db`.
            `None` picks one: in memory for a memory queue, the job dir's LMDB with `crawl.job_dir`, the
            queue's Redis for a Redis queue; NATS and Kafka jobs of several workers need it set (or a
            shared `crawl.job_dir` on one host). Another scheme fails at start.
    """

    url: str | None = None

    def __post_init__(self) -> None:
        if self.url is not None:
            _check_scheme("url", self.url, _COORDINATION_SCHEMES, example="redis://127.0.0.1:6379/0")


class SinkSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """How items reach sinks.

    Attributes:
        batch_size: Items written to a sink in one call, at most (at least 1).
        max_retries: Retries of a failed sink write before the pages whose items it refuses are
            dead-lettered, never dropped; the other pages of the batch are written
            (0 = dead-lettered at the first failure).
        retry_delay: Seconds before the first retry of a failed write; doubles each time (0 = at once).

    Example:
        >>> SinkSettings(batch_size=0)
        Traceback (most recent call last):
        ...
        ValueError: batch_size: must be at least 1, got 0
    """

    batch_size: int = 500
    max_retries: int = 5
    retry_delay: float = 0.2

    def __post_init__(self) -> None:
        at_least(self, 1, "batch_size")
        at_least(self, 0, "max_retries", "retry_delay")


_PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")


class ProxySettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Which proxies the built-in downloader sends requests through (`[proxy]`).

    A request's `meta["proxy"]` picks for itself: `"direct"`, a pool's name (`"pool"` for `[proxy.pool]`)
    or a proxy URL; a spider's or module's `proxy` attribute picks for its requests that do not. Without
    either, a request goes through `url` if set, else through the default pool if there is one, else
    directly.

    Attributes:
        url: One fixed proxy for every request, without a pool (`http://user:pass@host:port`; passwords
            are redacted in logs and errors).
        pool: A proxy pool (`[proxy.pool]`, needs `mocra[proxy]`): mocra-proxy's `ProxyPoolConfig` keys
            (`sources`, `policy`, `ban_statuses`, `max_errors`, `cooldown`, `max_cooldown`, `limits`,
            `tiers`, `refill_below`, `lease_timeout`, `health_check`), checked at start. Empty: no pool.
            Every outcome is reported to the pool; a proxy failure (connect error, a ban status such as
            403 or 407) is tried once more through another proxy.
        pools: Further pools by name (`[proxy.pools.residential]`), each with the keys of `pool`; a name
            is a letter, then letters, digits, `_` or `-`. Requests, spiders and modules pick one by name.
        state: Where the pool keeps its bans, cooldowns and scores: `"memory"` (this process), `"redis"`
            (the job's Redis, its coordination store or queue: every worker of the job shares them) or a
            `redis://` URL; Redis needs `mocra[proxy,redis]`.

    Example:
        >>> Settings.from_mapping({"proxy": {"url": "http://u:pw@10.0.0.1:8080"}}).proxy.url
        'http://u:pw@10.0.0.1:8080'
    """

    url: str | None = None
    pool: dict[str, Any] = {}
    pools: dict[str, dict[str, Any]] = {}
    state: str = "memory"

    def __post_init__(self) -> None:
        if self.url is not None:
            _check_scheme("url", self.url, _PROXY_SCHEMES, example="http://user:pass@10.0.0.1:8080")
        if self.state not in ("memory", "redis"):
            _check_scheme("state", self.state, ("redis", "rediss"), example="redis://127.0.0.1:6379/0")
        if self.pool:
            pool_config(self.pool)
        for name, data in self.pools.items():
            try:
                check_pool_name(name)
            except ValueError as exc:
                raise ValueError(f"pools: {exc}") from None
            if name == POOL and self.pool:
                raise ValueError(f"pools: {POOL!r} is the name of [proxy.pool]; give this pool another name")
            pool_config(data, label=f"pools.{name}")

    @property
    def pool_names(self) -> frozenset[str]:
        """The names requests, spiders and modules may choose (`"pool"` for `[proxy.pool]`)."""
        return frozenset(self.pools) | ({POOL} if self.pool else set())


_STORE_SCHEMES = ("sqlite", "sqlite+aiosqlite", "postgresql", "postgresql+psycopg", "postgres")


class StoreSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Where a run's work comes from (`[store]`): its code, or a mocra-store database (`mocra[store]`).

    Attributes:
        url: The store (`sqlite:///mocra.db`, `postgresql://user@host/db`); unset: the code's modules and
            accounts. With a store, every enabled account × platform × module row starts once with its
            merged config, logins take the store's credentials, the store's schedules fire through cron,
            and each run writes its record. Passwords encrypted at rest need `MOCRA_STORE_KEY`.

    Example:
        >>> Settings.from_mapping({"store": {"url": "sqlite:///mocra.db"}}).store.url
        'sqlite:///mocra.db'
    """

    url: str | None = None

    def __post_init__(self) -> None:
        if self.url is not None:
            _check_scheme("url", self.url, _STORE_SCHEMES, example="sqlite:///mocra.db")


class Settings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """All settings of a run. Every section has working defaults: `Settings()` needs nothing.

    Attributes:
        log_level: `DEBUG`, `INFO`, `WARNING` or `ERROR`: the level `mocra run` and `mocra serve` log at;
            `-v` / `-vv` (INFO with the engine's own lines / DEBUG) win over it.

    Example:
        >>> Settings().crawl.concurrency
        64
        >>> Settings.from_mapping({"crawl": {"concurrency": 8}}).crawl.concurrency
        8
    """

    crawl: CrawlSettings = CrawlSettings()
    dedup: DedupSettings = DedupSettings()
    download: DownloadSettings = DownloadSettings()
    retry: RetrySettings = RetrySettings()
    queue: QueueSettings = QueueSettings()
    coordination: CoordinationSettings = CoordinationSettings()
    sink: SinkSettings = SinkSettings()
    proxy: ProxySettings = ProxySettings()
    store: StoreSettings = StoreSettings()
    admin: AdminSettings = AdminSettings()
    http_cache: HttpCacheSettings = HttpCacheSettings()
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    @classmethod
    def from_mapping(cls, data: dict[str, object], *, source: str = "<code>") -> Settings:
        """Validate a nested mapping (as read from TOML) into settings.

        Raises:
            ConfigError: naming the key path and the source when a key is unknown or a value invalid.
        """
        from ._load import convert

        return convert(data, source=source)

    @classmethod
    def from_toml(cls, path: str, *, overrides: list[str] | None = None) -> Settings:
        """Read settings from a TOML file, then apply `key=value` overrides and `MOCRA_*` variables.

        Raises:
            ConfigError: the file is missing or malformed, or a key is unknown or a value invalid.
        """
        from ._load import load

        return load(path, overrides=overrides or [])
