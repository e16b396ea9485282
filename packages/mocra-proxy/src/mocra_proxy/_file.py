"""`FileSource`: proxies read from a text file, re-read when it changes."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import anyio

from ._lines import parse_lines
from ._source_errors import SourceError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._proxy import Proxy

__all__ = ("FileSource",)


class FileSource:
    r"""Proxies from a file, one a line; the file is re-read when it changes.

    Each line is `scheme://user:pass@host:port` or `host:port[:user:pass]`; blank lines and `#` comments
    are skipped, and a bad line is logged (with its line number, password redacted) and skipped. Every
    `fetch` checks the file's modification time, size and inode (one `stat`, in a worker thread) and
    re-reads it only when one of them changed.

    Args:
        path: The file.
        tier: Cost tier of its proxies.
        name: The source's name (`Proxy.source`); the path by default.
        weight: Order among sources when the pool refills (higher first).

    Raises:
        SourceError: from `fetch`, when the file cannot be read (missing, no permission, not UTF-8).

    Example:
        >>> import anyio, pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "proxies.txt"
        >>> _ = path.write_text("# office\n10.0.0.1:8080:alice:pw\nsocks5://10.0.0.2:1080\n")
        >>> anyio.run(FileSource(path).fetch)
        [Proxy('http://alice:***@10.0.0.1:8080'), Proxy('socks5://10.0.0.2:1080')]
    """

    def __init__(
        self, path: str | os.PathLike[str], *, tier: int = 0, name: str | None = None, weight: float = 1.0
    ) -> None:
        self.path = anyio.Path(path)
        self.name = name if name is not None else os.fspath(path)
        self.weight = weight
        self.tier = tier
        self._signature: tuple[int, int, int] | None = None
        self._proxies: list[Proxy] = []

    async def fetch(self) -> Sequence[Proxy]:
        """The file's proxies, re-read if the file changed since the last fetch."""
        try:
            stat = await self.path.stat()
            signature = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
            if signature != self._signature:
                text = await self.path.read_text(encoding="utf-8")
                self._proxies = parse_lines(text, where=self.name, tier=self.tier, source=self.name)
                self._signature = signature
        except (OSError, UnicodeDecodeError) as exc:
            raise SourceError(self.name, f"cannot read the file: {type(exc).__name__}: {exc}") from exc
        return self._proxies

    def __repr__(self) -> str:
        return f"FileSource({self.name!r})"
