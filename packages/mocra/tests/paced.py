"""A site whose per-page delay a test changes while it serves: slow while the test steers a crawl
(deploys, a rollback, a broker outage), no delay once only the rest of the crawl is left to check."""

from __future__ import annotations

import anyio

from mocra_core.testing import Handler, ServerRequest, ServerResponse


class Paced:
    """A handler answering with `handler` after `delay` s; the test may set `delay` at any time."""

    def __init__(self, handler: Handler, delay: float) -> None:
        self.handler = handler
        self.delay = delay

    async def __call__(self, request: ServerRequest) -> ServerResponse:
        if self.delay:
            await anyio.sleep(self.delay)
        return await self.handler(request)
