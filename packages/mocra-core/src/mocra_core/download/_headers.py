"""`HeaderDefaults`: the headers every request gets, merged case-insensitively with a request's own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._decode import ACCEPT_ENCODING

if TYPE_CHECKING:
    from ..http import Request
    from ._settings import DownloadSettings

__all__ = ("HeaderDefaults", "has_cookie_header")

Headers = list[tuple[str, str]]


class HeaderDefaults:
    """`User-Agent`, `Accept-Encoding` and the settings' headers; `Request.headers` override them by name.

    Example:
        >>> from mocra_core.download import DownloadSettings
        >>> from mocra_core.http import Request
        >>> defaults = HeaderDefaults(DownloadSettings(user_agent="bot/1", headers={"Accept": "*/*"}))
        >>> merged = defaults.merged(Request("http://a.test/", headers={"user-agent": "me/2"}))
        >>> [pair for pair in merged if pair[0] != "Accept-Encoding"]
        [('user-agent', 'me/2'), ('Accept', '*/*')]
    """

    __slots__ = ("_by_key", "_list")

    def __init__(self, settings: DownloadSettings) -> None:
        by_key = {
            "user-agent": ("User-Agent", settings.user_agent),
            "accept-encoding": ("Accept-Encoding", ACCEPT_ENCODING),
        }
        for key, value in settings.headers.items():
            by_key[key.lower()] = (key, value)
        self._by_key = by_key
        self._list = list(by_key.values())

    def merged(self, request: Request) -> Headers:
        """The headers to send for `request` (the shared default list when it has none: do not mutate)."""
        if not request.headers:
            return self._list
        merged = self._by_key.copy()
        for key, value in request.headers.items():
            merged[key.lower()] = (key, value)
        return list(merged.values())


def has_cookie_header(request: Request, headers: Headers) -> bool:
    """Whether `request` brings its own `Cookie` header in `headers` (sent as is, instead of the jar's)."""
    return any(k.lower() == "cookie" for k, _ in headers) if request.headers else False
