"""The engine side of `JsContext`: one QuickJS context per thread, made, used and freed on that thread.

QuickJS (the maintained quickjs-ng engine, through the `quickjs-ng` wheel) must not be touched from two
threads, even one after the other, so a context lives in a thread-local of its own worker thread and
nothing else holds it. Code here runs on that thread only.

What a script can reach: the ECMAScript built-ins and a no-op `console`. QuickJS's `std`/`os` modules
(files, processes, sockets) are a separate library that this binding does not install, so there is no
`require`, `import`, `fetch`, `XMLHttpRequest`, timers or file access (a test checks each).
"""

from __future__ import annotations

import json
import threading
from typing import Any, NamedTuple

import quickjs  # type: ignore[import-untyped]

from ._errors import JsError, JsMemoryError, JsTimeout

__all__ = ("Limits", "call", "evaluate", "start", "stop")

_PRELUDE = "globalThis.console = {log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {}};"
_local = threading.local()


class Limits(NamedTuple):
    """The bounds of one context: seconds of CPU per call, bytes of memory, bytes of stack."""

    timeout: float
    max_memory: int
    max_stack: int


def start(limits: Limits) -> None:
    """Make this thread's context (an executor initializer)."""
    context = quickjs.Context()
    context.set_memory_limit(limits.max_memory)
    context.set_max_stack_size(limits.max_stack)
    context.eval(_PRELUDE)
    context.set_time_limit(limits.timeout)
    _local.context = context


def stop() -> None:
    """Free this thread's context, on this thread."""
    _local.__dict__.pop("context", None)


def evaluate(code: str) -> Any:
    """Run `code` in this thread's context; the value of its last expression, as JSON gives it.

    Raises:
        JsTimeout, JsMemoryError, JsError: see `JsContext.eval`.
    """
    return _run(lambda context: context.eval(code))


def call(function: str, args_json: str) -> Any:
    """Call the global `function` with the arguments of a JSON array, in this thread's context."""
    return _run(lambda context: context.eval(f"{function}(...{args_json})"))


def _run(job: Any) -> Any:
    context = _local.__dict__.get("context")
    if context is None:
        raise JsError("the JavaScript context is closed")
    try:
        value = job(context)
        if isinstance(value, quickjs.Object):
            text = value.json()  # None for a function or a symbol
            value = None if text is None else json.loads(text)
        return value
    except quickjs.JSException as exc:  # StackOverflow is one too
        raise _error(str(exc)) from None
    except TypeError as exc:  # a BigInt result: "Unknown quickjs tag"
        raise JsError(f"the script's value has no Python form ({exc}); return a string or a number") from None


def _error(message: str) -> JsError:
    message = message.rstrip()
    if message.startswith("InternalError: interrupted"):
        return JsTimeout(f"the script ran past its time limit and was stopped\n{message}")
    if message.startswith("InternalError: out of memory"):
        return JsMemoryError(f"the script went over its memory limit and was stopped\n{message}")
    if message == "null":  # out of memory even for the error object: QuickJS throws null
        return JsMemoryError("the script went over its memory limit and was stopped (or threw null)")
    return JsError(message)
