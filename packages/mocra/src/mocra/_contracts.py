"""Contracts of a parse callback, as `scrapy check` has them: `@url`, `@meta`, `@returns`, `@scrapes`.

A callback declares them in its docstring, one per line, or in a `contracts` attribute (a spider's maps
callback names to lines; a node's holds the lines of its `parse`). `@url` (and `@meta`) say what to
fetch; `@returns` and `@scrapes` judge what the callback made of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from mocra_core import ConfigError

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ("Contracts", "Output", "Returns", "Scrapes", "parse_contracts")

_KINDS = {"item": "items", "items": "items", "request": "requests", "requests": "requests"}
_KINDS |= {"task": "tasks", "tasks": "tasks"}
_KNOWN = ("url", "meta", "returns", "scrapes")


@dataclass
class Output:
    """What a callback made of a response: its items, requests to follow and tasks for other nodes."""

    items: list[Any] = field(default_factory=list)
    requests: int = 0
    tasks: int = 0


@dataclass(frozen=True)
class Returns:
    """`@returns items|requests|tasks [MIN [MAX]]`: how many the callback makes (MIN defaults to 1).

    Example:
        >>> Returns("@returns items 1 2", "items", 1, 2).judge(Output(items=[{}, {}, {}]))
        'got 3 items, expected 1..2'
    """

    text: str
    kind: str
    low: int
    high: int | None

    def judge(self, output: Output) -> str | None:
        """None when `output` keeps the contract, else what is wrong."""
        got = len(output.items) if self.kind == "items" else getattr(output, self.kind)
        if self.low <= got and (self.high is None or got <= self.high):
            return None
        expected = f"at least {self.low}" if self.high is None else f"{self.low}..{self.high}"
        if self.high == self.low:
            expected = str(self.low)
        return f"got {got} {self.kind}, expected {expected}"


@dataclass(frozen=True)
class Scrapes:
    """`@scrapes FIELD ...`: every item has each field, with a value other than None or "".

    Items may be dicts, msgspec structs, dataclasses or attrs classes.

    Example:
        >>> Scrapes("@scrapes title price", ("title", "price")).judge(Output(items=[{"title": "x"}]))
        "item 1 lacks 'price': {'title': 'x'}"
    """

    text: str
    fields: tuple[str, ...]

    def judge(self, output: Output) -> str | None:
        """None when `output` keeps the contract, else what is wrong (the first item that breaks it)."""
        for number, item in enumerate(output.items, 1):
            try:
                fields = msgspec.to_builtins(item)
            except TypeError:
                fields = None
            if not isinstance(fields, dict):
                return f"item {number} is a {type(item).__name__}, not a mapping or a struct"
            missing = [name for name in self.fields if fields.get(name) in (None, "")]
            if missing:
                shown = repr(fields) if len(repr(fields)) <= 200 else repr(fields)[:197] + "..."
                return f"item {number} lacks {', '.join(map(repr, missing))}: {shown}"
        return None


@dataclass(frozen=True)
class Contracts:
    """The contracts of one callback: what to fetch (`url`, `meta`) and the checks of its output."""

    url: str
    meta: dict[str, Any]
    checks: tuple[Returns | Scrapes, ...]


def contract_lines(docstring: str | None, attribute: str | Sequence[str] | None) -> list[str]:
    r"""The contract lines (`@...`) of a docstring and of a `contracts` attribute (text or lines).

    Example:
        >>> contract_lines("Parse a page.\n\n    @url https://e.com/\n", ["@returns items 1"])
        ['@url https://e.com/', '@returns items 1']
    """
    texts = [docstring or ""]
    if isinstance(attribute, str):
        texts.append(attribute)
    elif attribute is not None:
        texts.extend(attribute)
    return [line.strip() for text in texts for line in text.splitlines() if line.strip().startswith("@")]


def parse_contracts(lines: Iterable[str], *, where: str) -> Contracts | None:
    """The callback's `Contracts` from its contract lines; None when it has none.

    Raises:
        ConfigError: an unknown contract, a malformed one, or contracts without `@url` (`where` names
            the callback).

    Example:
        >>> found = parse_contracts(["@url https://e.com/", "@returns requests 0 5"], where="books.parse")
        >>> found.url, found.checks[0].kind, found.checks[0].high
        ('https://e.com/', 'requests', 5)
        >>> parse_contracts(["@returns items"], where="books.parse")
        Traceback (most recent call last):
        ...
        mocra_core._errors.ConfigError: books.parse: contracts: @url is missing: name the page to check
    """
    url: str | None = None
    meta: dict[str, Any] = {}
    checks: list[Returns | Scrapes] = []
    count = 0
    for line in lines:
        count += 1
        name, _, rest = line[1:].partition(" ")
        args = rest.split()
        if name == "url":
            if url is not None or len(args) != 1:
                raise _error(where, line, "give one @url with one URL")
            url = args[0]
        elif name == "meta":
            meta.update(_meta(rest, line, where))
        elif name == "returns":
            checks.append(_returns(line, args, where))
        elif name == "scrapes":
            if not args:
                raise _error(where, line, "name the fields every item must have")
            checks.append(Scrapes(line, tuple(args)))
        else:
            raise _error(where, line, f"unknown contract; known: {', '.join('@' + k for k in _KNOWN)}")
    if not count:
        return None
    if url is None:
        raise ConfigError("contracts", "@url is missing: name the page to check", source=where)
    return Contracts(url, meta, tuple(checks))


def _returns(line: str, args: list[str], where: str) -> Returns:
    if not 1 <= len(args) <= 3 or args[0] not in _KINDS:
        raise _error(where, line, "write @returns items|requests|tasks [MIN [MAX]]")
    try:
        bounds = [int(arg) for arg in args[1:]]
    except ValueError:
        raise _error(where, line, "MIN and MAX are whole numbers") from None
    low = bounds[0] if bounds else 1
    high = bounds[1] if len(bounds) > 1 else None
    if low < 0 or (high is not None and high < low):
        raise _error(where, line, "MIN must be >= 0 and MAX >= MIN")
    return Returns(line, _KINDS[args[0]], low, high)


def _meta(text: str, line: str, where: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _error(where, line, f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise _error(where, line, "give a JSON object")
    return value


def _error(where: str, line: str, problem: str) -> ConfigError:
    return ConfigError(line, problem, source=where)
