"""URL canonicalisation, request fingerprints and browser-like link resolution.

`canonicalize_url` follows the rules of w3lib's `canonicalize_url` (Scrapy's), which is not a dependency
here, with two differences: percent-escapes of reserved characters in the *path* stay distinct from the
characters themselves (RFC 3986 §6.2.2: `a%2Fb` is not `a/b`, `%3B` is not `;`), and dot segments are
resolved. Everything is built on `urllib.parse` and a few precompiled regexes; nothing is cached here.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import quote, quote_from_bytes, unquote_to_bytes, urljoin, urlsplit

__all__ = (
    "BaseURL",
    "canonicalize_url",
    "clean_href",
    "escape_url",
    "fingerprint",
    "host_of",
    "join_url",
    "needs_escape",
)

_C0_SPACE = "".join(map(chr, range(33)))  # WHATWG "C0 control or space", stripped at both ends
_TAB_NEWLINE = {9: None, 10: None, 13: None}  # removed anywhere in a URL, as browsers do
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
# The common shape, `scheme://host[:port]/path?query#fragment`, split in one regex match (urlsplit costs
# ~6x more); IPv6 literals and anything else go through urlsplit.
_SPLIT = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://([^/?#\[\]]*)(/[^?#]*)?(?:\?([^#]*))?(?:#|\Z)").match
# A URL already in canonical form: lower-case http(s) and host, no port, user info, query or fragment, a path
# of canonical characters without escapes (and, checked apart, without dot segments).
_IS_CANONICAL = re.compile(r"https?://[a-z0-9.\-]+(/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*)?\Z").match
# `scheme://host[:port]` then the end or `/?#`, the host in plain ASCII (no user info, no IPv6 literal).
_PLAIN_HOST = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://([A-Za-z0-9.\-_~]*)(?::[0-9]*)?(?:[/?#]|\Z)").match
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

# Output alphabet of a canonical path: unreserved, sub-delims, ":", "@", "/" and %XX escapes.
_PATH_SAFE = "!$&'()*+,;=:@/%"
_PATH_IS_CANONICAL = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]*\Z").match
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})?")
# A query is decoded as form data (`+` is a space) and re-encoded with this alphabet; `&`, `=`, `+`, `#`
# and `%` are always escaped inside a key or value, so splitting stays unambiguous.
_QUERY_SAFE = "!$'()*,/:;?@"
_QUERY_IS_CANONICAL = re.compile(r"[A-Za-z0-9\-._~!$'()*,/:;?@&=]*\Z").match

# What `join_url` leaves alone: every printable ASCII character (including "%", so escapes stay as they are).
_PRINTABLE = "".join(map(chr, range(0x21, 0x7F)))
_NEEDS_ESCAPE = re.compile(r"[^!-~]").search


def _fix_escape(match: re.Match[str]) -> str:
    hex_digits = match.group(1)
    if hex_digits is None:
        return "%25"  # a lone "%" is a literal percent sign
    char = chr(int(hex_digits, 16))
    return char if char in _UNRESERVED else "%" + hex_digits.upper()


def _normalize_path(path: str) -> str:
    if not _PATH_IS_CANONICAL(path):
        if "%" in path:
            path = _ESCAPE.sub(_fix_escape, path)
        path = quote(path, safe=_PATH_SAFE)  # UTF-8 for non-ASCII; existing %XX escapes are kept
    if "/." in path:
        path = _remove_dot_segments(path)
    return path


def _remove_dot_segments(path: str) -> str:
    segments = path.split("/")
    out: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    if segments[-1] in (".", ".."):
        out.append("")  # "/a/b/.." is the directory "/a/"
    return "/" + "/".join(out)


def _canonical_form_part(part: str) -> str:
    return quote_from_bytes(unquote_to_bytes(part.replace("+", " ")), _QUERY_SAFE)


def _normalize_query(query: str) -> str:
    fast = "+" not in query and "%" not in query and _QUERY_IS_CANONICAL(query) is not None
    pairs: list[tuple[str, str]] = []
    for field in query.split("&"):
        if field:
            key, _, value = field.partition("=")
            if not fast or "=" in value:  # `a=1=2` must agree with `a=1%3D2`
                key, value = _canonical_form_part(key), _canonical_form_part(value)
            pairs.append((key, value))
    if len(pairs) > 1:
        pairs.sort()
    return "&".join([f"{key}={value}" for key, value in pairs])


def _normalize_netloc(netloc: str, scheme: str) -> str:
    userinfo, at, hostport = netloc.rpartition("@")
    if hostport.startswith("["):  # IPv6 literal
        end = hostport.find("]") + 1
        host, port = hostport[:end].lower(), hostport[end + 1 :]
    else:
        host, _, port = hostport.partition(":")
        if host.isascii():
            host = host.lower()
        else:
            try:
                host = host.encode("idna").decode("ascii").lower()  # IDNA 2003 + nameprep (NFKC)
            except UnicodeError:
                host = host.lower()  # an empty or over-long label: keep it readable rather than fail
    if port:
        if port.isdigit() and port.isascii():
            number = int(port)
            port = "" if _DEFAULT_PORTS.get(scheme) == number else str(number)
        hostport = f"{host}:{port}" if port else host
    else:
        hostport = host
    return f"{userinfo}@{hostport}" if at else hostport


def canonicalize_url(url: str) -> str:
    """Return the canonical form of `url`, so that URLs a server treats alike compare equal.

    Scheme and host are lower-cased (an internationalised host becomes punycode), the default port and the
    fragment are dropped, `.`/`..` path segments are resolved and an empty path becomes `/`. Percent-encoding
    is normalised: hex digits upper-case, escapes of unreserved characters decoded, other unsafe and non-ASCII
    characters encoded (as UTF-8), so `a b` and `a%20b` agree. The query is read as form data: `+` and `%20`
    are both a space, keys and values are re-encoded one way, blank values are kept (`?a` is `?a=`), and the
    pairs are sorted by key, then value. User info is left as it is.

    The result is for comparing and fingerprinting; fetch the URL as it was given. It never raises: a URL
    `urllib.parse` cannot split comes back stripped of surrounding whitespace only.

    Args:
        url: An absolute URL, usually http(s).

    Returns:
        The canonical URL.

    Example:
        >>> canonicalize_url("HTTP://Example.COM:80/a/./b/../c d?b=2&a=1&a=&x#top")
        'http://example.com/a/c%20d?a=&a=1&b=2&x='
        >>> canonicalize_url("https://bücher.de/%7euser/%e2%82%ac?q=a+b") == canonicalize_url(
        ...     "https://xn--bcher-kva.de:443/~user/€?q=a%20b")
        True
    """
    plain = _IS_CANONICAL(url)
    if plain is not None and "/." not in url:
        return url if plain.group(1) else url + "/"
    return _canonicalize(url)


def _canonicalize(url: str) -> str:
    """`canonicalize_url` by the full rules (no fast path)."""
    url = url.strip(_C0_SPACE)
    if "\t" in url or "\n" in url or "\r" in url:
        url = url.translate(_TAB_NEWLINE)
    match = _SPLIT(url)
    if match is not None:
        scheme, netloc, path, query = match.groups(default="")
        scheme = scheme.lower()
    else:
        try:
            scheme, netloc, path, query, _fragment = urlsplit(url)
        except ValueError:
            return url
    if netloc:
        netloc = _normalize_netloc(netloc, scheme)
        path = _normalize_path(path) if path else "/"
        head = f"{scheme}://{netloc}{path}" if scheme else f"//{netloc}{path}"
    else:  # no authority (mailto:, relative references): only the escapes are normalised
        head = f"{scheme}:{_normalize_path(path)}" if scheme else _normalize_path(path)
    if query:
        query = _normalize_query(query)
    return f"{head}?{query}" if query else head


def fingerprint(method: str, url: str, body: bytes | None) -> bytes:
    """Return a 16-byte identity for a request: method, canonical URL and a hash of the body.

    Example:
        >>> fingerprint("GET", "https://example.com/?b=1&a=2#x", None) == fingerprint(
        ...     "GET", "https://EXAMPLE.com/?a=2&b=1", b"")
        True
        >>> url = "https://example.com/"
        >>> fingerprint("GET", url, None) == fingerprint("POST", url, None)
        False
    """
    head = f"{method} {canonicalize_url(url)}".encode()  # one hash over `method SP url [LF body-hash]`
    if body:
        head += b"\n" + hashlib.blake2b(body, digest_size=16).digest()
    return hashlib.blake2b(head, digest_size=16).digest()


def host_of(url: str) -> str:
    """The lower-cased host of `url`, as `urlsplit(url).hostname or ""` finds it (a plain URL is not split).

    Example:
        >>> host_of("https://Shop.Example.com:8443/a"), host_of("http://user@[::1]:80/"), host_of("mailto:x")
        ('shop.example.com', '::1', '')
    """
    plain = _PLAIN_HOST(url)
    if plain is not None:
        return plain.group(1).lower()
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


class BaseURL:
    """A base URL prepared for resolving many references against it (`urljoin`, with fast paths).

    Absolute URLs, absolute paths, protocol-relative and plain relative references without dot segments
    are joined by string operations; anything else (`../x`, `?q`, `#f`, odd schemes) goes to `urljoin`.

    Example:
        >>> base = BaseURL("https://example.com/a/b?q=1")
        >>> [base.join(h) for h in ("c", "/d", "//cdn.example.org/e")]
        ['https://example.com/a/c', 'https://example.com/d', 'https://cdn.example.org/e']
        >>> [base.join(h) for h in ("../f", "?g")]
        ['https://example.com/f', 'https://example.com/a/b?g']
    """

    __slots__ = ("_directory", "_origin", "_scheme", "url")

    def __init__(self, url: str) -> None:
        self.url = url
        match = _SPLIT(url)
        if match is None or not match.group(2):
            self._scheme = self._origin = self._directory = ""  # unusual base: always urljoin
            return
        scheme, netloc, path = match.group(1, 2, 3)
        self._scheme = scheme.lower()
        self._origin = f"{self._scheme}://{netloc}"
        self._directory = self._origin + (path[: path.rfind("/") + 1] if path else "/")

    def join(self, href: str) -> str:
        """Resolve a (cleaned) reference; the same result as `urllib.parse.urljoin(self.url, href)`."""
        if not self._origin or "/." in href or "\\" in href or not href or href[0] in ".?#":
            return urljoin(self.url, href)
        if href[0] == "/":
            if href[1:2] != "/":
                return self._origin + href
            return f"{self._scheme}:{href}"
        if href.startswith(("http://", "https://")):
            return href
        if (
            ":" in href.partition("/")[0]
        ):  # another scheme (mailto:, javascript:) or a port-like first segment
            return urljoin(self.url, href)
        return self._directory + href


def clean_href(href: str) -> str:
    """Strip an attribute value the way browsers do before parsing it as a URL."""
    href = href.strip(_C0_SPACE)
    if "\t" in href or "\n" in href or "\r" in href:
        href = href.translate(_TAB_NEWLINE)
    return href


def join_url(base: str, href: str, *, encoding: str | None = None) -> str:
    """Resolve `href` against `base` as a browser does, returning a URL `Request` accepts.

    Surrounding whitespace and embedded tabs/newlines are removed; spaces, control and non-ASCII
    characters are percent-encoded (path and fragment as UTF-8, the query in the page's `encoding`, as
    browsers do for non-UTF-8 pages); an internationalised host becomes punycode. Everything else,
    including existing escapes, is left as it is.

    Example:
        >>> join_url("https://example.com/a/b", " ../c d?q=é ")
        'https://example.com/c%20d?q=%C3%A9'
        >>> join_url("https://example.com/", "/s?q=中", encoding="gb18030")
        'https://example.com/s?q=%D6%D0'
    """
    url = urljoin(base, clean_href(href))
    return escape_url(url, encoding) if needs_escape(url) else url


def needs_escape(url: str) -> bool:
    """True if `url` holds a character outside printable ASCII (space, control, non-ASCII)."""
    return _NEEDS_ESCAPE(url) is not None


def escape_url(url: str, encoding: str | None = None) -> str:
    """Percent-encode what a browser would in `url`: the query in `encoding`, the rest as UTF-8."""
    try:
        scheme, netloc, path, query, fragment = urlsplit(url)
    except ValueError:
        return quote(url, safe=_PRINTABLE)
    if not netloc.isascii():
        userinfo, at, hostport = netloc.rpartition("@")
        host, colon, port = hostport.partition(":")
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            host = quote(host, safe=_PRINTABLE)
        netloc = f"{quote(userinfo, safe=_PRINTABLE)}{at}{host}{colon}{port}"
    netloc = netloc.replace(" ", "%20")
    path = quote(path, safe=_PRINTABLE)
    if query and needs_escape(query):
        query = _escape_query(query, encoding)
    if fragment:
        fragment = quote(fragment, safe=_PRINTABLE)
    url = f"{scheme}://{netloc}{path}" if netloc else f"{scheme}:{path}"
    if query:
        url = f"{url}?{query}"
    return f"{url}#{fragment}" if fragment else url


def _escape_query(query: str, encoding: str | None) -> str:
    if not encoding or encoding.startswith("utf"):  # UTF-16 pages submit UTF-8 too (WHATWG)
        encoding = "utf-8"
    try:
        data = query.encode(encoding)
    except LookupError:
        data = query.encode()
    except UnicodeEncodeError:
        chunks = []
        for char in query:  # unencodable: `&#N;`, percent-encoded, as browsers do
            try:
                chunks.append(char.encode(encoding))
            except UnicodeEncodeError:
                chunks.append(b"%%26%%23%d%%3B" % ord(char))
        data = b"".join(chunks)
    return quote_from_bytes(data, safe=_PRINTABLE)
