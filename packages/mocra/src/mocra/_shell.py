"""`mocra shell [URL]`: fetch a page as a crawl would and explore its `response` interactively.

The downloader is the run's (`mocra_core.engine.run_downloaders`: `[download]` headers, cookies,
decoding and caps, the HTTP cache when `[http_cache] enabled`), running on an event loop in a portal
thread, so the session itself is plain synchronous Python: IPython when it is installed, `code.interact`
otherwise, or one expression (`-e`) for scripts.
"""

from __future__ import annotations

import code
import html
import importlib
import os
import re
import sys
import tempfile
import webbrowser
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, TextIO

import anyio.from_thread

from mocra_core import Request, Response

from ._settings_args import add_settings_arguments, load_settings

if TYPE_CHECKING:
    import argparse

    from anyio.from_thread import BlockingPortal

    from mocra_core import Settings
    from mocra_core.download import Downloader

__all__ = ("ShellSession", "add_shell_command", "run_shell")

_HEAD = re.compile(rb"<head[^>]*>", re.I)


class ShellSession:
    """The objects of a shell: the last `request` and `response`, `fetch` for another page, `view`.

    `namespace` is the session's variables; `fetch` updates its `request` and `response`. Cookies set by
    responses stay in the downloader's jar, so later fetches send them, as in a crawl.

    Args:
        portal: The event loop the downloader runs on.
        downloader: The run's `default` downloader.
        settings: The run's settings (shown as `settings`).
    """

    def __init__(self, portal: BlockingPortal, downloader: Downloader, settings: Settings) -> None:
        self._portal = portal
        self._downloader = downloader
        self.request: Request | None = None
        self.response: Response | None = None
        self.namespace: dict[str, Any] = {
            "fetch": self.fetch,
            "view": view,
            "settings": settings,
            "Request": Request,
            "request": None,
            "response": None,
        }

    def fetch(self, target: str | Request, **request_args: Any) -> Response:
        """Download `target` (a URL, with `Request` arguments, or a `Request`); it becomes `response`.

        Raises:
            DownloadError: the download failed (the previous `response` stays).
            InvalidURL: `target` is no absolute http(s) URL.
        """
        request = target if isinstance(target, Request) else Request(target, **request_args)
        response = self._portal.call(self._downloader.download, request)
        self.request, self.response = request, response
        self.namespace.update(request=request, response=response)
        return response


def view(response: Response, *, browser: bool = True) -> str:
    """Write `response`'s body to a temporary `.html` file and open it in a browser; return its path.

    A `<base href>` pointing at the response's URL is added, so its links, styles and images resolve.

    Example:
        >>> r = Response("https://example.com/a", 200, [], b"<html><head></head><body>x</body></html>",
        ...              Request("https://example.com/a"))
        >>> path = view(r, browser=False)
        >>> import pathlib
        >>> pathlib.Path(path).read_bytes()
        b'<html><head><base href="https://example.com/a"></head><body>x</body></html>'
        >>> os.remove(path)
    """
    body = response.body
    if b"<base" not in body[:4096].lower():
        base = f'<base href="{html.escape(response.url)}">'.encode()
        found = _HEAD.search(body)
        body = body[: found.end()] + base + body[found.end() :] if found else base + body
    descriptor, path = tempfile.mkstemp(prefix="mocra-", suffix=".html")
    with os.fdopen(descriptor, "wb") as file:
        file.write(body)
    if browser:
        webbrowser.open(f"file://{path}")
    return path


def banner(session: ShellSession) -> str:
    """What the shell says first: the page fetched, then the objects at hand."""
    response = session.response
    lines = []
    if response is not None:
        size = len(response.body)
        lines.append(f"[mocra] {response.status} {response.url} ({size:,} bytes, {response.elapsed:.2f} s)")
    lines += [
        "[mocra]   response   the Response: .status .headers .text .css() .css_first() .xpath() .links()",
        "[mocra]   request    the Request that fetched it",
        "[mocra]   fetch(url_or_request, **request_args)   download another page (it becomes response)",
        "[mocra]   view(response)   open the response in a browser",
        "[mocra]   settings   the run's Settings",
    ]
    return "\n".join(lines)


def interact(namespace: dict[str, Any], text: str, *, ipython: bool = True) -> None:
    """Run an interactive session on `namespace`: IPython if installed (and `ipython`), else `code`."""
    if ipython:
        try:
            shell = importlib.import_module("IPython")
        except ModuleNotFoundError:
            pass
        else:
            sys.stdout.write(text + "\n")
            shell.start_ipython(argv=[], user_ns=namespace, display_banner=False)
            return
    code.interact(banner=text, local=namespace, exitmsg="")


def evaluate(namespace: dict[str, Any], source: str, stream: TextIO) -> None:
    """Print the value of the expression `source` (as `print` would), or run it as statements.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> evaluate({"x": 2}, "x * 21", out)
        >>> evaluate({"x": 2}, "y = x + 1", out)  # a statement: nothing to print
        >>> out.getvalue().split()
        ['42']
    """
    try:
        compiled = compile(source, "<mocra shell -e>", "eval")
    except SyntaxError:
        exec(compile(source, "<mocra shell -e>", "exec"), namespace)  # statements print for themselves
        return
    stream.write(f"{eval(compiled, namespace)}\n")


def run_shell(
    url: str | None, settings: Settings, *, expression: str | None, ipython: bool, stream: TextIO
) -> int:
    """Fetch `url` (if given) with the run's downloader, then evaluate `expression` or interact.

    Raises:
        DownloadError: the first download failed.
        InvalidURL: `url` is no absolute http(s) URL.
    """
    from mocra_core.engine import run_downloaders

    with ExitStack() as stack:
        portal = stack.enter_context(anyio.from_thread.start_blocking_portal())
        downloaders = stack.enter_context(portal.wrap_async_context_manager(run_downloaders(settings)))
        session = ShellSession(portal, downloaders["default"], settings)
        if url is not None:
            session.fetch(url)
        if expression is not None:
            evaluate(session.namespace, expression, stream)
        else:
            interact(session.namespace, banner(session), ipython=ipython)
    return 0


def _cmd_shell(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    return run_shell(args.url, settings, expression=args.eval, ipython=not args.python, stream=sys.stdout)


def add_shell_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `mocra shell` on the `mocra` sub-commands."""
    parser = commands.add_parser(
        "shell",
        help="fetch a page as a crawl would and explore its response interactively (as `scrapy shell`)",
        description="Fetches URL with the crawl's downloader and settings (the same default headers, "
        "cookies, decoding and body cap; the HTTP cache with -s http_cache.enabled=true), then opens an "
        "interactive Python session (IPython when installed) with `response`, `request`, `fetch(url)` to "
        "fetch another page, `view(response)` to open it in a browser, and `settings`. With -e, prints the "
        "value of one expression instead, e.g. mocra shell URL -e 'response.css_first(\"title\").text()'.",
    )
    parser.add_argument(
        "url", nargs="?", help="the page to fetch first (an absolute http(s) URL); without it, use fetch(url)"
    )
    parser.add_argument(
        "-e",
        "--eval",
        metavar="EXPR",
        help="print the value of this Python expression (or run these statements) and exit, "
        "as `scrapy shell -c`",
    )
    parser.add_argument(
        "--python", action="store_true", help="use the standard Python shell even when IPython is installed"
    )
    add_settings_arguments(parser)
    parser.set_defaults(func=_cmd_shell)
