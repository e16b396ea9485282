"""Fixtures for engine tests: a fast-retrying builder and a site served on 127.0.0.1."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from mocra_core import Mocra, MocraBuilder
from mocra_core.testing import LocalServer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def builder() -> MocraBuilder:
    """A builder tuned for tests: no robots.txt, quick retries."""
    return Mocra.builder().set("crawl.obey_robots=false", "retry.base=0.01", "retry.max_delay=0.05")


@pytest.fixture
async def server() -> AsyncIterator[LocalServer]:
    site = LocalServer()
    async with site.running():
        yield site
