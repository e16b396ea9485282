"""`AdminServer`: uvicorn serving the admin app inside the caller's task group, without its signal handlers.

mocra handles SIGINT/SIGTERM itself (a run drains), so the server never takes them: it stops when its owner
calls `stop` (the run ended, the node drained). The socket is bound before anything starts, so a port in
use is an error naming the address at once.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import uvicorn

from .._errors import ConfigError
from ._app import admin_app

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from anyio.abc import TaskStatus

    from ._context import AdminContext

__all__ = ("DEFAULT_ADDRESS", "AdminServer", "parse_address", "serving")

logger = logging.getLogger(__name__)

DEFAULT_ADDRESS = "127.0.0.1:12800"
"""Where the admin server listens unless told otherwise (this host only)."""


def parse_address(text: str) -> tuple[str, int]:
    """`host:port` (`[v6]:port`); a bare port or `:port` listens on 127.0.0.1.

    Raises:
        ConfigError: not an address with a port from 0 to 65535 (0: any free port).

    Example:
        >>> parse_address("0.0.0.0:8080"), parse_address("9000"), parse_address("[::1]:80")
        (('0.0.0.0', 8080), ('127.0.0.1', 9000), ('::1', 80))
    """
    host, sep, port = text.strip().rpartition(":")
    if not sep:
        host, port = "", text.strip()
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise ConfigError("--api", f"expected host:port (e.g. {DEFAULT_ADDRESS}), got {text!r}", source="api")
    return host, int(port)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        where = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
        raise ConfigError("--api", f"cannot listen on {where}: {exc.strerror or exc}", source="api") from None
    sock.set_inheritable(True)
    return sock


class _Uvicorn(uvicorn.Server):
    """uvicorn without its signal handlers, telling when it listens."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = anyio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # mocra's run or node takes SIGINT/SIGTERM and stops the server

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.listening.set()


class AdminServer:
    """The admin app on a socket: `bind()` (errors at once), then `serve()` in a task group, `stop()`.

    Example:
        >>> from mocra_core.control import JobRegistry
        >>> from mocra_core.admin import AdminContext
        >>> server = AdminServer(AdminContext(jobs=JobRegistry(), readiness=lambda: (True, "idle")), "0")
        >>> server.bind()
        >>> server.address.startswith("127.0.0.1:")
        True
        >>> server.close()
    """

    def __init__(self, context: AdminContext, address: str = DEFAULT_ADDRESS) -> None:
        self._context = context
        self._host, self._port = parse_address(address)
        self._socket: socket.socket | None = None
        config = uvicorn.Config(
            admin_app(context),
            lifespan="off",
            ws="none",
            log_config=None,  # mocra's logging stays as it is
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=3,
        )
        self._server = _Uvicorn(config)

    @property
    def address(self) -> str:
        """`host:port` it listens on (the real port when asked for port 0), once bound."""
        if self._socket is None:
            return f"{self._host}:{self._port}"
        host, port = self._socket.getsockname()[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    @property
    def url(self) -> str:
        """`http://host:port` of the server."""
        return f"http://{self.address}"

    def bind(self) -> None:
        """Take the address now.

        Raises:
            ConfigError: it is in use or not this host's, naming it.
        """
        if self._socket is None:
            self._socket = _bind(self._host, self._port)

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until `stop`; tells `task_status` once it accepts connections."""
        self.bind()
        assert self._socket is not None
        async with anyio.create_task_group() as group:
            group.start_soon(self._server.serve, [self._socket])
            await self._server.listening.wait()
            logger.info("admin API on %s", self.url)
            task_status.started()
        self.close()

    def stop(self) -> None:
        """End the event streams and stop serving (open requests finish, within 3 s)."""
        self._context.closing.set()
        self._server.should_exit = True

    def close(self) -> None:
        """Release the socket (after `serve`, or when it never ran)."""
        if self._socket is not None:
            self._socket.close()


@asynccontextmanager
async def serving(context: AdminContext, address: str = DEFAULT_ADDRESS) -> AsyncIterator[AdminServer]:
    """Serve the admin app on `address` in the block; it stops when the block ends.

    Raises:
        ConfigError: the address cannot be listened on (before the block runs).
    """
    server = AdminServer(context, address)
    server.bind()
    try:
        async with anyio.create_task_group() as group:
            await group.start(server.serve)
            try:
                yield server
            finally:
                server.stop()
    finally:
        server.close()
