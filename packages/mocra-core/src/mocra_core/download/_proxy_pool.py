"""The `[proxy]` settings made real: a `mocra_proxy.ProxyPool` (the `proxy` extra) and a `ProxyRoute`.

`mocra_proxy` is imported only here, and only when a pool is configured.
"""

from __future__ import annotations

from contextlib import AsyncExitStack, asynccontextmanager
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
async def open_proxy_route(
    url: str | None, pool: Mapping[str, Any], *, state_url: str | None = None, namespace: str = "mocra"
) -> AsyncIterator[ProxyRoute | None]:
    """The route of the `[proxy]` settings (`None` without `url` and `pool`), its pool open in the block.

    Args:
        url: One fixed proxy for every request.
        pool: `[proxy.pool]`: mocra-proxy's `ProxyPoolConfig` keys; empty for no pool.
        state_url: Keep the pool's state in this Redis (`mocra_proxy.RedisState`), shared by every pool
            of `namespace`; `None`: in this process.
        namespace: The job whose workers share the state.
    """
    if not pool:
        yield None if url is None else ProxyRoute(url=url)
        return
    from mocra_proxy import ProxyPool, RedisState

    config = pool_config(pool)
    async with AsyncExitStack() as stack:
        state = None
        if state_url is not None:
            state = await stack.enter_async_context(RedisState(state_url, namespace=namespace))
        opened = ProxyPool(config.sources_built(), **config.pool_options(), state=state)
        await stack.enter_async_context(opened)
        yield ProxyRoute(url=url, pool=opened, ban_statuses=config.ban_statuses)
