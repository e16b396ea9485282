from __future__ import annotations

import dataclasses
import datetime
import errno
import io
import json
import os
from typing import TYPE_CHECKING

import msgspec
import pytest

from mocra_core import MocraError
from mocra_core.sinks import JsonlSink, SinkError

if TYPE_CHECKING:
    import pathlib


class Book(msgspec.Struct):
    title: str
    price: float
    tags: list[str] = []


@dataclasses.dataclass
class Author:
    name: str
    born: datetime.date


def lines(path: pathlib.Path) -> list[object]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


@pytest.mark.anyio
async def test_structs_dataclasses_and_dicts_decode_back(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.jsonl"
    async with JsonlSink(path) as sink:
        await sink.write([Book("Dune", 9.5, ["sf"]), Author("Ursula", datetime.date(1929, 10, 21))])
        await sink.write([{"title": "Ωmega — ☕", "nested": {"a": [1, None]}}])
        await sink.write([])
    assert lines(path) == [
        {"title": "Dune", "price": 9.5, "tags": ["sf"]},
        {"name": "Ursula", "born": "1929-10-21"},
        {"title": "Ωmega — ☕", "nested": {"a": [1, None]}},
    ]
    assert "Ωmega — ☕" in path.read_text("utf-8")  # UTF-8, not \\u escapes


@pytest.mark.anyio
async def test_without_append_the_file_is_replaced(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"old":1}\n')
    async with JsonlSink(path) as sink:
        await sink.write([{"new": 1}])
    assert lines(path) == [{"new": 1}]


@pytest.mark.anyio
async def test_append_keeps_earlier_lines(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.jsonl"
    async with JsonlSink(path) as sink:
        await sink.write([{"n": 1}, {"n": 2}])
    async with JsonlSink(path, append=True) as sink:
        await sink.write([{"n": 3}])
    assert lines(path) == [{"n": 1}, {"n": 2}, {"n": 3}]


@pytest.mark.anyio
async def test_append_drops_an_unfinished_last_line(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "items.jsonl"
    path.write_bytes(b'{"n":1}\n{"n":2}\n{"n":3, "cut')
    async with JsonlSink(path, append=True) as sink:
        await sink.write([{"n": 3}])
    assert lines(path) == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert "dropping 12 bytes" in caplog.text


@pytest.mark.anyio
async def test_append_to_a_file_with_no_newline_at_all(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_bytes(b'{"half')
    async with JsonlSink(path, append=True) as sink:
        await sink.write([{"n": 1}])
    assert lines(path) == [{"n": 1}]


@pytest.mark.anyio
async def test_an_item_that_cannot_be_encoded_writes_nothing_of_its_batch(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.jsonl"
    async with JsonlSink(path) as sink:
        await sink.write([{"n": 1}])
        with pytest.raises(SinkError, match=r"item 1 of the batch \(object\) cannot be encoded") as info:
            await sink.write([{"n": 2}, object()])
        assert info.value.retryable is False
        await sink.write([{"n": 3}])  # the buffer was reset
    assert lines(path) == [{"n": 1}, {"n": 3}]


@pytest.mark.anyio
async def test_a_directory_path_fails_on_open_naming_it(tmp_path: pathlib.Path) -> None:
    sink = JsonlSink(tmp_path)
    with pytest.raises(SinkError) as info:
        await sink.open()
    assert isinstance(info.value, MocraError)
    assert info.value.path == str(tmp_path)
    assert repr(str(tmp_path)) in str(info.value)
    assert info.value.retryable
    await sink.close()  # nothing to close: harmless


@pytest.mark.anyio
async def test_write_before_open_fails(tmp_path: pathlib.Path) -> None:
    with pytest.raises(SinkError, match="is not open"):
        await JsonlSink(tmp_path / "x.jsonl").write([{"n": 1}])


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.anyio
async def test_a_full_disk_raises_sink_error() -> None:
    async with JsonlSink("/dev/full") as sink:
        with pytest.raises(SinkError, match="'/dev/full'.*No space left on device"):
            await sink.write([{"n": 1}])


class _FailOnce(io.FileIO):
    """Writes 5 bytes of the next write, then fails with ENOSPC; later writes succeed."""

    armed = True

    def write(self, data: object) -> int:
        if self.armed:
            self.armed = False
            super().write(memoryview(data)[:5])  # type: ignore[arg-type]
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(data)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_half_written_batch_is_cut_so_a_retry_does_not_duplicate(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.jsonl"
    async with JsonlSink(path) as sink:
        await sink.write([{"n": 1}])
        flaky = _FailOnce(path, "r+")
        flaky.seek(0, os.SEEK_END)
        sink._file._file.close()  # type: ignore[union-attr]
        sink._file._file = flaky
        batch = [{"n": 2}, {"n": 3}]
        with pytest.raises(SinkError, match="No space left"):
            await sink.write(batch)
        assert lines(path) == [{"n": 1}]
        await sink.write(batch)  # the engine's retry
    assert lines(path) == [{"n": 1}, {"n": 2}, {"n": 3}]
