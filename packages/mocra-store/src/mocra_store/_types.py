"""Column types shared by the models: timezone-aware UTC timestamps on every backend."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import DateTime
from sqlalchemy.types import TypeDecorator

if TYPE_CHECKING:
    from sqlalchemy.engine import Dialect

__all__ = ("UTCDateTime", "utcnow")


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC.

    >>> utcnow().tzinfo is UTC
    True
    """
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A ``DateTime(timezone=True)`` that always hands back aware UTC datetimes (SQLite keeps no zone).

    >>> from sqlalchemy.dialects import sqlite
    >>> UTCDateTime().process_result_value(datetime(2024, 1, 1), sqlite.dialect())
    datetime.datetime(2024, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Store naive values as UTC and aware ones converted to UTC."""
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        """Read back an aware UTC datetime."""
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
