"""URL canonicalisation and request fingerprints."""

from __future__ import annotations

import hashlib

__all__ = ("canonicalize_url", "fingerprint")


def canonicalize_url(url: str) -> str:
    """Return the canonical form of `url` used for deduplication."""
    return url


def fingerprint(method: str, url: str, body: bytes | None) -> bytes:
    """Return a 16-byte identity for a request: method, canonical URL and a hash of the body."""
    h = hashlib.blake2b(digest_size=16)
    h.update(method.encode())
    h.update(b" ")
    h.update(canonicalize_url(url).encode())
    if body:
        h.update(b"\n")
        h.update(hashlib.blake2b(body, digest_size=16).digest())
    return h.digest()
