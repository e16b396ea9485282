"""A job's generations: recorded at the first run, read from old jobs, activated by CAS, rolled back."""

from __future__ import annotations

import anyio
import msgspec
import pytest

from mocra_core import ConfigError
from mocra_core.coordination import Coordination
from mocra_core.generations import DeployConflict, activate, read_generations, recorded_names, register

pytestmark = pytest.mark.anyio


def states(gens: object) -> list[tuple[int, str, str]]:
    return [(g.number, g.hash, g.state) for g in gens.generations]  # type: ignore[attr-defined]


async def test_the_first_run_records_generation_1_of_each_module(coordination: Coordination) -> None:
    assert await register(coordination, {"news": "a1", "books": "b1"}, job="j", shared=True) == {
        "news": 1,
        "books": 1,
    }
    _, record = await read_generations(coordination)
    assert record is not None
    assert states(record.modules["news"]) == [(1, "a1", "active")]
    assert await recorded_names(coordination) == ["books", "news"]
    # the names list of jobs recorded before generations stays written for their commands and workers
    assert msgspec.json.decode(await coordination.get("modules") or b"") == ["books", "news"]


async def test_an_old_job_reads_as_generation_1_and_learns_its_hashes(coordination: Coordination) -> None:
    await coordination.set("modules", b'["books", "news"]')  # what check_modules wrote before generations

    raw, record = await read_generations(coordination)
    assert raw is None and record is not None
    assert record.active() == {"books": 1, "news": 1}
    assert await register(coordination, {"books": "b1", "news": "a1"}, job="j", shared=True) == {
        "books": 1,
        "news": 1,
    }
    _, record = await read_generations(coordination)
    assert record is not None and states(record.modules["news"]) == [(1, "a1", "active")]


async def test_activation_makes_a_new_generation_and_a_rollback_activates_an_old_one(
    coordination: Coordination,
) -> None:
    await register(coordination, {"news": "a1"}, job="j", shared=True)
    _, seen = await read_generations(coordination)

    after = await activate(coordination, {"news": "a2"}, seen=seen, job="j")
    assert states(after.modules["news"]) == [(1, "a1", "draining"), (2, "a2", "active")]
    back = await activate(coordination, {"news": 1}, seen=after, job="j")  # rollback: gen 1 again
    assert states(back.modules["news"]) == [(1, "a1", "active"), (2, "a2", "draining")]
    again = await activate(coordination, {"news": "a2"}, seen=back, job="j")  # the same code: gen 2 again
    assert states(again.modules["news"]) == [(1, "a1", "draining"), (2, "a2", "active")]
    assert again.epoch == back.epoch + 1 == after.epoch + 2

    _, stored = await read_generations(coordination)
    assert stored == again
    # a worker with gen 1's code still runs gen 1's work while it drains; one with gen 2's runs gen 2
    assert await register(coordination, {"news": "a1"}, job="j", shared=True) == {"news": 1}
    assert await register(coordination, {"news": "a2"}, job="j", shared=True) == {"news": 2}


async def test_two_concurrent_deploys_one_wins_the_other_gets_a_conflict(coordination: Coordination) -> None:
    await register(coordination, {"news": "a1"}, job="j", shared=True)
    _, seen = await read_generations(coordination)
    won: list[str] = []
    lost: list[DeployConflict] = []

    async def deploy(code: str) -> None:
        try:
            await activate(coordination, {"news": code}, seen=seen, job="job 'j'")
            won.append(code)
        except DeployConflict as conflict:
            lost.append(conflict)

    async with anyio.create_task_group() as tg:
        tg.start_soon(deploy, "b2")
        tg.start_soon(deploy, "c3")

    assert len(won) == 1 and len(lost) == 1
    assert str(lost[0]) == (
        "job 'j': another deploy changed the generations of 'news' first; nothing was activated "
        "(deploy again)"
    )
    _, record = await read_generations(coordination)
    assert record is not None
    assert states(record.modules["news"]) == [(1, "a1", "draining"), (2, won[0], "active")]


async def test_a_worker_joining_meanwhile_does_not_conflict_with_a_deploy(coordination: Coordination) -> None:
    await register(coordination, {"news": "a1"}, job="j", shared=True)
    _, seen = await read_generations(coordination)
    await register(coordination, {"news": "a1", "books": "b1"}, job="j", shared=True)  # a module added

    after = await activate(coordination, {"news": "a2"}, seen=seen, job="j")
    assert after.active() == {"books": 1, "news": 2}


async def test_new_code_is_refused_on_a_shared_job_and_activated_on_a_job_of_one_process(
    coordination: Coordination,
) -> None:
    await register(coordination, {"news": "a1"}, job="job 'j'", shared=True)

    with pytest.raises(ConfigError, match=r"the code of 'news' here \(a2\) is no live generation of the job"):
        await register(coordination, {"news": "a2"}, job="job 'j'", shared=True)
    assert await register(coordination, {"news": "a2"}, job="job dir d", shared=False) == {"news": 2}
    _, record = await read_generations(coordination)
    assert record is not None  # the process took gen 1's work over: nothing is left to drain it
    assert states(record.modules["news"]) == [(1, "a1", "retired"), (2, "a2", "active")]


async def test_a_removed_module_drains_and_a_worker_without_it_is_welcome(coordination: Coordination) -> None:
    await register(coordination, {"news": "a1", "old": "o1"}, job="j", shared=True)
    _, seen = await read_generations(coordination)

    after = await activate(coordination, {"old": None}, seen=seen, job="j")

    assert after.active() == {"news": 1}
    assert states(after.modules["old"]) == [(1, "o1", "draining")]
    assert await register(coordination, {"news": "a1"}, job="j", shared=True) == {"news": 1}
