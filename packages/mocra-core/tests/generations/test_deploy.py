"""`deploy`: a file's code prepared apart, verified over recorded responses, activated by CAS, rolled back."""

from __future__ import annotations

import pathlib

import anyio
import pytest

from mocra_core.coordination import Coordination, LocalCoordination
from mocra_core.generations import (
    DeployConflict,
    DeployRefused,
    GenerationWatch,
    activate_number,
    active_in_file,
    deploy,
    read_generations,
    register,
)
from mocra_core.generations._code import code_hash
from mocra_core.generations._probe import load_classes

from .spider_files import BROKEN, RENAMED, V1, V2, write

pytestmark = pytest.mark.anyio


def states(record: object, name: str = "news") -> list[tuple[int, str]]:
    return [(g.number, g.state) for g in record.modules[name].generations]  # type: ignore[attr-defined]


async def test_deploy_activates_new_code_and_a_rollback_the_old(tmp_path: pathlib.Path) -> None:
    store = LocalCoordination()
    spider = write(tmp_path / "spider.py", V1)

    first = await deploy(str(spider), store, job="j")
    assert (first.activated, first.new, first.removed) == ({"news": 1}, ["news"], [])
    write(spider, V2)
    second = await deploy(str(spider), store, job="j")
    assert second.activated == {"news": 2} and second.new == []
    assert states(second.record) == [(1, "draining"), (2, "active")]
    again = await deploy(str(spider), store, job="j")
    assert again.unchanged == ["news"] and again.activated == {}

    back = await activate_number(store, 1, job="j")
    assert states(back) == [(1, "active"), (2, "draining")]
    with pytest.raises(DeployRefused, match="no module has a generation 7 .the latest: news 2."):
        await activate_number(store, 7, job="j")


async def test_a_deploy_sees_the_hash_a_worker_loading_the_file_has(tmp_path: pathlib.Path) -> None:
    spider = write(tmp_path / "same.py", V1)
    store = LocalCoordination()
    deployed = await deploy(str(spider), store, job="j")

    (cls,) = load_classes(spider)  # as `mocra run` loads it in the worker
    assert deployed.record.modules["news"].active.hash == code_hash(cls)  # type: ignore[union-attr]
    assert await register(store, {"news": code_hash(cls)}, job="j", shared=True) == {"news": 1}


async def test_a_file_that_fails_to_import_never_activates(tmp_path: pathlib.Path) -> None:
    store = LocalCoordination()
    spider = write(tmp_path / "spider.py", V1)
    await deploy(str(spider), store, job="j")
    _, before = await read_generations(store)

    write(spider, V2, extra="\nraise RuntimeError('half-written file')\n")
    with pytest.raises(DeployRefused) as refused:
        await deploy(str(spider), store, job="j")
    assert str(refused.value) == (
        f"{spider}: not activated: importing it failed: RuntimeError: half-written file"
    )
    spider.write_text("import nowhere_to_be_found\n")
    with pytest.raises(DeployRefused, match="ModuleNotFoundError: No module named 'nowhere_to_be_found'"):
        await deploy(str(spider), store, job="j")
    spider.write_text("print('hello')\nx = 1\n")
    with pytest.raises(DeployRefused, match="defines no Spider or Module subclass"):
        await deploy(str(spider), store, job="j")

    _, after = await read_generations(store)
    assert after == before  # the running generation is untouched


async def test_verify_runs_parse_over_recorded_responses_and_refuses_a_changed_shape(
    tmp_path: pathlib.Path,
) -> None:
    store = LocalCoordination()
    responses = tmp_path / "responses"
    responses.mkdir()
    (responses / "a.html").write_text("<h1>A</h1>")
    (responses / "b.json").write_text('{"url": "https://example.com/b", "body": "<h1>B</h1>"}')
    spider = write(tmp_path / "spider.py", V1)

    first = await deploy(str(spider), store, job="j", verify=str(responses))
    assert first.verified == {"news": "2 responses, 2 items"}
    assert first.record.modules["news"].active.shape == ("gen:int", "title:str")  # type: ignore[union-attr]

    write(spider, RENAMED)
    with pytest.raises(DeployRefused) as refused:
        await deploy(str(spider), store, job="j", verify=str(responses))
    differs = "news: its items' shape differs from generation 1's: title:str is gone, headline:str is new"
    assert differs in str(refused.value)
    write(spider, BROKEN)
    with pytest.raises(DeployRefused, match=r"verify failed: news: parse failed on a.html: ValueError: no"):
        await deploy(str(spider), store, job="j", verify=str(responses))
    _, record = await read_generations(store)
    assert record is not None and states(record) == [(1, "active")]

    write(spider, V2)  # the same shape: verified, activated
    assert (await deploy(str(spider), store, job="j", verify=str(responses))).activated == {"news": 2}
    write(spider, RENAMED)  # without verify the operator accepts the new shape
    assert (await deploy(str(spider), store, job="j")).activated == {"news": 3}


async def test_two_concurrent_deploys_one_activates_the_other_conflicts(
    coordination: Coordination, tmp_path: pathlib.Path
) -> None:
    write(tmp_path / "v1.py", V1)
    await deploy(str(tmp_path / "v1.py"), coordination, job="j")
    outcomes: dict[str, object] = {}

    async def one(name: str, body: str) -> None:
        try:
            path = write(tmp_path / f"{name}.py", body)
            outcomes[name] = await deploy(str(path), coordination, job="job 'j'")
        except DeployConflict as conflict:
            outcomes[name] = conflict

    async with anyio.create_task_group() as tg:
        tg.start_soon(one, "v2", V2)
        tg.start_soon(one, "renamed", RENAMED)

    conflicts = [o for o in outcomes.values() if isinstance(o, DeployConflict)]
    assert len(conflicts) == 1, outcomes
    assert str(conflicts[0]).startswith("job 'j': another deploy changed the generations of 'news' first")
    _, record = await read_generations(coordination)
    assert record is not None and states(record) == [(1, "draining"), (2, "active")]


async def test_a_worker_reloads_its_file_only_once_that_code_is_the_active_generation(
    tmp_path: pathlib.Path,
) -> None:
    store = LocalCoordination()
    spider = write(tmp_path / "spider.py", V1)
    record = (await deploy(str(spider), store, job="j")).record

    write(spider, V2)  # edited on the worker's machine, not deployed yet: not reloaded
    assert await active_in_file(str(spider), record) == {}
    deployed = await deploy(str(spider), store, job="j")
    assert await active_in_file(str(spider), deployed.record) == {"news": 2}

    watched: list[dict[str, int]] = []
    async for seen in GenerationWatch(store, interval=0.01).changes():
        watched.append(seen.active())
        if len(watched) == 2:
            break
        await activate_number(store, 1, job="j")  # a rollback: the watch sees it
    assert watched == [{"news": 2}, {"news": 1}]
