"""Connecting a `NatsJetStreamQueue`: the connection, its streams, and API calls that ride out outages."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, TypeVar

import anyio
import nats
import nats.errors
import nats.js.api as jsapi
import nats.js.errors

from ..._errors import BackendError, BackendUnavailable, redact

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from nats.aio.client import Client
    from nats.js import JetStreamContext

    from ._wire import Names

__all__ = ("Api", "connect", "ensure_streams")

logger = logging.getLogger(__name__)

T = TypeVar("T")

_JS_UNAVAILABLE = nats.js.errors.ServiceUnavailableError
_NO_JETSTREAM = "JetStream does not answer: is it enabled on the server (`nats-server -js`)?"
_RETRY = (
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionReconnectingError,
    _JS_UNAVAILABLE,
)


class Api:
    """Runs JetStream API requests, retrying through an outage of up to `timeout` seconds.

    Driver errors become `BackendUnavailable` (unreachable) or `BackendError` (refused, with the
    server's description); the driver's exception is the `__cause__`.
    """

    def __init__(self, url: str, timeout: float) -> None:
        self.url = url
        self.timeout = timeout
        self.closed = False

    async def __call__(self, what: str, call: Callable[[], Awaitable[T]], /) -> T:
        """Return `await call()`; `what` names the operation in error messages."""
        deadline = anyio.current_time() + self.timeout
        while True:
            try:
                return await call()
            except _RETRY as exc:
                logger.debug("retrying %s after %r", what, exc)
                if anyio.current_time() >= deadline:
                    problem = _NO_JETSTREAM if isinstance(exc, _JS_UNAVAILABLE) else repr(exc)
                    raise BackendUnavailable("nats", self.url, f"cannot {what}: {problem}") from exc
            except nats.errors.ConnectionClosedError as exc:
                if self.closed:
                    raise anyio.ClosedResourceError from exc
                raise BackendUnavailable("nats", self.url, f"cannot {what}: connection closed") from exc
            except nats.js.errors.ServerError as exc:  # 500s are transient (e.g. a store being set up)
                if anyio.current_time() >= deadline:
                    raise BackendError("nats", self.url, f"cannot {what}: {exc.description}") from exc
            except nats.js.errors.APIError as exc:
                raise BackendError("nats", self.url, f"cannot {what}: {exc.description or exc!r}") from exc
            await anyio.sleep(0.05)


async def connect(
    url: str, *, name: str, within: float, on_reconnect: Callable[[], Awaitable[None]]
) -> Client:
    """Connect to the servers of `url` (comma-separated), reconnecting forever after an outage.

    Raises:
        BackendUnavailable: no server answered within `within` seconds.
    """

    async def on_error(exc: Exception) -> None:
        logger.debug("nats %s: %r", redact(url), exc)

    async def on_reconnect_cb() -> None:
        logger.info("nats %s: reconnected", redact(url))
        await on_reconnect()

    try:
        with anyio.fail_after(within):
            return await nats.connect(
                [server.strip() for server in url.split(",")],
                name=name,
                connect_timeout=max(1, int(within)),
                reconnect_time_wait=0.25,  # type: ignore[arg-type,unused-ignore]  # a float works
                max_reconnect_attempts=-1,
                error_cb=on_error,
                reconnected_cb=on_reconnect_cb,
            )
    except (TimeoutError, OSError, nats.errors.Error) as exc:
        problem = str(exc) or f"no answer in {within:g} s"
        raise BackendUnavailable("nats", url, f"cannot connect: {problem}") from exc


async def ensure_streams(js: JetStreamContext, names: Names, storage: str, api: Api) -> None:
    """Create the work stream (work-queue retention) and the DLQ stream (limits), unless they exist."""
    store = jsapi.StorageType.FILE if storage == "file" else jsapi.StorageType.MEMORY
    for name, subjects, retention in (
        (names.work_stream, f"{names.ns}.q.>", jsapi.RetentionPolicy.WORK_QUEUE),
        (names.dlq_stream, f"{names.ns}.dlq.>", jsapi.RetentionPolicy.LIMITS),
    ):
        config = jsapi.StreamConfig(
            name=name, subjects=[subjects], retention=retention, storage=store, description="mocra queue"
        )
        try:
            await api("create a stream", lambda config=config: js.add_stream(config))  # type: ignore[misc]
        except BackendError as exc:
            if not isinstance(exc.__cause__, nats.js.errors.BadRequestError):
                raise
            # it exists, configured otherwise (e.g. by an operator): use it as it is
            await api("read a stream", lambda name=name: js.stream_info(name))  # type: ignore[misc]
