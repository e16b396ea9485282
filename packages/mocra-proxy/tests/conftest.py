"""Shared fixtures: the anyio backend, a hand-set clock, a small real HTTP server for provider endpoints and a
self-signed certificate for HTTPS origins (no mocra_core)."""

from __future__ import annotations

import pathlib
import shutil
import ssl
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Clock:
    """A clock that moves only when a test moves `now` (pass it as a pool's or source's `clock`)."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    """A `Clock` at 1,000.0 s."""
    return Clock()


@dataclass
class Route:
    """What the server answers on one path."""

    body: bytes = b""
    status: int = 200
    content_type: str = "text/plain"
    delay: float = 0.0


@dataclass
class Origin:
    """A real HTTP server on 127.0.0.1 (port 0) in a thread; counts hits per path (query ignored)."""

    port: int = 0
    routes: dict[str, Route] = field(default_factory=dict)
    hits: Counter[str] = field(default_factory=Counter)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def route(self, path: str, body: str | bytes, **options: object) -> str:
        """Serve `body` on `path`; returns the full URL."""
        data = body.encode() if isinstance(body, str) else body
        self.routes[path] = Route(body=data, **options)  # type: ignore[arg-type]
        return self.url(path)


def _handler(origin: Origin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.partition("?")[0]
            origin.hits[path] += 1
            route = origin.routes.get(path, Route(body=b"not found", status=404))
            if route.delay:
                time.sleep(route.delay)
            self.send_response(route.status)
            self.send_header("Content-Type", route.content_type)
            self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            self.wfile.write(route.body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that gave up (a timeout test)
            super().handle_error(request, client_address)  # type: ignore[arg-type]


@pytest.fixture
def origin() -> Iterator[Origin]:
    """A fresh local HTTP server per test."""
    state = Origin()
    server = _QuietServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), name="origin", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, pathlib.Path]:
    """A self-signed certificate for 127.0.0.1, made now with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def server_tls(tls_files: tuple[pathlib.Path, pathlib.Path]) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*tls_files)
    return context


@pytest.fixture
def client_tls(tls_files: tuple[pathlib.Path, pathlib.Path]) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(tls_files[0]))
