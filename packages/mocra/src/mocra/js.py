"""Run a page's JavaScript from `parse` (re-exported from `mocra_core.js`); needs `pip install 'mocra[js]'`.

Example:
    >>> import anyio
    >>> from mocra.js import JsContext, run_js
    >>> anyio.run(run_js, "encodeURIComponent('a b&c')")
    'a%20b%26c'
"""

from __future__ import annotations

from mocra_core.js import JsContext, JsError, JsMemoryError, JsTimeout, run_js

__all__ = ("JsContext", "JsError", "JsMemoryError", "JsTimeout", "run_js")
