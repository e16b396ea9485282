"""The `[proxy]` settings made real: a `mocra_proxy.ProxyPool` (the `proxy` extra) and a `ProxyRoute`.

`mocra_proxy` is imported only here, and only when a pool is configured.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from .._errors import MissingExtra
from ._proxy_route import ProxyRoute

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from mocra_proxy import ProxyPoolConfig

__all__ = ("open_proxy_route", "pool_config")


def pool_config(data: Mapping[str, Any]) -> ProxyPoolConfig:
    """Validate a `[proxy.pool]` mapping as `mocra_proxy.ProxyPoolConfig`.

    Raises:
        ValueError: `pool: <key path>: <problem>` (a settings check: the loader names `proxy.pool`).
        MissingExtra: mocra-proxy is not installed.
    """
    try:
        from mocra_proxy import ProxyConfigError, ProxyPoolConfig
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != "mocra_proxy":
            raise
        raise MissingExtra("proxy", "a proxy pool ([proxy.pool])") from None
    try:
        return ProxyPoolConfig.from_mapping(data, source="pool")
    except ProxyConfigError as exc:
        problem = str(exc).removeprefix(f"{exc.source}: {exc.key}: ")
        raise ValueError(f"pool: {exc.key.removeprefix('$.')}: {problem}") from None


@asynccontextmanager
async def open_proxy_route(url: str | None, pool: Mapping[str, Any]) -> AsyncIterator[ProxyRoute | None]:
    """The route of the `[proxy]` settings (`None` without `url` and `pool`), its pool open in the block.

    Args:
        url: One fixed proxy for every request.
        pool: `[proxy.pool]`: mocra-proxy's `ProxyPoolConfig` keys; empty for no pool.
    """
    if not pool:
        yield None if url is None else ProxyRoute(url=url)
        return
    from mocra_proxy import ProxyPool

    config = pool_config(pool)
    async with ProxyPool(config.sources_built(), **config.pool_options()) as opened:
        yield ProxyRoute(url=url, pool=opened, ban_statuses=config.ban_statuses)
