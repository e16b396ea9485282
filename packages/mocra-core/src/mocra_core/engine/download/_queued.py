"""`queue_response`: a response goes onto its module's topic with the fence of the download that made it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...queue._fence import Fence
from ...topics import response_topic

if TYPE_CHECKING:
    from ...http import Response
    from ...queue import Delivery, QueueBackend

__all__ = ("queue_response",)


async def queue_response(
    queue: QueueBackend, delivery: Delivery, response: Response, module: str, priority: int
) -> None:
    """Publish `response` (of the request `delivery`) on `module`'s response topic; ack the request.

    The response carries the request delivery's `Fence`: its items are written under the download's claim,
    so the response of a download whose lease had expired loses to the newer download's.

    Example:
        >>> import anyio
        >>> from mocra_core.http import Request, Response
        >>> from mocra_core.queue import MemoryQueue
        >>> async def main():
        ...     async with MemoryQueue() as queue:
        ...         await queue.publish("request", ["https://example.com/"])
        ...         [request] = await queue.consume("request", group="download")
        ...         page = Response("https://example.com/", 200, [], b"", Request("https://example.com/"))
        ...         await queue_response(queue, request, page, "books", 0)
        ...         [parsed] = await queue.consume(response_topic("books"), group="parse")
        ...         return parsed.payload.fence, await queue.pending("request")
        >>> anyio.run(main)
        (Fence(claim='request/1', token=1), 0)
    """
    response.fence = Fence.of(delivery)
    await queue.publish(response_topic(module), [response], priority=priority)
    await queue.ack([delivery])
