"""MkDocs hooks of the documentation site: pages generated from the code, so they cannot drift.

- `reference/settings.md`: every setting, from the settings structs (type, default, and the meaning from
  each struct's `Attributes:` docstring section).
- `reference/cli.md`: every `mocra` command, from the argparse parser (`mocra._cli.build_parser`).
- `packages/<distribution>.md`: each distribution's README (its PyPI page), its links made to resolve in
  the site (`package_page`).

`ExampleSections` is a griffe extension (mkdocstrings): it reads a docstring's `Example:` section as an
examples section, so its doctest is shown as code rather than parsed as Markdown.

Example:
    >>> "| `concurrency` | `int` | `64` |" in settings_page()
    True
    >>> "## `mocra run`" in cli_page()
    True
    >>> package_page("mocra-dag").startswith("# mocra-dag")
    True
"""

from __future__ import annotations

import argparse
import inspect
import json
import pathlib
import posixpath
import re
from typing import TYPE_CHECKING, Any

import griffe
import msgspec

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.livereload import LiveReloadServer
    from mkdocs.structure.files import Files

__all__ = (
    "DISTRIBUTIONS",
    "ExampleSections",
    "cli_page",
    "on_files",
    "on_serve",
    "package_page",
    "relink",
    "setting_rows",
    "settings_page",
)

_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", re.M)
_QUALIFIED = re.compile(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)")
_HELP_WIDTH = 110
_ROOT = pathlib.Path(__file__).resolve().parents[1]
DISTRIBUTIONS = ("mocra", "mocra-core", "mocra-cluster", "mocra-dag", "mocra-proxy", "mocra-store")


class ExampleSections(griffe.Extension):
    """Read `Example:` (singular) as Google's `Examples:` section, so doctests render as code."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rename the section header of each object's docstring as it is loaded."""
        if obj.docstring is not None and "Example:" in obj.docstring.value:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated reference pages to the site (a MkDocs hook)."""
    from mkdocs.structure.files import File

    pages = [("reference/settings.md", settings_page()), ("reference/cli.md", cli_page())]
    pages += [(f"packages/{dist}.md", package_page(dist)) for dist in DISTRIBUTIONS]
    for path, content in pages:
        files.append(File.generated(config, path, content=content))
    return files


def on_serve(server: LiveReloadServer, config: MkDocsConfig, builder: Any) -> LiveReloadServer:
    """`mkdocs serve` rebuilds when a distribution's README changes too (a MkDocs hook)."""
    for dist in DISTRIBUTIONS:
        server.watch(str(_ROOT / "packages" / dist / "README.md"))
    return server


# ---------------------------------------------------------------------------------------------- settings


def _attributes(cls: type) -> dict[str, str]:
    """The `Attributes:` section of a class's Google docstring: name → description."""
    parsed = griffe.Docstring(inspect.getdoc(cls) or "").parse("google", warnings=False)
    return {
        attribute.name: " ".join(attribute.description.split())
        for section in parsed
        if section.kind is griffe.DocstringSectionKind.attributes
        for attribute in section.value
    }


def _type_name(annotation: Any) -> str:
    """`int`, `str | None`, `Literal['a', 'b']`, `dict[str, str]`: without module prefixes."""
    text = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    return _QUALIFIED.sub(r"\1", text)


