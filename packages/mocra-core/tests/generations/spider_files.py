"""Spider files of the deploy tests: one `News` spider whose item shape and parse vary by generation."""

from __future__ import annotations

import pathlib
import textwrap

TEMPLATE = """
from mocra_core import Spider


class News(Spider):
    name = "news"

    async def parse(self, response, ctx):
        {body}
"""

V1 = 'ctx.emit({"title": response.css_first("h1").text(), "gen": 1})'
V2 = 'ctx.emit({"title": response.css_first("h1").text(), "gen": 2})'
RENAMED = 'ctx.emit({"headline": response.css_first("h1").text(), "gen": 2})'
BROKEN = 'raise ValueError("no h1 here")'


def write(path: pathlib.Path, body: str, *, extra: str = "") -> pathlib.Path:
    path.write_text(textwrap.dedent(TEMPLATE).format(body=body) + extra)
    return path
