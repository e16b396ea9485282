"""Database URLs: the forms users write, normalised to the async drivers, and redacted for messages."""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url

__all__ = ("DEFAULT_URL", "async_url", "is_memory", "redact", "unavailable_reason")

DEFAULT_URL = "sqlite:///mocra.db"

_ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
}


def async_url(url: str | None) -> URL:
    """The URL with an async driver: ``sqlite://`` -> aiosqlite, ``postgresql://`` -> psycopg (3).

    A URL that names its driver already is kept as written.

    >>> async_url("postgresql://u@h/db").render_as_string()
    'postgresql+psycopg://u@h/db'
    >>> async_url(None).render_as_string()
    'sqlite+aiosqlite:///mocra.db'
    """
    parsed = make_url(url or DEFAULT_URL)
    driver = _ASYNC_DRIVERS.get(parsed.drivername)
    return parsed.set(drivername=driver) if driver else parsed


def is_memory(url: URL) -> bool:
    """Whether the URL is an in-memory SQLite database (one shared connection keeps it alive).

    >>> is_memory(async_url("sqlite:///:memory:")), is_memory(async_url("sqlite:///x.db"))
    (True, False)
    """
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


def redact(url: str | URL | None) -> str:
    """The URL as text with its password replaced by ``***``.

    >>> redact("postgresql://bob:hunter2@db/app")
    'postgresql://bob:***@db/app'
    """
    try:
        parsed = make_url(url or DEFAULT_URL) if not isinstance(url, URL) else url
    except Exception:  # an unparsable URL: say so without echoing it
        return "<unparsable URL>"
    return parsed.render_as_string(hide_password=True)


def unavailable_reason(exc: BaseException, url: str | URL | None) -> str:
    """The first line of the driver's error under ``exc``, with the URL's password (if any) blanked.

    >>> unavailable_reason(OSError("refused by bob:hunter2"), "postgresql://bob:hunter2@db/app")
    'refused by bob:***'
    """
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip()
    reason = text.splitlines()[0] if text else type(orig).__name__
    try:
        password = (make_url(url or DEFAULT_URL) if not isinstance(url, URL) else url).password
    except Exception:  # an unparsable URL has no password to hide
        password = None
    return reason.replace(str(password), "***") if password else reason
