from __future__ import annotations

import gc
import os
import sys
import textwrap
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core import MocraError
from mocra_core.dedup import LmdbSeenSet, SeenSetError

if TYPE_CHECKING:
    import pathlib


def fp(n: int) -> bytes:
    return n.to_bytes(16, "big")


@pytest.mark.anyio
async def test_fingerprints_survive_reopening(tmp_path: pathlib.Path) -> None:
    async with LmdbSeenSet(tmp_path / "seen") as seen:
        await seen.add_if_absent([fp(1), fp(2)])
    async with LmdbSeenSet(tmp_path / "seen") as seen:
        assert await seen.count() == 2
        assert await seen.add_if_absent([fp(2), fp(3)]) == [False, True]


@pytest.mark.anyio
async def test_the_map_grows_when_full(tmp_path: pathlib.Path) -> None:
    async with LmdbSeenSet(tmp_path / "seen", map_size=64 << 10) as seen:
        for start in range(0, 20_000, 5_000):
            assert all(await seen.add_if_absent([fp(n) for n in range(start, start + 5_000)]))
        assert await seen.count() == 20_000
    async with LmdbSeenSet(tmp_path / "seen", map_size=64 << 10) as seen:
        assert await seen.count() == 20_000
        assert await seen.contains(fp(19_999))


@pytest.mark.anyio
async def test_a_cancelled_caller_still_gets_the_committed_answer(tmp_path: pathlib.Path) -> None:
    async with LmdbSeenSet(tmp_path / "seen") as seen:
        with anyio.CancelScope() as scope:
            scope.cancel()
            answer = await seen.add_if_absent([fp(1)])
        assert answer == [True]
        assert await seen.contains(fp(1))


@pytest.mark.anyio
async def test_opening_the_same_directory_twice_in_a_process_fails(tmp_path: pathlib.Path) -> None:
    async with LmdbSeenSet(tmp_path / "seen"):
        with pytest.raises(SeenSetError, match="already open in this process"):
            LmdbSeenSet(tmp_path / "seen")
    async with LmdbSeenSet(tmp_path / "seen"):  # free again once closed
        pass


def test_a_path_that_is_a_file_is_named_in_the_error(tmp_path: pathlib.Path) -> None:
    (tmp_path / "seen").write_text("not a directory")
    with pytest.raises(SeenSetError) as info:
        LmdbSeenSet(tmp_path / "seen")
    assert isinstance(info.value, MocraError)
    assert info.value.path == str(tmp_path / "seen")
    assert str(tmp_path / "seen") in str(info.value)


@pytest.mark.anyio
async def test_use_after_close_raises(tmp_path: pathlib.Path) -> None:
    seen = LmdbSeenSet(tmp_path / "seen")
    await seen.aclose()
    with pytest.raises(SeenSetError, match="closed"):
        await seen.add_if_absent([fp(1)])


_KILLED_WRITER = textwrap.dedent(
    """
    import os, sys
    import anyio
    from mocra_core.dedup import LmdbSeenSet

    async def main() -> None:
        seen = LmdbSeenSet(sys.argv[1])
        for start in range(0, 3_000, 1_000):
            await seen.add_if_absent([n.to_bytes(16, "big") for n in range(start, start + 1_000)])
        print("added", flush=True)
        os._exit(1)  # no aclose, no flush: like kill -9

    anyio.run(main)
    """
)


@pytest.mark.slow
@pytest.mark.anyio
async def test_batches_survive_a_killed_process(tmp_path: pathlib.Path) -> None:
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [sys.executable, "-c", _KILLED_WRITER, str(tmp_path / "seen")], check=False, env=dict(os.environ)
        )
    assert (done.returncode, done.stdout.strip()) == (1, b"added"), done.stderr
    async with LmdbSeenSet(tmp_path / "seen") as seen:
        assert await seen.count() == 3_000
        assert await seen.add_if_absent([fp(0), fp(2_999), fp(3_000)]) == [False, False, True]


def test_a_set_dropped_without_closing_frees_its_path(tmp_path: pathlib.Path) -> None:
    seen = LmdbSeenSet(tmp_path / "seen")
    del seen
    gc.collect()
    LmdbSeenSet(tmp_path / "seen")
