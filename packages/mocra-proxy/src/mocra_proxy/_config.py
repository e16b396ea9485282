"""`ProxyPoolConfig`: the whole pool as typed config, read from TOML or a mapping."""

from __future__ import annotations

import os
import pathlib
import random
import re
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import msgspec

from ._errors import ProxyPoolError
from ._limits import Limits
from ._policy import DEFAULT_SAMPLE, RandomPolicy, RoundRobinPolicy, ScorePolicy
from ._probe import HealthCheck  # noqa: TC001 - msgspec reads the annotations at run time
from ._source_config import FileSourceConfig, SourceConfig
from ._tiers import Tiers

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ._policy import SelectionPolicy
    from ._source import ProxySource

__all__ = (
    "PoolOptions",
    "ProxyConfigError",
    "ProxyPoolConfig",
    "RandomPolicyConfig",
    "RoundRobinPolicyConfig",
    "ScorePolicyConfig",
)

_PATH = re.compile(r"^(?P<problem>.*?)(?: - at `(?P<path>[^`]*)`)?$", re.DOTALL)
_UNKNOWN = re.compile(r"unknown field `(?P<field>[^`]*)`")


class ProxyConfigError(ProxyPoolError, ValueError):
    """Bad proxy pool config: names the file (or `<mapping>`), the key path (`$.sources[0].tier`) and why."""

    def __init__(self, key: str, problem: str, *, source: str = "<mapping>") -> None:
        super().__init__(f"{source}: {key}: {problem}")
        self.key, self.source = key, source


class ScorePolicyConfig(
    msgspec.Struct, tag="score", tag_field="name", forbid_unknown_fields=True, frozen=True, kw_only=True
):
    """`name = "score"`: the best score of `sample` free proxies drawn at random (0: all; `ScorePolicy`)."""

    latency_scale: float = 1.0
    recency_scale: float = 1.0
    sample: Annotated[int, msgspec.Meta(ge=0)] = DEFAULT_SAMPLE

    def build(self) -> SelectionPolicy:
        """The policy object."""
        return ScorePolicy(
            latency_scale=self.latency_scale, recency_scale=self.recency_scale, sample=self.sample or None
        )


class RoundRobinPolicyConfig(
    msgspec.Struct, tag="round_robin", tag_field="name", forbid_unknown_fields=True, frozen=True, kw_only=True
):
    """`name = "round_robin"`: take turns."""

    def build(self) -> SelectionPolicy:
        """The policy object."""
        return RoundRobinPolicy()


class RandomPolicyConfig(
    msgspec.Struct, tag="random", tag_field="name", forbid_unknown_fields=True, frozen=True, kw_only=True
):
    """`name = "random"`: pick at random (`seed` for a repeatable order)."""

    seed: int | None = None

    def build(self) -> SelectionPolicy:
        """The policy object."""
        return RandomPolicy(random.Random(self.seed) if self.seed is not None else None)


PolicyConfig = ScorePolicyConfig | RoundRobinPolicyConfig | RandomPolicyConfig


class PoolOptions(TypedDict):
    """The `ProxyPool` keyword arguments a config gives: `ProxyPool(sources, **config.pool_options())`."""

    policy: SelectionPolicy
    ban_statuses: tuple[int, ...]
    max_errors: int
    cooldown: float
    max_cooldown: float
    limits: Limits
    tiers: Tiers
    refill_below: int
    lease_timeout: float
    health_check: HealthCheck | None


