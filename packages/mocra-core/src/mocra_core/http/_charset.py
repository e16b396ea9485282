"""Which encoding a response body is in, and its text.

The order is the WHATWG encoding sniffing algorithm's: a byte-order mark, then the `Content-Type` charset,
then `<meta charset>` / `<meta http-equiv content="...; charset=...">` (or an XML declaration) in the first
4 KB, then detection. Labels map to codecs as browsers map them (`latin-1` and `ascii` are windows-1252,
`gb2312` and `gbk` decode as gb18030, `shift_jis` as cp932, `euc-kr` as cp949, `big5` as big5hkscs); an
unknown or unsupported label falls through to the next source. Detection is cheap first (is the body valid
UTF-8?) and asks charset-normalizer only for undeclared bodies that are not.
"""

from __future__ import annotations

import codecs
import functools
import re
from typing import NamedTuple

__all__ = ("Decoded", "declared_encoding", "decode", "decode_body", "decode_lossy", "lookup_encoding")

_META_SCAN_BYTES = 4096
_DETECT_BYTES = 65536
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xfe\xff", "utf-16-be"), (b"\xff\xfe", "utf-16-le"))

_WINDOWS_1252 = (
    "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 iso8859-1 iso88591"
    " iso_8859-1 iso_8859-1:1987 l1 latin1 latin-1 us-ascii windows-1252 x-cp1252"
)
_GBK = "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk gb18030"
_SHIFT_JIS = "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis cp932"
_EUC_KR = (
    "euc_kr cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 ksc_5601"
    " windows-949"
)
_LABELS: dict[str, str | None] = {
    **dict.fromkeys(_WINDOWS_1252.split(), "cp1252"),
    **dict.fromkeys(_GBK.split(), "gb18030"),
    **dict.fromkeys(_SHIFT_JIS.split(), "cp932"),
    **dict.fromkeys(_EUC_KR.split(), "cp949"),
    **dict.fromkeys("big5 big5-hkscs cn-big5 csbig5 x-x-big5".split(), "big5hkscs"),
    **dict.fromkeys("unicode-1-1-utf-8 unicode11utf8 unicode20utf8 x-unicode20utf8".split(), "utf-8"),
    **dict.fromkeys(
        "csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le".split(), "utf-16-le"
    ),
    **dict.fromkeys("unicodefffe utf-16be".split(), "utf-16-be"),
    **dict.fromkeys("dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874".split(), "cp874"),
    **dict.fromkeys(
        "iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 l5 latin5 csisolatin5".split(), "cp1254"
    ),
    **dict.fromkeys("csmacintosh mac macintosh x-mac-roman".split(), "mac-roman"),
    **dict.fromkeys("x-mac-cyrillic x-mac-ukrainian".split(), "mac-cyrillic"),
    **dict.fromkeys("cseucpkdfmtjapanese euc-jp x-euc-jp".split(), "euc_jp"),
    **dict.fromkeys("iso-8859-8-i csiso88598i logical".split(), "iso8859-8"),
    "koi8-ru": "koi8-u",
    # WHATWG "replacement" encodings and labels no browser decodes: fall through to the next source.
    **dict.fromkeys("csiso2022kr hz-gb-2312 iso-2022-cn iso-2022-cn-ext iso-2022-kr x-user-defined".split()),
}
_NOT_FOR_DOCUMENTS = frozenset(
    ("utf-7", "unicode-escape", "raw-unicode-escape", "punycode", "idna", "undefined", "charmap", "utf-32")
    + ("utf-32-le", "utf-32-be")
)

# windows-1252 as browsers decode it: the five bytes cp1252 leaves undefined map to the C1 controls.
_WINDOWS_1252_TABLE = "".join(bytes([i]).decode("cp1252", "ignore") or chr(i) for i in range(256))

_CHARSET_PARAM = re.compile(r"""charset\s*=\s*["']?\s*([^\s"';,]+)""", re.IGNORECASE)
_META_CHARSET = re.compile(rb"""<meta\s[^>]*?charset\s*=\s*["']?\s*([^\s"'/>;]+)""", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"""\A\s*<\?xml\s[^>]*?encoding\s*=\s*["']([A-Za-z0-9._:\-]+)""")


class Decoded(NamedTuple):
    """A decoded body: its text, the codec used, and whether the decode was exact (no replacements)."""

    text: str
    encoding: str
    exact: bool


def lookup_encoding(label: str) -> str | None:
    """Return the Python codec name browsers would use for a charset `label`, or `None` if unusable.

    Example:
        >>> [lookup_encoding(x) for x in ("GB2312", "x-sjis", "Latin-1", "utf8", "base64", "nonsense")]
        ['gb18030', 'cp932', 'cp1252', 'utf-8', None, None]
    """
    label = label.strip().lower()
    if label in _LABELS:
        return _LABELS[label]
    try:
        info = codecs.lookup(label)
    except LookupError:
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_FOR_DOCUMENTS:
        return None
    return _LABELS.get(info.name, info.name)  # e.g. "iso8859-1" → cp1252, "gbk" → gb18030


