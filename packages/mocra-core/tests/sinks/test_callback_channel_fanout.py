from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import anyio
import pytest

import mocra_core.sinks
from mocra_core.sinks import CallbackSink, ChannelSink, FanoutSink, JsonlSink, SinkError, channel, on_item

if TYPE_CHECKING:
    import pathlib

    from mocra_core.sinks import DataSink


def test_public_names() -> None:
    assert mocra_core.sinks.__all__ == (
        "CallbackSink",
        "ChannelSink",
        "CsvSink",
        "DataFrameSink",
        "DataSink",
        "FanoutSink",
        "FencedSink",
        "JsonlSink",
        "ParquetSink",
        "SinkError",
        "SqlSink",
        "XlsxSink",
        "channel",
        "on_item",
    )


@pytest.mark.anyio
async def test_sync_callback_gets_each_item_in_order() -> None:
    got: list[object] = []
    sink: DataSink = on_item(got.append)
    await sink.open()
    await sink.write([1, 2])
    await sink.write([3])
    await sink.close()
    assert got == [1, 2, 3]


@pytest.mark.anyio
async def test_async_callbacks_are_awaited() -> None:
    got: list[tuple[str, object]] = []

    async def save(tag: str, item: object) -> None:
        await anyio.lowlevel.checkpoint()
        got.append((tag, item))

    class Saver:
        async def __call__(self, item: object) -> None:
            await save("object", item)

    for fn in (functools.partial(save, "function"), Saver(), lambda item: save("lambda", item)):
        async with CallbackSink(fn) as sink:
            await sink.write(["a", "b"])
    assert got == [(tag, x) for tag in ("function", "object", "lambda") for x in "ab"]


@pytest.mark.anyio
async def test_callback_errors_propagate() -> None:
    def boom(item: object) -> None:
        raise KeyError(item)

    with pytest.raises(KeyError):
        await CallbackSink(boom).write([1])


def test_on_item_as_a_decorator() -> None:
    @on_item
    def keep(item: object) -> None:
        pass

    assert isinstance(keep, CallbackSink)
    assert repr(keep) == "CallbackSink(test_on_item_as_a_decorator.<locals>.keep)"


@pytest.mark.anyio
async def test_channel_iteration_ends_when_the_sink_closes() -> None:
    sink, items = channel(max_buffer=2)
    got: list[object] = []

    async def consume() -> None:
        async with items:
            async for item in items:
                got.append(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await sink.open()
        await sink.write(list(range(10)))  # more than the buffer: waits for the consumer
        await sink.close()
    assert got == list(range(10))


@pytest.mark.anyio
async def test_channel_write_after_the_receiver_closed_fails() -> None:
    sink, items = channel()
    items.close()
    with pytest.raises(SinkError, match="receiving side is closed") as info:
        await sink.write([1])
    assert not info.value.retryable
    await sink.close()


@pytest.mark.anyio
async def test_channel_sink_over_an_existing_stream() -> None:
    send, receive = anyio.create_memory_object_stream[int](5)
    async with ChannelSink(send) as sink, receive:
        await sink.write([1, 2])
        assert [receive.receive_nowait(), receive.receive_nowait()] == [1, 2]


@pytest.mark.anyio
async def test_fanout_writes_every_sink_and_closes_all(tmp_path: pathlib.Path) -> None:
    got: list[object] = []
    async with FanoutSink(on_item(got.append), JsonlSink(tmp_path / "items.jsonl")) as sink:
        await sink.write([{"n": 1}])
    assert got == [{"n": 1}]
    assert (tmp_path / "items.jsonl").read_text() == '{"n":1}\n'


@pytest.mark.anyio
async def test_fanout_closes_opened_sinks_when_one_fails_to_open(tmp_path: pathlib.Path) -> None:
    first = JsonlSink(tmp_path / "a.jsonl")
    with pytest.raises(SinkError):
        await FanoutSink(first, JsonlSink(tmp_path)).open()
    with pytest.raises(SinkError, match="is not open"):
        await first.write([1])
