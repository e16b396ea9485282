"""`StateError`: the shared pool state could not be read or written."""

from __future__ import annotations

from ._errors import ProxyPoolError

__all__ = ("StateError",)


class StateError(ProxyPoolError):
    """A `PoolState` store failed (unreachable, refused a command) or its driver is not installed.

    A pool that meets it keeps its own view and tries again on its next read or write.

    Attributes:
        store: Where the state lives, credentials redacted (e.g. `'redis://127.0.0.1:6379/0'`).

    Example:
        >>> str(StateError("redis://127.0.0.1:6379/0", "Connection refused"))
        'pool state at redis://127.0.0.1:6379/0: Connection refused'
    """

    def __init__(self, store: str, problem: str) -> None:
        super().__init__(f"pool state at {store}: {problem}")
        self.store = store