def decode(data: bytes, encoding: str, errors: str = "strict") -> str:
    """Decode `data` with a codec name from `lookup_encoding` (windows-1252 as browsers do)."""
    if encoding == "cp1252":
        return codecs.charmap_decode(data, errors, _WINDOWS_1252_TABLE)[0]
    return data.decode(encoding, errors)


def _bom(body: bytes) -> tuple[str, int] | None:
    for mark, name in _BOMS:
        if body.startswith(mark):
            return name, len(mark)
    return None


@functools.lru_cache(maxsize=256)  # a crawl sees few Content-Type values; a regex search per response adds up
def _header_charset(content_type: str | None) -> str | None:
    if content_type:
        match = _CHARSET_PARAM.search(content_type)
        if match:
            return lookup_encoding(match.group(1))
    return None


def _is_markup(content_type: str | None) -> bool:
    if not content_type:
        return True
    media = content_type.partition(";")[0].strip().lower()
    return "html" in media or "xml" in media or media in ("text/plain", "application/octet-stream", "")


def _document_charset(body: bytes) -> str | None:
    head = body[:_META_SCAN_BYTES]
    for match in _META_CHARSET.finditer(head):
        name = lookup_encoding(match.group(1).decode("ascii", "replace"))
        if name:  # a document cannot declare UTF-16 in itself: its bytes would not be ASCII-compatible
            return "utf-8" if name.startswith("utf-16") else name
    xml = _XML_ENCODING.match(head)
    return lookup_encoding(xml.group(1).decode("ascii")) if xml else None


def declared_encoding(body: bytes, content_type: str | None) -> tuple[str, int] | None:
    r"""Return `(codec, bom length)` from the BOM, header or document, or `None` if nothing is declared.

    Example:
        >>> declared_encoding(b'<meta charset="gbk"><p>x', "text/html")
        ('gb18030', 0)
        >>> declared_encoding(b"\xef\xbb\xbf<p>x", "text/html; charset=latin-1")
        ('utf-8', 3)
    """
    bom = _bom(body)
    if bom:
        return bom
    name = _header_charset(content_type)
    if name is None and _is_markup(content_type):
        name = _document_charset(body)
    return (name, 0) if name else None


def _detect(body: bytes) -> str | None:
    from charset_normalizer import from_bytes

    best = from_bytes(body[:_DETECT_BYTES], preemptive_behaviour=False).best()
    name = lookup_encoding(best.encoding) if best is not None else None
    return None if name is None or name.startswith(("utf-16", "utf-32")) else name  # those need a BOM


def _mostly_valid(lossy: str) -> bool:
    """A few bad bytes (a truncated character, one mis-encoded comment) do not make a declaration wrong."""
    errors = lossy.count("\ufffd")
    return errors <= 2 or errors * 100 <= len(lossy)


def decode_body(body: bytes, content_type: str | None) -> Decoded:
    """Decode a body: declared encoding first, detection when nothing is declared or the declaration is wrong.

    A declared encoding is kept, with `errors="replace"`, unless more than 2 characters and more than 1 % of
    them fail to decode; then the body is tried as UTF-8 and with charset-normalizer, and the first codec
    that decodes it exactly wins. An undeclared body is UTF-8 if valid, else what charset-normalizer finds,
    else UTF-8 with replacements (binary data stays visibly garbled, not silently turned into windows-1252).

    Example:
        >>> decode_body("<p>中文</p>".encode("gbk"), "text/html; charset=gb2312")
        Decoded(text='<p>中文</p>', encoding='gb18030', exact=True)
        >>> decode_body("<p>café</p>".encode("cp1252"), "text/html; charset=utf-8")  # one bad byte: kept
        Decoded(text='<p>caf\ufffd</p>', encoding='utf-8', exact=False)
        >>> decode_body("<p>café, naïve, über</p>".encode(), "text/html; charset=koi8-r").encoding  # decodes
        'koi8-r'
    """
    declared = declared_encoding(body, content_type)
    lossy: Decoded | None = None
    if declared is not None:
        name, skip = declared
        data = body[skip:] if skip else body
        try:
            return Decoded(decode(data, name), name, True)
        except UnicodeDecodeError:
            lossy = Decoded(decode(data, name, "replace"), name, False)
        if skip or _mostly_valid(lossy.text):
            return lossy  # a BOM is never second-guessed
    try:
        return Decoded(body.decode("utf-8"), "utf-8", True)
    except UnicodeDecodeError:
        pass
    guess = _detect(body)
    if guess is not None and (lossy is None or guess != lossy.encoding):
        try:
            return Decoded(decode(body, guess), guess, True)
        except UnicodeDecodeError:
            if lossy is None:
                return Decoded(decode(body, guess, "replace"), guess, False)
    return lossy or Decoded(body.decode("utf-8", "replace"), "utf-8", False)


def decode_lossy(body: bytes, content_type: str | None) -> str:
    """Decode with the declared encoding (or UTF-8) and `errors="replace"`: no detection, never raises."""
    name, skip = declared_encoding(body, content_type) or ("utf-8", 0)
    return decode(body[skip:] if skip else body, name, "replace")
