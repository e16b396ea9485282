"""Reading proxies from text, one a line: comments and blank lines skipped, a bad line logged and skipped."""

from __future__ import annotations

import logging

from ._proxy import BadProxy, Proxy

__all__ = ("parse_lines",)

logger = logging.getLogger(__name__)


def parse_lines(
    text: str, *, where: str, tier: int, source: str, expires_at: float | None = None
) -> list[Proxy]:
    """Proxies from `text`, one a line (`scheme://user:pass@host:port` or `host:port[:user:pass]`).

    Blank lines and lines starting with `#` are skipped; a line that is not a proxy is logged at WARNING
    with `where` and its line number (its password redacted) and skipped.
    """
    proxies: list[Proxy] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            proxies.append(Proxy.parse(line, tier=tier, source=source, expires_at=expires_at))
        except BadProxy as exc:
            logger.warning("%s:%d: skipped: %s", where, number, exc)
    return proxies
