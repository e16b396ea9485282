"""`mocra new spider|module NAME [URL]`: write a spider or module file from a template that runs as is."""

from __future__ import annotations

import functools
import keyword
import pathlib
import re
import string
import sys
from importlib import metadata, resources
from typing import TYPE_CHECKING

from mocra_core import ConfigError, InvalidURL, Request

if TYPE_CHECKING:
    import argparse

__all__ = ("add_new_command", "check_name", "class_name", "render", "start_url", "write_new")

KINDS = ("spider", "module")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_MAX_NAME = 64
_OWN = frozenset({"mocra", "mocra_core", "mocra_cluster", "mocra_dag", "mocra_proxy", "mocra_store"})


def check_name(name: str) -> str:
    """Return `name` if it can name a spider or module and its file, else raise saying what is wrong.

    A name starts with a letter and holds letters, digits, `_` and `-` (at most 64); its file
    (`-` as `_`) may not shadow a module Python would import instead (`json`, `mocra`, ...).

    Raises:
        ConfigError: the name is empty, too long, has another character, or shadows a module.

    Example:
        >>> check_name("books")
        'books'
        >>> check_name("2books")
        Traceback (most recent call last):
        ...
        mocra_core._errors.ConfigError: mocra new: NAME '2books': must start with a letter (a-z, A-Z)
    """
    problem = _name_problem(name)
    if problem:
        raise ConfigError(f"NAME {name!r}", problem, source="mocra new")
    return name


def _name_problem(name: str) -> str | None:
    if not name:
        return "is empty"
    if len(name) > _MAX_NAME:
        return f"is {len(name)} characters long; at most {_MAX_NAME}"
    if not name[0].isascii() or not name[0].isalpha():
        return "must start with a letter (a-z, A-Z)"
    if not _NAME.fullmatch(name):
        bad = sorted({c for c in name if not (c.isascii() and (c.isalnum() or c in "_-"))})
        return f"may hold only letters, digits, '_' and '-', not {' '.join(map(repr, bad))}"
    stem = name.replace("-", "_")
    if keyword.iskeyword(stem):
        return "is a Python keyword: choose another name"
    if stem in sys.stdlib_module_names or stem in _installed_modules():
        return f"its file {stem}.py would shadow the module {stem!r}: choose another name"
    return None


@functools.cache
def _installed_modules() -> frozenset[str]:
    """The top-level modules of the installed distributions (`mocra`, `msgspec`, ...)."""
    return frozenset(metadata.packages_distributions()) | _OWN


def class_name(name: str) -> str:
    """The class name of a spider or module called `name`: its parts in CamelCase.

    Example:
        >>> class_name("book_shop"), class_name("quotes-2"), class_name("eBay")
        ('BookShop', 'Quotes2', 'EBay')
    """
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_-]+", name) if part)


def start_url(url: str) -> str:
    """The start URL as the template writes it: `https://` is added to a bare host, and it is checked.

    Raises:
        ConfigError: not an http(s) URL, or it holds a quote or a backslash (percent-encode them).

    Example:
        >>> start_url("quotes.toscrape.com")
        'https://quotes.toscrape.com'
        >>> start_url("ftp://example.com/")
        Traceback (most recent call last):
        ...
        mocra_core._errors.ConfigError: mocra new: URL: 'ftp://example.com/': scheme must be http or https
    """
    full = url if "://" in url else f"https://{url}"
    if '"' in full or "\\" in full:
        raise ConfigError(
            "URL", f"{url!r} holds a quote or a backslash: percent-encode it", source="mocra new"
        )
    try:
        return Request(full).url
    except InvalidURL as exc:
        problem = str(exc).partition(": ")[2].split(" (resolve relative")[0]
        raise ConfigError("URL", f"{url!r}: {problem}", source="mocra new") from None


def render(kind: str, name: str, url: str, *, file: str) -> str:
    """The source of a new spider or module file (`kind`), named `name`, starting at `url`.

    Example:
        >>> source = render("spider", "books", "https://example.com/", file="books.py")
        >>> "class Books(Spider[Page]):" in source and "@url https://example.com/" in source
        True
    """
    template = resources.files("mocra").joinpath("templates", f"{kind}.py.tmpl").read_text(encoding="utf-8")
    return string.Template(template).substitute(
        name=name,
        name_literal=f'"{name}"',
        class_name=class_name(name),
        url=url,
        url_literal=f'"{url}"',
        file=file,
    )


def write_new(kind: str, name: str, url: str, *, folder: pathlib.Path) -> pathlib.Path:
    """Write a new `kind` ("spider" or "module") file `folder/NAME.py` and return its path.

    `folder` is made when missing; an existing file is never overwritten.

    Raises:
        ConfigError: a bad name or URL, or the file exists.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = write_new("spider", "books", "example.com", folder=pathlib.Path(folder))
        ...     path.name, "https://example.com" in path.read_text()
        ('books.py', True)
    """
    check_name(name)
    url = start_url(url)
    path = folder / f"{name.replace('-', '_')}.py"
    source = render(kind, name, url, file=path.name)
    compile(source, str(path), "exec")  # a template that does not parse is a bug here, not the user's
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("x", encoding="utf-8") as out:
            out.write(source)
    except FileExistsError:
        raise ConfigError(str(path), "exists already; not overwritten", source="mocra new") from None
    return path


def _cmd_new(args: argparse.Namespace) -> int:
    if args.url is None and args.kind == "spider":
        raise ConfigError(
            "URL", "a spider needs its start URL: mocra new spider NAME URL", source="mocra new"
        )
    url = args.url or "https://example.com/"
    path = write_new(args.kind, args.name, url, folder=pathlib.Path(args.dir))
    sys.stdout.write(
        f"wrote {args.kind} {args.name!r} to {path}\n"
        f"  run it:   mocra run {path} -o {args.name}.jsonl\n"
        f"  check it: mocra check {path}\n"
    )
    return 0


def add_new_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `mocra new` on the `mocra` sub-commands."""
    parser = commands.add_parser(
        "new",
        help="write a new spider or module file from a template that runs as generated",
        description="Write NAME.py (in --dir): a spider (one class crawling a site from URL) or a module "
        "(a list page, then each page it links to). It runs with `mocra run` and its parse docstrings "
        "hold contracts for `mocra check`. An existing file is never overwritten.",
    )
    parser.add_argument(
        "kind",
        choices=KINDS,
        metavar="{spider,module}",
        help="spider: one class; module: a crawl of several steps",
    )
    parser.add_argument(
        "name", metavar="NAME", help="the spider's name: a letter, then letters, digits, '_' or '-'"
    )
    parser.add_argument(
        "url",
        metavar="URL",
        nargs="?",
        help="the start URL (https:// is added to a bare host); a module's defaults to https://example.com/",
    )
    parser.add_argument("--dir", default=".", help="the folder to write into (made if missing; default .)")
    parser.set_defaults(func=_cmd_new)
