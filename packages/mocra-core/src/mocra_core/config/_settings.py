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
from ._queue import (
    CoordinationSettings,
    KafkaQueueSettings,
    NatsQueueSettings,
    QueueSettings,
    RedisQueueSettings,
)
from ._schemes import check_scheme

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
            check_scheme("url", self.url, _PROXY_SCHEMES, example="http://user:pass@10.0.0.1:8080")
        if self.state not in ("memory", "redis"):
            check_scheme("state", self.state, ("redis", "rediss"), example="redis://127.0.0.1:6379/0")
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
            check_scheme("url", self.url, _STORE_SCHEMES, example="sqlite:///mocra.db")


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