def _toml(value: Any) -> str:
    """A default as it would be written in `mocra.toml` (`None`: unset)."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        return "[" + ", ".join(_toml(v) for v in items) + "]"
    return str(value)


def _default(field: msgspec.structs.FieldInfo) -> Any:
    if field.default is not msgspec.NODEFAULT:
        return field.default
    return field.default_factory()


def _is_section(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, msgspec.Struct)


def setting_rows(cls: type, prefix: str = "") -> list[tuple[str, type, list[tuple[str, ...]]]]:
    """Each section of the settings struct `cls`: (its dotted name, its struct, its rows).

    A row is (key, type, default, meaning); the meaning is empty when the struct's docstring does not
    describe the field (a test fails then). The struct's own section comes first, then the nested ones.

    Example:
        >>> from mocra_core.config import Settings
        >>> name, struct, rows = setting_rows(Settings)[1]
        >>> name, rows[0][:3]
        ('crawl', ('concurrency', 'int', '64'))
    """
    meanings = _attributes(cls)
    rows: list[tuple[str, ...]] = []
    nested: list[tuple[str, type, list[tuple[str, ...]]]] = []
    for field in msgspec.structs.fields(cls):
        dotted = f"{prefix}{field.name}"
        if _is_section(field.type):
            nested.extend(setting_rows(field.type, f"{dotted}."))
            continue
        meaning = meanings.get(field.name, "")
        rows.append((field.name, _type_name(field.type), _toml(_default(field)), meaning))
    return [(prefix.rstrip("."), cls, rows), *nested]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def settings_page() -> str:
    """The Markdown of the settings reference, generated from `mocra_core.config.Settings`."""
    from mocra_core.config import Settings

    out = [
        "# Settings reference",
        "",
        "Generated from the settings structs (`mocra_core.config.Settings`) when the site is built:",
        "every key, its type and its default. [Settings](../settings.md) explains how they are read and",
        "checked. Set one with `-s section.key=value` (`-s crawl.concurrency=16`), in a `mocra.toml`",
        "table (`[crawl]`, `concurrency = 16`), or with the variable `MOCRA_<SECTION>__<KEY>`",
        "(`MOCRA_CRAWL__CONCURRENCY=16`; a nested section adds a part:",
        "`MOCRA_QUEUE__REDIS__CONNECT_TIMEOUT=2`).",
        "",
    ]
    top, *sections = setting_rows(Settings)
    for name, struct, rows in [*sections, top]:  # the top-level keys last
        if not rows:
            continue
        summary = (inspect.getdoc(struct) or "").split("\n\n")[0].replace("\n", " ")
        out += [f"## `[{name}]`" if name else "## Top level", "", summary, ""]
        out += ["| key | type | default | meaning |", "|---|---|---|---|"]
        for key, type_name, default, meaning in rows:
            shown = default if default == "unset" else f"`{default}`"
            cells = (f"`{key}`", f"`{type_name}`", shown, meaning)
            out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------- CLI


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """The parser and every sub-command under it, depth first, as (words after `mocra`, parser)."""
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, (*path, name))
    return found


def _help(parser: argparse.ArgumentParser) -> str:
    """`--help` of `parser` at a fixed width (not the terminal's), so the page is the same everywhere."""
    cls = parser.formatter_class
    parser.formatter_class = lambda prog: cls(prog, width=_HELP_WIDTH)  # type: ignore[call-arg]
    try:
        return parser.format_help()
    finally:
        parser.formatter_class = cls


def cli_page() -> str:
    """The Markdown of the CLI reference, generated from the `mocra` command's argparse parser."""
    from mocra._cli import build_parser

    out = [
        "# CLI reference",
        "",
        "Generated from the `mocra` command's parser when the site is built: each command's `--help`.",
        "",
    ]
    for path, parser in _commands(build_parser()):
        title = " ".join(("mocra", *path))
        out += [f"## `{title}`", "", "```text", _help(parser).rstrip(), "```", ""]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------- packages

_FENCED = re.compile(r"^```.*?^```$", flags=re.S | re.M)
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def relink(target: str, dist: str) -> tuple[str | None, str]:
    """Where a link of `dist`'s README goes in the site: (its target there or None, its repository path).

    The READMEs link with paths of the repository (PyPI shows them as they are). In the site a link to
    another README goes to that package's page, the root README to the home page, a `docs/` page to that
    page; a link to any other file of the repository has no page (None). URLs and anchors stay.

    Example:
        >>> relink("../mocra-dag/README.md#graphs", "mocra")
        ('mocra-dag.md#graphs', 'packages/mocra-dag/README.md')
        >>> relink("../../README.md", "mocra-store"), relink("../../docs/store.md", "mocra-store")[0]
        (('../index.md', 'README.md'), '../store.md')
        >>> relink("../../examples/proxy_pool_httpx.py", "mocra-proxy")
        (None, 'examples/proxy_pool_httpx.py')
        >>> relink("https://pypi.org/project/mocra/", "mocra-core"), relink("#install", "mocra")
        (('https://pypi.org/project/mocra/', ''), ('#install', ''))
    """
    if _SCHEME.match(target) or target.startswith("#"):
        return target, ""
    path, hash_, anchor = target.partition("#")
    resolved = posixpath.normpath(posixpath.join("packages", dist, path))
    package = re.fullmatch(r"packages/([\w-]+)/README\.md", resolved)
    if resolved == "README.md":
        page = "../index.md"
    elif package is not None:
        page = f"{package[1]}.md"
    elif resolved.startswith("docs/"):
        page = "../" + resolved.removeprefix("docs/")
    else:
        return None, resolved
    return page + hash_ + anchor, resolved


def _relinked(markdown: str, dist: str) -> str:
    """`markdown` with every link outside code rewritten by `relink`; a link with no page becomes text."""

    def one(match: re.Match[str]) -> str:
        bang, text, target = match.groups()
        page, path = relink(target, dist)
        if page is not None:
            return f"{bang}[{text}]({page})"
        return text if path in text else f"{text} (`{path}`)"

    parts, end = [], 0
    for fence in _FENCED.finditer(markdown):
        parts += [_LINK.sub(one, markdown[end : fence.start()]), fence.group(0)]
        end = fence.end()
    return "".join([*parts, _LINK.sub(one, markdown[end:])])


def package_page(dist: str) -> str:
    """The site's page of the distribution `dist`: its `packages/<dist>/README.md`, its links relinked."""
    return _relinked((_ROOT / "packages" / dist / "README.md").read_text(encoding="utf-8"), dist)
