"""`mocra check FILE`: fetch each callback's contract page through the engine's downloader, judge its output.

Contracts (`_contracts`) sit in a callback's docstring or the spider's (or module's) `contracts` mapping
(callback name, or node id → lines). A node of a module declares them on its `parse`.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from mocra_core import ConfigError, Ctx, DownloadError, InvalidURL, Module, Request, Spider
from mocra_core.download import AiohttpDownloader, HttpxDownloader, build_downloader
from mocra_core.modules import compile_module

from ._contracts import Contracts, Output, contract_lines, parse_contracts
from ._run import load_spiders
from ._settings_args import add_settings_arguments, load_settings

if TYPE_CHECKING:
    import argparse
    from collections.abc import Awaitable, Callable, Iterator, Sequence

    from mocra_core import Response, Settings

__all__ = ("Target", "add_check_command", "check_targets", "find_targets")


@dataclass(frozen=True)
class Target:
    """One callback with contracts: `where` names it (`spider.callback` or `module.node`)."""

    where: str
    callback: Callable[[Response, Ctx[Any]], Awaitable[None]]
    request: Request
    contracts: Contracts
    carry_meta: bool = False


def find_targets(crawls: Sequence[Spider[Any] | Module[Any]], *, source: str) -> list[Target]:
    """The callbacks of `crawls` that declare contracts, in file order, their pages' requests made.

    Raises:
        ConfigError: a malformed contract, an `@url` that is not an http(s) URL, or a `contracts`
            attribute that is not a mapping of callback names (`source` is the file).

    Example:
        >>> class Books(Spider[dict[str, str]]):
        ...     name = "books"
        ...     contracts = {"parse_book": ["@url https://example.com/book/1", "@scrapes title"]}
        ...     async def parse(self, response, ctx):
        ...         '''The list.
        ...
        ...         @url https://example.com/
        ...         @returns requests 1
        ...         '''
        ...     async def parse_book(self, response, ctx): ...
        >>> [(t.where, t.request.url, t.request.callback) for t in find_targets([Books()], source="books.py")]
        [('books.parse', 'https://example.com/', None), ('books.parse_book', 'https://example.com/book/1', 'parse_book')]
    """  # noqa: E501
    targets = []
    for crawl in crawls:
        declared = getattr(crawl, "contracts", None) or {}
        if not isinstance(declared, Mapping):
            raise ConfigError(
                f"{crawl.name}.contracts", "must map callback names to contract lines", source=source
            )
        callbacks = dict(_callbacks(crawl))
        unknown = sorted(set(declared) - set(callbacks))
        if unknown:
            raise ConfigError(
                f"{crawl.name}.contracts",
                f"names no callback {unknown}; known: {sorted(callbacks)}",
                source=source,
            )
        for name, (callback, callback_name) in callbacks.items():
            where = f"{crawl.name}.{name}"
            lines = contract_lines(_own_doc(callback), declared.get(name))
            found = parse_contracts(lines, where=f"{source}: {where}")
            if found is None:
                continue
            try:
                request = Request(found.url, meta=found.meta, callback=callback_name)
            except InvalidURL as exc:
                raise ConfigError(f"{where}: @url", str(exc), source=source) from None
            targets.append(Target(where, callback, request, found, carry_meta=isinstance(crawl, Module)))
    return targets


def _callbacks(
    crawl: Spider[Any] | Module[Any],
) -> Iterator[tuple[str, tuple[Callable[[Response, Ctx[Any]], Awaitable[None]], str | None]]]:
    """(name, (callback, Request.callback)) of a spider's async methods or a module's node parses."""
    if isinstance(crawl, Spider):
        methods = inspect.getmembers_static(type(crawl), inspect.iscoroutinefunction)
        for name, _ in sorted(methods, key=lambda member: _first_line(member[1])):
            if name != "start":  # the seeding method; every other async method may be a callback
                yield name, (getattr(crawl, name), None if name == "parse" else name)
        return
    for node_id, node in compile_module(crawl).graph.nodes.items():
        yield node_id, (node.parse, None)


def _first_line(function: Callable[..., Any]) -> int:
    code = getattr(function, "__code__", None)
    return code.co_firstlineno if code is not None else 0


def _own_doc(callback: Callable[..., Any]) -> str | None:
    """The callback's own docstring (not one inherited from `Spider.parse` or `Node.parse`)."""
    function = getattr(callback, "__func__", callback)
    doc = function.__doc__
    return doc if isinstance(doc, str) else None


