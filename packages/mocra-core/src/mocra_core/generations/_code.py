"""`code_hash`: the content hash that names a module's code (the source of its class and of its file)."""

from __future__ import annotations

import hashlib
import inspect
import weakref

__all__ = ("UNKNOWN_HASH", "code_hash", "file_hash")

UNKNOWN_HASH = ""
"""The hash of a generation recorded before jobs recorded hashes (the first worker to start fills it in)."""

_HASH_CHARS = 16  # 64 bits of SHA-256: plenty to tell a job's generations apart, short enough to show
_known: weakref.WeakKeyDictionary[type, str] = weakref.WeakKeyDictionary()


def code_hash(source: object) -> str:
    """The content hash of the code of `source` (a `Spider` or `Module`, or its class).

    The SHA-256 of the class's qualified name, its source and the bytes of the file defining it: a
    change to the class or to a helper in its file is a new generation. Computed once per class and
    kept (a file edited after the class was imported does not change the hash of the class already
    loaded); a class without a readable source (a REPL, a doctest) hashes by its qualified name only.

    Example:
        >>> class Books: ...
        >>> len(code_hash(Books)), code_hash(Books) == code_hash(Books())
        (16, True)
    """
    cls = source if isinstance(source, type) else type(source)
    known = _known.get(cls)
    if known is None:
        known = _known[cls] = _digest(cls)
    return known


def file_hash(text: bytes, cls_source: str, qualname: str) -> str:
    """The hash `code_hash` gives a class named `qualname`, with source `cls_source`, in a file of `text`.

    Example:
        >>> file_hash(b"x = 1", "", "Books") == file_hash(b"x = 2", "", "Books")
        False
    """
    digest = hashlib.sha256()
    for part in (qualname.encode(), cls_source.encode(), text):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()[:_HASH_CHARS]


def _digest(cls: type) -> str:
    try:
        path = inspect.getsourcefile(cls)
        cls_source = inspect.getsource(cls)
        if path is None:
            raise OSError("no source file")
        with open(path, "rb") as file:
            text = file.read()
    except (OSError, TypeError):
        return file_hash(b"", "", f"{cls.__module__}.{cls.__qualname__}")
    return file_hash(text, cls_source, cls.__qualname__)
