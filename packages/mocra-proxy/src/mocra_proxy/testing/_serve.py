"""Serving a connection handler on 127.0.0.1, in a task group or a thread: what the test servers share."""

from __future__ import annotations

import contextlib
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.from_thread
from anyio.streams.tls import TLSListener

if TYPE_CHECKING:
    import ssl
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
    from contextlib import AbstractAsyncContextManager

__all__ = ("in_thread", "serving")


@asynccontextmanager
async def serving(
    handler: Callable[[Any], Awaitable[None]], *, port: int = 0, ssl_context: ssl.SSLContext | None = None
) -> AsyncIterator[int]:
    """Serve `handler` on 127.0.0.1:`port` (0: any free one; TLS with `ssl_context`); yields the port."""
    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    bound = int(tcp.extra(anyio.abc.SocketAttribute.local_port))
    listener: anyio.abc.Listener[Any] = (
        TLSListener(tcp, ssl_context, standard_compatible=False) if ssl_context else tcp
    )
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handler)
        try:
            yield bound
        finally:
            tg.cancel_scope.cancel()


@contextlib.contextmanager
def in_thread(running: Callable[[], AbstractAsyncContextManager[str]]) -> Iterator[str]:
    """Enter `running()` on a blocking portal's event-loop thread until the block exits; yields its URL."""
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(running()) as url,
    ):
        yield url
