"""A proxy.py plugin that counts the requests a proxy forwards, for `bench_proxy_crawl.py`.

Loaded by proxy.py itself (`--plugins proxypy_counter.RequestCounter`, this folder on `PYTHONPATH`;
`proxy_procs.ProxyPyProxies` does both), never imported by mocra: `proxy` is proxy.py's package, installed
only in the benchmark's own venv. Each worker process keeps one count and writes it to
`$PROXYPY_COUNT_DIR/<pid>` whenever a client connection closes (the crawler closes them all when it ends).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from proxy.http.proxy import HttpProxyBasePlugin  # type: ignore[import-not-found]  # not in the repo venv

_count = 0


class RequestCounter(HttpProxyBasePlugin):  # type: ignore[misc]  # a class of an unchecked module
    """Counts every request handed to upstream; the count is written when a connection closes."""

    def handle_client_request(self, request: Any) -> Any:
        """Count the request, pass it on unchanged."""
        global _count
        _count += 1
        return request

    def on_upstream_connection_close(self) -> None:
        """Write this worker's count so far."""
        folder = os.environ.get("PROXYPY_COUNT_DIR")
        if folder:
            Path(folder, str(os.getpid())).write_text(str(_count))
