"""What the client helpers count as a proxy failure and when they try another proxy (httpx and aiohttp)."""

from __future__ import annotations

__all__ = ("IDEMPOTENT", "retry_after_break")

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
"""Methods safe to send again after a connection broke without an answer (RFC 9110, 9.2.2)."""


def retry_after_break(method: str) -> bool:
    """May a request whose connection broke without an answer be sent again through another proxy?"""
    return method.upper() in IDEMPOTENT
