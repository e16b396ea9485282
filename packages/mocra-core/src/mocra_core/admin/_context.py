"""What the admin app answers from: the node's jobs, its readiness, who starts jobs, and the store."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import msgspec

from ..config import AdminSettings

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..control import JobView

__all__ = ("AdminContext", "JobStarter", "JobsSource", "StartRequest")


class JobsSource(Protocol):
    """The jobs a node knows, running or finished (`mocra_core.control.JobRegistry` is one)."""

    def get(self, job: str) -> JobView | None:
        """The job named `job`, or None."""
        ...

    def views(self) -> Sequence[JobView]:
        """Every job, oldest first."""
        ...


class StartRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The body of `POST /api/v1/jobs`: which spider, the job's name, setting overrides and start URLs.

    Example:
        >>> msgspec.json.decode(b'{"spider": "books", "settings": {"crawl.max_pages": 5}}', type=StartRequest)
        StartRequest(spider='books', job=None, settings={'crawl.max_pages': 5}, start_urls=None)
    """

    spider: str
    job: str | None = None
    settings: dict[str, Any] = {}
    start_urls: list[str] | None = None


class JobStarter(Protocol):
    """Starts jobs on request (`mocra serve`, `mocra run --api`): the same path as the CLI's runs."""

    async def start(self, request: StartRequest) -> str:
        """Start a run and return its job's name once it is registered.

        Raises:
            MocraError: the spider is unknown, a setting invalid, or the job already runs here.
        """
        ...

    def spiders(self) -> Sequence[str]:
        """The names of the spiders and modules this node can start."""
        ...


@dataclasses.dataclass
class AdminContext:
    """Everything the routes read.

    Attributes:
        jobs: The node's jobs.
        readiness: `(ready, state)` for `/ready` (e.g. `(True, "active")`, `(False, "draining")`).
        settings: `[admin]` (keys, read keys, rate, CORS).
        starter: Who starts jobs on `POST /api/v1/jobs`; None: this node starts none.
        store_url: The store of `/api/v1/store/...` (`[store] url`); None: those answer 404.
        closing: Set when the server stops: event streams end.
    """

    jobs: JobsSource
    readiness: Callable[[], tuple[bool, str]]
    settings: AdminSettings = dataclasses.field(default_factory=AdminSettings)
    starter: JobStarter | None = None
    store_url: str | None = None
    closing: anyio.Event = dataclasses.field(default_factory=anyio.Event)
