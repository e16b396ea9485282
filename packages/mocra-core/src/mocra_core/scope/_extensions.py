"""File extensions a link extractor skips by default: Scrapy's `IGNORED_EXTENSIONS`."""

from __future__ import annotations

__all__ = ("IGNORED_EXTENSIONS", "has_extension")

IGNORED_EXTENSIONS: frozenset[str] = frozenset(
    (
        # archives
        "7z", "7zip", "bz2", "rar", "tar", "tar.gz", "xz", "zip",
        # images
        "mng", "pct", "bmp", "gif", "jpg", "jpeg", "png", "pst", "psp", "tif", "tiff", "ai", "drw", "dxf",
        "eps", "ps", "svg", "cdr", "ico", "webp",
        # audio
        "mp3", "wma", "ogg", "wav", "ra", "aac", "mid", "au", "aiff",
        # video
        "3gp", "asf", "asx", "avi", "mov", "mp4", "mpg", "qt", "rm", "swf", "wmv", "m4a", "m4v", "flv",
        "webm",
        # office suites
        "xls", "xlsm", "xlsx", "xltm", "xltx", "potm", "potx", "ppt", "pptm", "pptx", "pps", "doc", "docb",
        "docm", "docx", "dotm", "dotx", "odt", "ods", "odg", "odp",
        # other
        "css", "pdf", "exe", "bin", "rss", "dmg", "iso", "apk", "jar", "sh", "rpm", "deb", "msi",
    )
)  # fmt: skip


def has_extension(url: str, extensions: frozenset[str]) -> bool:
    """True if the last path segment of `url` ends in one of `extensions` (lower case, no dot).

    The query and fragment are ignored, and so is case; `a.tar.gz` matches both `gz` and `tar.gz`.

    Example:
        >>> has_extension("https://example.com/img/Logo.PNG?v=2", IGNORED_EXTENSIONS)
        True
        >>> has_extension("https://example.com/docs.pdf/page", IGNORED_EXTENSIONS)
        False
        >>> has_extension("https://example.com/a.tar.gz", frozenset({"tar.gz"}))
        True
        >>> has_extension("https://example.zip", IGNORED_EXTENSIONS)
        False
    """
    end = len(url)
    for mark in "?#":
        at = url.find(mark)
        if 0 <= at < end:
            end = at
    scheme_end = url.find("://", 0, end)
    path_start = url.find("/", scheme_end + 3 if scheme_end >= 0 else 0, end)
    if path_start < 0:
        return False  # no path: `https://example.zip` is a host, not a file
    name = url[url.rfind("/", path_start, end) + 1 : end]
    dot = name.find(".")
    if dot < 0:
        return False
    name = name.lower()
    while dot >= 0:
        if name[dot + 1 :] in extensions:
            return True
        dot = name.find(".", dot + 1)
    return False
