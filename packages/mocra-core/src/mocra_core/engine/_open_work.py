"""`OpenWork`: this worker's count of the messages of each generation it queued and settled.

A generation drains until the job holds no message of it. Every message (a task, a request, a response)
is counted +1 when queued and -1 when acknowledged or dead-lettered (a response's +1 and its request's
ack balance; a message sent back with a delay is +1 -1), in memory per message; the sums go to the job's
coordination store (`incr`, one per generation) about once a second, and a draining generation whose sum
is down to 0 retires. A worker killed loses its last second of sums: a sum too low retires the generation
early (its last messages then run on the active generation), one too high keeps it draining.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..modules import Task

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..coordination import Coordination
    from ..queue import Delivery

__all__ = ("OpenWork", "open_key")


def open_key(module: str, generation: int) -> str:
    """The coordination key of the job's count of queued messages of `generation` of `module`.

    Example:
        >>> open_key("news", 2)
        'generations/open/news/2'
    """
    return f"generations/open/{module}/{generation}"


class OpenWork:
    """Counts, per `module/node` and generation, the messages queued minus those settled, until `flush`.

    Example:
        >>> from mocra_core.modules import Task
        >>> work = OpenWork()
        >>> work.published([Task(module="news", node="spider", generation=2)] * 3)
        >>> work.take()
        {('news', 2): 3}
    """

    __slots__ = ("_deltas",)

    def __init__(self) -> None:
        self._deltas: dict[tuple[str, int], int] = {}

    def published(self, payloads: Iterable[object]) -> None:
        """Messages were queued."""
        deltas = self._deltas
        for payload in payloads:
            key = _key(payload)
            if key is not None:
                deltas[key] = deltas.get(key, 0) + 1

    def settled(self, deliveries: Iterable[Delivery]) -> None:
        """Messages were acknowledged or dead-lettered."""
        deltas = self._deltas
        for delivery in deliveries:
            key = _key(delivery.payload)
            if key is not None:
                deltas[key] = deltas.get(key, 0) - 1

    def take(self) -> dict[tuple[str, int], int]:
        """The counts since the last `take`, per module and generation (zeros left out); reset them."""
        taken, self._deltas = self._deltas, {}
        found: dict[tuple[str, int], int] = {}
        for (path, generation), delta in taken.items():
            key = (path.partition("/")[0], generation)
            found[key] = found.get(key, 0) + delta
        return {key: delta for key, delta in found.items() if delta}

    async def flush(self, coordination: Coordination) -> None:
        """Add the counts since the last flush to the job's (`open_key`); put them back if the store fails."""
        taken = self.take()
        for index, ((module, generation), delta) in enumerate(taken.items()):
            try:
                await coordination.incr(open_key(module, generation), delta)
            except BaseException:
                for key, left in list(taken.items())[index:]:
                    self._deltas[key] = self._deltas.get(key, 0) + left
                raise


def _key(payload: object) -> tuple[str, int] | None:
    if type(payload) is Task:
        return (payload.module, payload.generation) if payload.generation else None
    routing = getattr(payload, "routing", None)  # a `Routed` request or a `Response`
    if routing is None or not routing.generation:
        return None
    return routing.node or "", routing.generation
