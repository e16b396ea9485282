"""`JsContext` / `run_js`: results, time and memory limits, no host access, concurrency, cancellation."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import anyio
import pytest

from mocra_core.js import JsContext, JsError, JsMemoryError, JsTimeout, run_js

pytestmark = pytest.mark.anyio

SIGNER = """
function sign(query, ts) {
  var h = 0, s = query + '&ts=' + ts;
  for (var i = 0; i < s.length; i++) { h = (h * 31 + s.charCodeAt(i)) | 0; }
  return (h >>> 0).toString(16);
}
"""


def _sign(query: str, ts: int) -> str:  # the same hash in Python
    h = 0
    for ch in f"{query}&ts={ts}":
        h = (h * 31 + ord(ch)) & 0xFFFFFFFF
    return format(h, "x")


async def test_a_snippet_gives_its_value() -> None:
    assert await run_js("1 + 2") == 3
    assert await run_js("'a' + 'b'") == "ab"
    assert await run_js("[1, {a: 2, b: undefined}, null, true]") == [1, {"a": 2}, None, True]
    assert await run_js("new Date(0)") == "1970-01-01T00:00:00.000Z"
    assert await run_js("undefined") is None
    assert await run_js("(function () {})") is None


async def test_a_context_keeps_its_globals_and_calls_functions() -> None:
    async with JsContext() as js:
        await js.eval(SIGNER)
        assert await js.call("sign", "page=3", 1700000000) == _sign("page=3", 1700000000)
        assert await js.call("JSON.stringify", {"k": [1, "x"]}) == '{"k":[1,"x"]}'


async def test_a_script_error_is_a_js_error_with_its_stack() -> None:
    with pytest.raises(JsError, match=r"Error: boom[\s\S]*at f") as caught:
        await run_js("function f() { throw new Error('boom'); } f()")
    assert type(caught.value) is JsError
    with pytest.raises(JsError, match="SyntaxError"):
        await run_js("this is not javascript")
    with pytest.raises(JsError, match="RangeError"):  # stack overflow
        await run_js("function r() { return r() + 1; } r()")
    with pytest.raises(JsError, match="no Python form"):
        await run_js("10n")


async def test_a_hanging_script_is_stopped_within_its_limit_and_the_context_goes_on() -> None:
    async with JsContext(timeout=0.3) as js:
        started = time.monotonic()
        with pytest.raises(JsTimeout, match="time limit"):
            await js.eval("while (true) {}")
        assert time.monotonic() - started < 0.3 + 0.25 + 0.5  # the limit, the guard's slack, scheduling
        assert await js.eval("6 * 7") == 42  # the engine stopped the loop: its thread is free again


async def test_the_event_loop_runs_while_a_script_runs() -> None:
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        with pytest.raises(JsTimeout):
            await run_js("while (true) {}", timeout=0.4)
        tg.cancel_scope.cancel()
    assert ticks >= 10  # ~0.4 s of 10 ms ticks went on beside the script


@pytest.mark.parametrize(
    "script",
    [
        "var a = []; while (true) { a.push('x'.repeat(1000) + a.length); }",  # objects and strings
        "var b = []; for (var i = 0; i < 40; i++) { b.push(new Uint8Array(8 << 20).fill(1)); }",
    ],
    ids=["heap", "typed-arrays"],
)
async def test_a_script_over_its_memory_limit_is_stopped(script: str) -> None:
    async with JsContext(max_memory=16 << 20) as js:
        with pytest.raises(JsMemoryError, match="memory limit"):
            await js.eval(script)
        assert await js.eval("'still here'") == "still here"


@pytest.mark.parametrize(
    "probe",
    ["require", "fetch", "XMLHttpRequest", "process", "std", "os", "Deno", "setTimeout", "importScripts"],
)
async def test_no_host_access_is_available(probe: str) -> None:
    assert await run_js(f"typeof {probe}") == "undefined"


async def test_modules_and_files_cannot_be_loaded() -> None:
    with pytest.raises(JsError, match="SyntaxError"):  # a script is not a module
        await run_js("import * as std from 'std'; std.open('/etc/passwd', 'r')")
    settled = "var r = 'pending'; import('os').then(() => { r = 'loaded'; }, e => { r = String(e); }); r"
    assert await run_js(settled) == "pending"  # and no job queue runs to load it
    assert await run_js("console.log('x'); typeof console.log") == "function"  # a no-op console


async def test_concurrent_calls_on_one_context_and_on_many() -> None:
    results: dict[int, Any] = {}
    async with JsContext() as js:
        await js.eval(SIGNER)

        async def one(n: int) -> None:
            results[n] = await js.call("sign", f"page={n}", n)

        async with anyio.create_task_group() as tg:
            for n in range(50):
                tg.start_soon(one, n)
    assert results == {n: _sign(f"page={n}", n) for n in range(50)}

    many: dict[int, Any] = {}

    async def fresh(n: int) -> None:
        many[n] = await run_js(f"{SIGNER}; sign('p={n}', {n})")

    async with anyio.create_task_group() as tg:
        for n in range(20):
            tg.start_soon(fresh, n)
    assert many == {n: _sign(f"p={n}", n) for n in range(20)}


async def test_two_hanging_scripts_run_in_parallel_on_two_contexts() -> None:
    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        for _ in range(2):
            tg.start_soon(_expect_timeout, 0.4)
    assert time.monotonic() - started < 0.4 * 2 + 0.25  # not one after the other


async def _expect_timeout(limit: float) -> None:
    with pytest.raises(JsTimeout):
        await run_js("while (true) {}", timeout=limit)


async def test_cancelling_the_caller_returns_at_once_and_the_script_is_stopped() -> None:
    async with JsContext(timeout=0.5) as js:
        started = time.monotonic()
        with anyio.move_on_after(0.05):
            await js.eval("while (true) {}")
        assert time.monotonic() - started < 0.3  # the caller did not wait for the limit
        assert await js.eval("1") == 1  # the engine stopped the script at its limit; the context goes on


async def test_a_closed_context_refuses_calls_and_frees_its_thread() -> None:
    js = JsContext()
    assert await js.eval("2") == 2
    js.close()
    js.close()  # twice is harmless
    with pytest.raises(JsError, match="closed"):
        await js.eval("1")
    assert repr(js) == "<JsContext closed timeout=1.0>"
    for thread in threading.enumerate():
        if thread.name.startswith("mocra-js"):
            thread.join(5)
    assert not any(t.name.startswith("mocra-js") for t in threading.enumerate())


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        JsContext(timeout=0)


def test_without_the_extra_a_context_names_it() -> None:
    code = (
        "import sys; sys.modules['quickjs'] = None\n"
        "from mocra_core import MissingExtra\n"
        "from mocra_core.js import JsContext\n"
        "try:\n"
        "    JsContext()\n"
        "except MissingExtra as exc:\n"
        "    print(exc.extra, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "js JsContext (running JavaScript) needs: pip install 'mocra[js]'"
