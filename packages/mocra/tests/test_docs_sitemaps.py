"""The code in docs/sitemaps.md runs: the spider compiles, and the standalone walk reads a real sitemap."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest

from mocra_core.modules import compile_module
from mocra_core.testing import LocalServer, ServerResponse

DOC = pathlib.Path(__file__).parents[3] / "docs" / "sitemaps.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def run(code: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "docs_sitemaps"}
    exec(compile(code, str(DOC), "exec"), namespace)
    return namespace


def test_the_spider_block_compiles() -> None:
    shop = run(BLOCKS[0])["Shop"]
    assert compile_module(shop()).name == "shop"


@pytest.mark.anyio
async def test_the_standalone_block_reads_a_sitemap() -> None:
    site = LocalServer()
    async with site.running():
        urls = "".join(f"<url><loc>{site.url(f'/p/{n}')}</loc></url>" for n in range(3))
        site.route(
            "/sitemap.xml",
            ServerResponse(
                body=f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
            ),
        )
        found = await run(BLOCKS[1])["pages"](site.url("/sitemap.xml"))
    assert found == [site.url(f"/p/{n}") for n in range(3)]
