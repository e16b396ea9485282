"""Argument checks the control planes run before proposing a command (the machine itself never raises)."""

from __future__ import annotations

import math

from ._partitions import PARTITIONS

__all__ = ("MAX_NAME_BYTES", "check_name", "check_partition", "check_ttl")

MAX_NAME_BYTES = 256
"""The longest key, lock name, holder, member id or topic, in UTF-8 bytes."""


def check_name(what: str, name: str) -> str:
    """Return `name` if it is a `str` of 1 to `MAX_NAME_BYTES` UTF-8 bytes without NUL.

    Raises:
        ValueError: It is not; the message names `what`.

    Example:
        >>> check_name("key", "gate/login")
        'gate/login'
        >>> check_name("key", "")
        Traceback (most recent call last):
        ...
        ValueError: key must be 1 to 256 UTF-8 bytes without NUL, got ''
    """
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a str, got {type(name).__name__}")
    raw = name.encode()
    if not raw or len(raw) > MAX_NAME_BYTES or b"\0" in raw:
        raise ValueError(f"{what} must be 1 to {MAX_NAME_BYTES} UTF-8 bytes without NUL, got {name[:80]!r}")
    return name


def check_ttl(ttl: float) -> float:
    """Return `ttl` if it is a finite number of seconds above 0.

    Raises:
        ValueError: It is not.

    Example:
        >>> check_ttl(0)
        Traceback (most recent call last):
        ...
        ValueError: ttl must be a finite number of seconds > 0, got 0
    """
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not (ttl > 0 and math.isfinite(ttl)):
        raise ValueError(f"ttl must be a finite number of seconds > 0, got {ttl!r}")
    return float(ttl)


def check_partition(partition: int) -> int:
    """Return `partition` if it is an int from 0 to `PARTITIONS - 1`.

    Raises:
        ValueError: It is not.

    Example:
        >>> check_partition(255)
        255
    """
    if isinstance(partition, bool) or not isinstance(partition, int) or not 0 <= partition < PARTITIONS:
        raise ValueError(f"partition must be an int from 0 to {PARTITIONS - 1}, got {partition!r}")
    return partition
