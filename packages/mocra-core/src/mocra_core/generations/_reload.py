"""`load_file`: import a worker's own file again, in its process, for the generation a deploy activated."""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import pathlib
import sys
from typing import TYPE_CHECKING, Any

from ..modules import Module, Spider
from ._code import code_hash

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ("load_file",)

_loads = itertools.count(1)


def load_file(path: str, expected: Mapping[str, str]) -> dict[str, Spider[Any] | Module[Any]]:
    r"""Import `path` under a fresh module name and make the modules of `expected` whose code hash matches.

    `expected` maps a module name to the `code_hash` of its active generation; a class whose code is
    another (the file changed again since it was checked) is left out. The trust model of `--reload`: the
    only code ever loaded is the file the worker was started with, once its code is what was activated.

    Raises:
        Exception: whatever importing the file raises (it was imported apart first: see `active_in_file`).

    Example:
        >>> import pathlib, tempfile
        >>> text = "from mocra_core import Spider\nclass News(Spider):\n    name = 'news'\n"
        >>> text += "    async def parse(self, response, ctx): ...\n"
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "news.py"
        >>> _ = path.write_text(text)
        >>> load_file(str(path), {"news": "not-its-hash"})
        {}
    """
    file = pathlib.Path(path)
    module_name = f"mocra_spiders_{file.stem}_reload{next(_loads)}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    found: dict[str, Spider[Any] | Module[Any]] = {}
    for obj in vars(module).values():
        if not (inspect.isclass(obj) and issubclass(obj, Spider | Module) and obj.__module__ == module_name):
            continue
        if obj.name in expected and code_hash(obj) == expected[obj.name]:
            found[obj.name] = obj()
    return found
