"""`StaticSource`: a fixed list of proxies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._proxy import Proxy

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ("StaticSource",)


class StaticSource:
    """The same proxies on every fetch.

    Args:
        urls: Proxy URLs (`scheme://user:pass@host:port` or `host:port[:user:pass]`) or `Proxy` objects;
            parsed here, so a bad one fails at construction (`BadProxy`, redacted).
        tier: Cost tier given to parsed URLs (a `Proxy` keeps its own).
        name: The source's name (`Proxy.source` of parsed URLs).
        weight: Order among sources when the pool refills (higher first).

    Example:
        >>> import anyio
        >>> source = StaticSource(["http://u:pw@10.0.0.1:8080", "10.0.0.2:3128"], tier=1)
        >>> anyio.run(source.fetch)
        (Proxy('http://u:***@10.0.0.1:8080'), Proxy('http://10.0.0.2:3128'))
    """

    def __init__(
        self, urls: Iterable[str | Proxy], *, tier: int = 0, name: str = "static", weight: float = 1.0
    ) -> None:
        self.name = name
        self.weight = weight
        self._proxies = tuple(
            url if isinstance(url, Proxy) else Proxy.parse(url, tier=tier, source=name) for url in urls
        )

    async def fetch(self) -> Sequence[Proxy]:
        """The proxies given at construction."""
        return self._proxies

    def __repr__(self) -> str:
        return f"StaticSource(name={self.name!r}, proxies={len(self._proxies)})"
