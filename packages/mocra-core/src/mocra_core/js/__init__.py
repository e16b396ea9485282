"""Run a page's JavaScript from `parse` (e.g. to compute a signed parameter); needs `mocra[js]`.

The engine is QuickJS (quickjs-ng, through the `quickjs-ng` wheel): a context starts in 0.1 ms and an
eval of a small snippet costs ~10 µs, its memory limit counts every allocation (typed arrays too), and it
runs on its own thread with the GIL released. Each `JsContext` has a time limit, a memory limit and no
file, network or timer access.

Example:
    >>> import anyio
    >>> from mocra_core.js import run_js
    >>> anyio.run(run_js, "[3, 1, 2].sort().join('-')")
    '1-2-3'
"""

from __future__ import annotations

from ._context import JsContext, run_js
from ._errors import JsError, JsMemoryError, JsTimeout

__all__ = ("JsContext", "JsError", "JsMemoryError", "JsTimeout", "run_js")