@dataclass
class Tally:
    """How many contracts passed and failed."""

    passed: int = 0
    failed: int = 0

    def line(self, ok: bool, text: str, stream: TextIO) -> None:
        """Count one contract and write its line."""
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        stream.write(f"  {'ok  ' if ok else 'FAIL'}  {text}\n")


async def check_targets(targets: Sequence[Target], settings: Settings, stream: TextIO) -> Tally:
    """Fetch each target's page with the settings' downloader, run the callback, judge its contracts.

    The download is the crawl's (`build_downloader` with `[download]`: the same headers, cookies,
    decoding and body cap); a status the crawl retries (`retry.statuses`) fails the `@url` contract, as
    its page would never reach the callback.
    """
    tally = Tally()
    async with build_downloader(settings.download) as downloader:
        for target in targets:
            stream.write(f"{target.where}\n")
            output, ran = await _fetch_and_parse(target, downloader, settings)
            tally.line(output is not None, f"@url {target.request.url}: {ran}", stream)
            for check in target.contracts.checks:
                verdict = "not judged" if output is None else check.judge(output)
                tally.line(verdict is None, check.text + (f": {verdict}" if verdict else ""), stream)
    return tally


async def _fetch_and_parse(
    target: Target, downloader: AiohttpDownloader | HttpxDownloader, settings: Settings
) -> tuple[Output | None, str]:
    """The callback's output for its page (None when there is none) and what happened."""
    try:
        response = await downloader.download(target.request.replace())
    except DownloadError as exc:
        return None, f"the download failed: {exc}"
    if response.status in settings.retry.statuses:
        return None, f"status {response.status}, which a crawl retries and never parses (retry.statuses)"
    ctx: Ctx[Any] = Ctx(response, carry_meta=target.carry_meta)
    try:
        await target.callback(response, ctx)
    except Exception as exc:
        return None, f"status {response.status}; the callback raised {type(exc).__name__}: {exc}"
    output = Output(items=list(ctx.items), requests=len(ctx.requests), tasks=len(ctx.routes))
    made = f"{len(output.items)} items, {output.requests} requests, {output.tasks} tasks"
    return output, f"status {response.status}; {made}"


def _cmd_check(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    crawls = load_spiders(args.path, names=args.spider or None)
    targets = find_targets(crawls, source=args.path)
    if not targets:
        sys.stdout.write(
            f"{args.path}: no contracts found; add them to a callback's docstring, e.g.\n"
            "    @url https://example.com/\n    @returns items 1 5\n    @scrapes title price\n"
        )
        return 0
    tally = anyio.run(check_targets, targets, settings, sys.stdout)
    total = tally.passed + tally.failed
    callbacks = f"{len(targets)} callback{'s' * (len(targets) != 1)}"
    sys.stdout.write(f"{total} contracts in {callbacks}: {tally.passed} passed, {tally.failed} failed\n")
    return 1 if tally.failed else 0


def add_check_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `mocra check` on the `mocra` sub-commands."""
    parser = commands.add_parser(
        "check",
        help="check the contracts of a file's spiders and modules (as `scrapy check`)",
        description="A callback (or a module node's parse) declares contracts in its docstring, one per "
        "line: @url URL (the page to fetch), @meta {JSON} (its request's meta), @returns "
        "items|requests|tasks [MIN [MAX]] (MIN defaults to 1), @scrapes FIELD ... (every item has them); "
        "or in a `contracts = {callback: [lines]}` attribute of the spider or module. Each page is fetched "
        "with the crawl's downloader and settings, then parsed. Exit code 1 when a contract fails.",
    )
    parser.add_argument("path", help="a .py file defining Spider or Module subclasses")
    parser.add_argument(
        "--spider", action="append", help="only the spider or module with this name (repeatable)"
    )
    add_settings_arguments(parser)
    parser.set_defaults(func=_cmd_check)
