"""Argument checks every `QueueBackend` makes, with the same messages on every backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("check_limits", "check_max_messages", "check_payloads")


def check_limits(visibility_timeout: float, max_attempts: int) -> None:
    """Reject a non-positive visibility timeout or fewer than one attempt.

    Example:
        >>> check_limits(0, 5)
        Traceback (most recent call last):
        ...
        ValueError: visibility_timeout must be > 0 seconds, got 0
    """
    if not visibility_timeout > 0:
        raise ValueError(f"visibility_timeout must be > 0 seconds, got {visibility_timeout!r}")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts!r}")


def check_payloads(payloads: Sequence[object]) -> None:
    """Reject a str or bytes given where a sequence of payloads belongs."""
    if isinstance(payloads, str | bytes):
        raise TypeError("payloads is a sequence of payloads: wrap a single payload in a list")


def check_max_messages(max_messages: int) -> None:
    """Reject a batch size below one."""
    if max_messages < 1:
        raise ValueError(f"max_messages must be at least 1, got {max_messages!r}")
