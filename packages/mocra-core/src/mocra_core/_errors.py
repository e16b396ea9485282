"""The one exception tree of mocra; callers catch `MocraError`.

```
MocraError
    ConfigError     .key .source   a setting is missing, unknown or of the wrong type
    MissingExtra    .extra         an optional backend was asked for but its extra is not installed
```
"""

from __future__ import annotations

__all__ = ("ConfigError", "MissingExtra", "MocraError")


class MocraError(Exception):
    """Root of every error mocra raises on purpose."""


class ConfigError(MocraError):
    """A setting is missing, unknown or invalid.

    The message names the key, where the value came from and what was expected.

    Example:
        >>> err = ConfigError("queue.url", "unknown scheme 'rediss'", source="mocra.toml")
        >>> str(err)
        "mocra.toml: queue.url: unknown scheme 'rediss'"
    """

    def __init__(self, key: str, problem: str, *, source: str = "<code>") -> None:
        super().__init__(f"{source}: {key}: {problem}")
        self.key = key
        self.source = source


class MissingExtra(MocraError):
    """An optional feature needs an extra that is not installed.

    Example:
        >>> str(MissingExtra("redis", "queue URL 'redis://127.0.0.1'"))
        "queue URL 'redis://127.0.0.1' needs: pip install 'mocra[redis]'"
    """

    def __init__(self, extra: str, what: str) -> None:
        super().__init__(f"{what} needs: pip install 'mocra[{extra}]'")
        self.extra = extra
