"""`JsContext` and `run_js`: a page's JavaScript, run from `parse` without blocking the crawl."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from .._lazy import require_extra
from ._errors import JsError, JsTimeout

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

__all__ = ("JsContext", "run_js")

_STACK_SIZE = 8 * 1024 * 1024  # the worker's C stack: musl's default (128 KB) is below QuickJS's 1 MB
_SLACK = 0.25  # seconds the wall-clock guard waits past the engine's own limit
_spawn_lock = threading.Lock()


class JsContext:
    """A JavaScript engine (QuickJS) with its own globals, worker thread and limits; needs `mocra[js]`.

    Each call runs on the context's own thread, so the event loop never waits for a script; calls on
    one context run one at a time, calls on different contexts in parallel. Globals persist between
    calls: define the page's functions once, then `call` them per page.

    Limits (per call): `timeout` seconds, counted by the engine in the process's CPU time (so it can
    stop a script early while other threads are busy) and guarded by the wall clock as well; a script
    past it raises `JsTimeout`. `max_memory` bytes for everything the context holds (objects, strings,
    typed arrays); past it `JsMemoryError`. `max_stack` bytes of JavaScript stack. A script has no
    file, network, process or timer access: only the ECMAScript built-ins and a no-op `console`.

    Cancelling the awaiting task returns at once; a script already running is then stopped by its time
    limit, and the next call on the context waits for that.

    Args:
        timeout: Seconds one call may run.
        max_memory: Bytes the context may hold.
        max_stack: Bytes of JavaScript stack.

    Raises:
        MissingExtra: the `js` extra is not installed.
        ValueError: a limit is not positive.

    Example:
        >>> import anyio
        >>> async def main() -> list[object]:
        ...     async with JsContext(timeout=0.5) as js:
        ...         await js.eval("function sign(q, t) { return q.length * 31 + t; }")
        ...         return [await js.call("sign", "page=3", 1700), await js.eval("[1, 2].map(x => x * 2)")]
        >>> anyio.run(main)
        [1886, [2, 4]]
    """

    def __init__(self, *, timeout: float = 1.0, max_memory: int = 64 << 20, max_stack: int = 1 << 20) -> None:
        if not (timeout > 0 and max_memory > 0 and max_stack > 0):
            raise ValueError(f"limits must be positive: {timeout=}, {max_memory=}, {max_stack=}")
        require_extra("quickjs", "js", "JsContext (running JavaScript)")
        from . import _engine

        self.timeout = timeout
        self._engine = _engine
        self._executor: ThreadPoolExecutor | None = _spawn(
            _engine.start, _engine.Limits(timeout, max_memory, max_stack)
        )

    async def eval(self, code: str) -> Any:
        """Run `code`; return the value of its last expression as JSON would carry it.

        Strings, numbers, booleans and `null` come back as themselves, arrays as lists, objects as
        dicts (`undefined` members dropped), a `Date` as its ISO string; `undefined`, a function or a
        symbol as `None`. A Promise is not awaited (it comes back as `{}`).

        Raises:
            JsError: the script threw or did not parse (the message has the JavaScript stack).
            JsTimeout: it ran past `timeout`. JsMemoryError: it went over `max_memory`.
        """
        return await self._submit(self._engine.evaluate, code)

    async def call(self, function: str, *args: Any) -> Any:
        """Call the global function `function` with `args` (passed as JSON); return its value as `eval` does.

        Raises:
            JsError, JsTimeout, JsMemoryError: as `eval`.
            TypeError: an argument has no JSON form.
        """
        return await self._submit(self._engine.call, function, json.dumps(args))

    async def _submit(self, job: Callable[..., Any], *args: Any) -> Any:
        executor = self._executor
        if executor is None:
            raise JsError("the JavaScript context is closed")
        loop = asyncio.get_running_loop()
        started = asyncio.Event()

        def run() -> Any:
            try:
                loop.call_soon_threadsafe(started.set)
            except RuntimeError:  # the caller's loop is gone: nobody waits for this call
                return None
            return job(*args)

        done = asyncio.wrap_future(executor.submit(run))  # cancelling it drops a call not yet started
        done.add_done_callback(_retrieve)  # an abandoned call's error is not "never retrieved"
        await started.wait()  # behind an earlier call, which its own limit bounds
        try:
            return await asyncio.wait_for(asyncio.shield(done), self.timeout + _SLACK)
        except TimeoutError:  # a starved thread: the engine stops the script at its limit
            raise JsTimeout(
                f"the script ran past its time limit ({self.timeout} s) and was stopped"
            ) from None

    def close(self) -> None:
        """Free the context (on its thread, after a call still running); later calls raise `JsError`."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.submit(self._engine.stop)
            executor.shutdown(wait=False)

    async def __aenter__(self) -> JsContext:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._executor is None else "open"
        return f"<JsContext {state} timeout={self.timeout}>"


def _retrieve(done: asyncio.Future[Any]) -> None:
    if not done.cancelled():
        done.exception()


def _spawn(initializer: Callable[..., None], *args: Any) -> ThreadPoolExecutor:
    """A one-thread executor whose worker has an 8 MB stack and has run `initializer` (errors re-raised)."""
    with _spawn_lock:  # threading.stack_size is process-wide: set it only while this worker starts
        previous = threading.stack_size(_STACK_SIZE)
        try:
            executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mocra-js")
            executor.submit(initializer, *args).result()
        finally:
            threading.stack_size(previous)
    return executor


async def run_js(code: str, *, timeout: float = 1.0, max_memory: int = 64 << 20) -> Any:  # noqa: ASYNC109
    """Run `code` in a fresh `JsContext` and return the value of its last expression (see `JsContext.eval`).

    For one snippet per page; to call the same page functions many times, keep a `JsContext`.

    Raises:
        JsError, JsTimeout, JsMemoryError: as `JsContext.eval`.
        MissingExtra: the `js` extra is not installed.

    Example:
        >>> import anyio
        >>> anyio.run(run_js, "var s = 'a=1&b=2'; s.split('&').map(p => p.split('=')[1]).join('')")
        '12'
    """
    async with JsContext(timeout=timeout, max_memory=max_memory) as js:
        return await js.eval(code)
