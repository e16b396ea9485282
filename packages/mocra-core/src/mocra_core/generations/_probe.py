"""The deploy's isolated import: `main([FILE, RESPONSES_DIR])` in a fresh interpreter (`prepare`).

Run in a fresh interpreter so that a file that fails (or misbehaves) on import touches nothing of the
deploying process. It prints, as JSON, the file's modules with their code hashes and, given a responses
dir, what their `parse` made of each recorded response (`Probe`); a failure to import exits 1 with
the error on stderr.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import pathlib
import sys
import traceback
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from ..modules import Ctx, Module, Spider
from ._code import code_hash
from ._shapes import item_shape, read_responses

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("Probe", "Verified", "load_classes", "main")


class Verified(msgspec.Struct, kw_only=True):
    """What one module's `parse` made of the recorded responses.

    Attributes:
        responses: How many it parsed.
        items: How many items they gave.
        shape: The items' shape (`item_shape`).
        errors: `file: error` of each response whose parse raised.
        skipped: Why it was not verified (a `Module`: its nodes' parses are not run), or None.
    """

    responses: int = 0
    items: int = 0
    shape: tuple[str, ...] = ()
    errors: list[str] = []
    skipped: str | None = None


class Probe(msgspec.Struct, kw_only=True):
    """The modules of a file (name → code hash) and, with a responses dir, their verify."""

    modules: dict[str, str]
    verified: dict[str, Verified] = {}


def load_classes(path: pathlib.Path) -> list[type[Spider[Any] | Module[Any]]]:
    """Import `path` as `mocra run` does and return the named `Spider` and `Module` classes it defines."""
    module_name = f"mocra_spiders_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Spider | Module)
        and obj.__module__ == module_name
        and obj.name
    ]


async def _verify(cls: type[Spider[Any] | Module[Any]], folder: pathlib.Path) -> Verified:
    if not issubclass(cls, Spider):
        return Verified(skipped="a Module: only a Spider's callbacks are run over recorded responses")
    spider = cls()
    result = Verified()
    items: list[object] = []
    for name, recorded in read_responses(folder, cls.name):
        response = recorded.response()
        ctx: Ctx[Any] = Ctx(response)
        result.responses += 1
        try:
            await spider.callback(recorded.callback)(response, ctx)
        except Exception as exc:
            result.errors.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        items.extend(ctx.items)
    result.items = len(items)
    result.shape = item_shape(items)
    return result


def main(argv: Sequence[str]) -> int:
    """Probe the file `argv[0]` (with the responses dir `argv[1]`, if given); print the `Probe` as JSON."""
    path = pathlib.Path(argv[0])
    out = sys.stdout.buffer
    with contextlib.redirect_stdout(sys.stderr):  # what the file prints stays out of the answer
        try:
            classes = load_classes(path)
        except BaseException as exc:  # a file may raise anything, SystemExit included
            last = traceback.format_exception_only(exc)[-1].strip()
            sys.stderr.write(f"importing it failed: {last}\n")
            return 1
        probe = Probe(modules={cls.name: code_hash(cls) for cls in classes})
        if len(argv) > 1:
            folder = pathlib.Path(argv[1])
            for cls in classes:
                probe.verified[cls.name] = anyio.run(_verify, cls, folder)
    out.write(msgspec.json.encode(probe))
    out.flush()
    return 0
