"""`MocraBuilder.deploy`: the same deploy and rollback as `mocra deploy`, for a job dir, from code."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from typing import Any

import pytest

from mocra_core import ConfigError, Mocra
from mocra_core.generations import Deployed, JobGenerations
from mocra_core.testing import LocalServer, ServerResponse

pytestmark = pytest.mark.anyio

SPIDER = """
from mocra_core import Ctx, Response, Spider


class Shop(Spider[dict]):
    name = "shop"
    start_urls = ["BASE/"]

    async def parse(self, response: Response, ctx: Ctx[dict]) -> None:
        ctx.emit({"generation": GEN})
"""


def write(path: pathlib.Path, base: str, generation: int) -> pathlib.Path:
    path.write_text(SPIDER.replace("BASE", base).replace("GEN", str(generation)))
    return path


def load(path: pathlib.Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"shop_{path.stat().st_mtime_ns}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.Shop()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_builder_deploys_a_new_generation_and_rolls_back(tmp_path: pathlib.Path) -> None:
    server = LocalServer({"/": ServerResponse(body="ok")})
    async with server.running():
        file = write(tmp_path / "shop.py", server.base_url, 1)
        job = str(tmp_path / "job")
        first = (
            await Mocra.builder().set("crawl.obey_robots=false").job_dir(job).spider(load(file)).run_async()
        )
        assert first.ok, first.failures

        write(file, server.base_url, 2)
        builder = Mocra.builder().job_dir(job).spider(load(file))
        done = await builder.deploy(str(file))
        assert isinstance(done, Deployed) and done.activated == {"shop": 2}

        rolled = await builder.deploy(activate=1)
        assert isinstance(rolled, JobGenerations) and rolled.active() == {"shop": 1}

        with pytest.raises(ConfigError, match="give the spiders' file"):
            await builder.deploy()


async def test_a_job_without_a_store_has_nothing_to_deploy_to(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ConfigError, match="deploy to a job on a broker"):
        await Mocra.builder().set("crawl.job=j").deploy(str(tmp_path / "x.py"))