class ProxyPoolConfig(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A proxy pool's sources and settings; durations in seconds.

    Example (TOML; `ProxyPoolConfig.from_toml(path)`):

    ```toml
    ban_statuses = [403, 407, 429]
    max_errors = 5
    refill_below = 4

    [policy]
    name = "score"                # or "round_robin", "random"
    latency_scale = 0.5
    sample = 8                    # free proxies compared per lease (0: all)

    [limits]
    rate = 2.0                    # per proxy, leases per second
    domain_concurrency = 1

    [[sources]]
    type = "file"
    path = "proxies.txt"          # relative to this file

    [[sources]]
    type = "provider"
    url = "https://api.example.com/proxies?key=..."
    format = "json"
    json_path = "data"
    fields = { host = "ip" }
    min_interval = 30.0
    ttl = 600.0
    tier = 1

    [[sources]]
    type = "tunnel"
    gateway = "http://customer:pw@gw.example.net:22225"
    sessions = 10
    tier = 2
    ```

    Example:
        >>> config = ProxyPoolConfig.from_mapping(
        ...     {"sources": [{"type": "static", "urls": ["http://u:pw@10.0.0.1:8080"]}], "max_errors": 3}
        ... )
        >>> config.sources
        (StaticSourceConfig(urls=('http://u:***@10.0.0.1:8080',), tier=0, name='static'),)
        >>> config.pool_options()["max_errors"]
        3
    """

    sources: tuple[SourceConfig, ...] = ()
    policy: PolicyConfig = ScorePolicyConfig()
    ban_statuses: tuple[int, ...] = (403, 407, 429)
    max_errors: int = 5
    cooldown: float = 1.0
    max_cooldown: float = 300.0
    limits: Limits = Limits()
    tiers: Tiers = Tiers()
    refill_below: int = 1
    lease_timeout: float = 30.0
    health_check: HealthCheck | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str = "<mapping>") -> ProxyPoolConfig:
        """Read a config from plain data (e.g. a `[proxy]` section already parsed).

        Raises:
            ProxyConfigError: naming `source`, the key path and what is wrong.
        """
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as exc:
            raise _config_error(exc, source) from None

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> ProxyPoolConfig:
        """Read a TOML file; a relative file source path is taken relative to the file's folder.

        Raises:
            ProxyConfigError: naming the file, the key path and what is wrong (or the TOML error).
        """
        file = pathlib.Path(path)
        try:
            data = msgspec.toml.decode(file.read_bytes())
        except OSError as exc:
            raise ProxyConfigError("$", f"cannot read: {type(exc).__name__}", source=str(file)) from exc
        except msgspec.DecodeError as exc:
            raise ProxyConfigError("$", f"not TOML: {exc}", source=str(file)) from None
        if not isinstance(data, dict):
            raise ProxyConfigError("$", "expected a table", source=str(file))
        config = cls.from_mapping(data, source=str(file))
        return config.relative_to(file.parent)

    def relative_to(self, folder: str | os.PathLike[str]) -> ProxyPoolConfig:
        """This config with relative file source paths joined to `folder`."""
        sources = tuple(
            msgspec.structs.replace(s, path=os.path.join(folder, s.path))
            if isinstance(s, FileSourceConfig) and not os.path.isabs(s.path)
            else s
            for s in self.sources
        )
        return msgspec.structs.replace(self, sources=sources)

    def sources_built(self) -> list[ProxySource]:
        """The source objects, in config order (fresh ones on every call)."""
        return [source.build() for source in self.sources]

    def pool_options(self) -> PoolOptions:
        """Keyword arguments for `ProxyPool` (a fresh policy object on every call)."""
        return PoolOptions(
            policy=self.policy.build(),
            ban_statuses=self.ban_statuses,
            max_errors=self.max_errors,
            cooldown=self.cooldown,
            max_cooldown=self.max_cooldown,
            limits=self.limits,
            tiers=self.tiers,
            refill_below=self.refill_below,
            lease_timeout=self.lease_timeout,
            health_check=self.health_check,
        )


def _config_error(exc: msgspec.ValidationError, source: str) -> ProxyConfigError:
    """`exc`'s message split into key path and problem (an unknown field's name joins the path)."""
    match = _PATH.match(str(exc))
    assert match is not None  # the pattern matches any text
    problem, key = match["problem"], match["path"] or "$"
    unknown = _UNKNOWN.search(problem)
    if unknown is not None:
        key = f"{key}.{unknown['field']}"
    return ProxyConfigError(key, problem, source=source)
