"""A PostgreSQL that goes away while a store is open: calls raise StoreUnavailable (URL redacted) and the
store recovers by itself when the server is back. The outage is a real TCP forwarder in front of the
real server being shut and started again."""

from __future__ import annotations

import socket
import threading
from typing import TYPE_CHECKING

import pytest
from sqlalchemy.engine import make_url

from mocra_store import Store, StoreUnavailable

if TYPE_CHECKING:
    from collections.abc import Iterator

    from conftest import Postgres

pytestmark = pytest.mark.anyio


class Forwarder:
    """Forwards 127.0.0.1:<port> to the PostgreSQL server until stopped; can start again on the same port."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen()
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self._open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self) -> None:
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() thread on Linux
            except OSError:
                pass
            self._listener.close()
            self._listener = None
        for end in self._open:
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()
        self._open.clear()


@pytest.fixture
def forwarded(postgres: Postgres, postgres_at_head: str) -> Iterator[tuple[str, Forwarder]]:
    postgres.truncate(postgres_at_head)
    real = make_url(postgres_at_head)
    forwarder = Forwarder((real.host or "127.0.0.1", real.port or 5432))
    forwarder.start()
    url = real.set(host="127.0.0.1", port=forwarder.port, password="s3cret")
    yield url.render_as_string(hide_password=False), forwarder
    forwarder.stop()


async def test_an_outage_raises_store_unavailable_and_the_store_recovers(
    forwarded: tuple[str, Forwarder],
) -> None:
    url, forwarder = forwarded
    async with Store.open(url) as store:
        assert await store.accounts() == []
        forwarder.stop()

        with pytest.raises(StoreUnavailable) as raised:
            await store.accounts()

        forwarder.start()
        assert await store.accounts() == []

    message = str(raised.value)
    assert f":***@127.0.0.1:{forwarder.port}/" in message
    assert "s3cret" not in message
