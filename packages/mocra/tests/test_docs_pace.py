"""The code in docs/pace.md runs: its TOML loads, and the standalone autoscaler fetches every URL."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest

from mocra_core.config import Settings
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

DOC = pathlib.Path(__file__).parents[3] / "docs" / "pace.md"
TEXT = DOC.read_text()


def test_the_toml_block_is_valid_settings(tmp_path: pathlib.Path) -> None:
    (block,) = re.findall(r"```toml\n(.*?)```", TEXT, flags=re.S)
    path = tmp_path / "mocra.toml"
    path.write_text(block)
    settings = Settings.from_toml(str(path))
    assert settings.crawl.autoscale and settings.download.autothrottle.enabled


@pytest.mark.anyio
async def test_the_standalone_block_fetches_every_url() -> None:
    (code,) = re.findall(r"```python\n(.*?)```", TEXT, flags=re.S)
    namespace: dict[str, Any] = {"__name__": "docs_pace"}
    exec(compile(code, str(DOC), "exec"), namespace)

    async def ok(request: ServerRequest) -> ServerResponse:
        return ServerResponse(body="ok")

    site = LocalServer(fallback=ok)
    async with site.running():
        await namespace["fetch_all"]([site.url(f"/{n}") for n in range(20)])
    assert sum(site.hits.values()) == 20
