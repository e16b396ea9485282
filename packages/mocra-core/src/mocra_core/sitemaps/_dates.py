"""W3C datetimes (the `<lastmod>` format) to timezone-aware datetimes."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

__all__ = ("parse_w3c_datetime",)

_W3C = re.compile(
    r"(?P<year>\d{4})(?:-(?P<month>\d{2})(?:-(?P<day>\d{2})"
    r"(?:[Tt ](?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,](?P<fraction>\d+))?)?"
    r"\s*(?P<tz>[Zz]|[+-]\d{2}(?::?\d{2})?)?)?)?)?"
)


def parse_w3c_datetime(text: str) -> datetime | None:
    """Parse a W3C datetime (`YYYY`, `YYYY-MM`, `YYYY-MM-DD`, with a time and zone or not); `None` if invalid.

    A value without a zone is taken as UTC, so every result is timezone-aware and comparable. Anything
    else (a bad month, trailing text) gives `None`: a bad `<lastmod>` is treated as absent.

    Args:
        text: The value, surrounding whitespace allowed.

    Example:
        >>> parse_w3c_datetime("2024-05-01")
        datetime.datetime(2024, 5, 1, 0, 0, tzinfo=datetime.timezone.utc)
        >>> parse_w3c_datetime("2024-05-01T10:30:00+02:00").isoformat()
        '2024-05-01T10:30:00+02:00'
        >>> parse_w3c_datetime("yesterday") is None
        True
    """
    match = _W3C.fullmatch(text.strip())
    if match is None:
        return None
    part = match.groupdict()
    fraction = (part["fraction"] or "0")[:6].ljust(6, "0")
    try:
        return datetime(
            int(part["year"]),
            int(part["month"] or 1),
            int(part["day"] or 1),
            int(part["hour"] or 0),
            int(part["minute"] or 0),
            int(part["second"] or 0),
            int(fraction),
            tzinfo=_zone(part["tz"]),
        )
    except ValueError:  # month 13, hour 25, ...
        return None


def _zone(tz: str | None) -> timezone:
    if tz is None or tz in "Zz":
        return UTC
    digits = tz[1:].replace(":", "")
    offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
    if offset >= timedelta(hours=24):
        raise ValueError(f"offset out of range: {tz!r}")
    return timezone(-offset if tz[0] == "-" else offset)
