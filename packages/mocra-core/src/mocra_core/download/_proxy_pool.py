"""The `[proxy]` settings made real: a `mocra_proxy.ProxyPool` (the `proxy` extra) and a `ProxyRoute`.

`mocra_proxy` is imported only here, and only when a pool is configured.
"""

from __future__ import annotations

from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

from .._lazy import require_extra
from ._proxy_route import POOL, PoolRoute, ProxyRoute

if TYPE_CHECKING:
    from collections import Counter
    from collections.abc import AsyncIterator, Mapping

    from mocra_proxy import ProxyPoolConfig

__all__ = ("open_proxy_route", "pool_config")


def pool_config(data: Mapping[str, Any], *, label: str = POOL) -> ProxyPoolConfig:
    """Validate a `[proxy.pool]` (or `[proxy.pools.<name>]`) mapping as `mocra_proxy.ProxyPoolConfig`.

    Raises:
        ValueError: `<label>: <key path>: <problem>` (a settings check: the loader prefixes `proxy.`).
        MissingExtra: mocra-proxy is not installed.
    """
    require_extra("mocra_proxy", "proxy", f"a proxy pool ([proxy.{label}])")
    from mocra_proxy import ProxyConfigError, ProxyPoolConfig

    try:
        return ProxyPoolConfig.from_mapping(data, source=label)
    except ProxyConfigError as exc:
        problem = str(exc).removeprefix(f"{exc.source}: {exc.key}: ")
        raise ValueError(f"{label}: {exc.key.removeprefix('$.')}: {problem}") from None


@asynccontextmanager
async def open_proxy_route(
    url: str | None,
    pool: Mapping[str, Any],
    *,
    pools: Mapping[str, Mapping[str, Any]] | None = None,
    state_url: str | None = None,
    namespace: str = "mocra",
    failures: Counter[str] | None = None,
) -> AsyncIterator[ProxyRoute | None]:
    """The route of the `[proxy]` settings (`None` without `url` or pools), its pools open in the block.

    Args:
        url: One fixed proxy for every request.
        pool: `[proxy.pool]`, the default pool: mocra-proxy's `ProxyPoolConfig` keys; empty for none.
        pools: `[proxy.pools.<name>]`: further pools by name, chosen by `meta["proxy"]` or a spider's
            or module's `proxy`.
        state_url: Keep the pools' state in this Redis (`mocra_proxy.RedisState`), shared by every pool
            of `namespace` (a named pool's under `<namespace>:<name>`); `None`: in this process.
        namespace: The job whose workers share the state.
        failures: Where the route counts proxy failures (the run's stats).
    """
    configs = {POOL: pool} if pool else {}
    for name, data in (pools or {}).items():
        if name in configs:
            raise ValueError(f"two proxy pools named {name!r} ([proxy.pool] is named {POOL!r})")
        configs[name] = data
    if not configs:
        yield None if url is None and failures is None else ProxyRoute(url=url, failures=failures)
        return
    from mocra_proxy import ProxyPool, RedisState

    async with AsyncExitStack() as stack:
        routes: list[PoolRoute] = []
        for name, data in configs.items():
            config = pool_config(data, label=POOL if name == POOL and pool else f"pools.{name}")
            state = None
            if state_url is not None:
                where = namespace if name == POOL else f"{namespace}:{name}"
                state = await stack.enter_async_context(RedisState(state_url, namespace=where))
            opened = ProxyPool(config.sources_built(), **config.pool_options(), state=state)
            await stack.enter_async_context(opened)
            routes.append(PoolRoute(name, opened, frozenset(config.ban_statuses)))
        yield ProxyRoute(url=url, pools=routes, failures=failures)
