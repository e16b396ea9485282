"""`CollectionCalls`: the counters, lists and sets of a control plane, one replicated command per call.

Both planes inherit these calls; each provides `propose` (commit one command, return the machine's
result) and `_view` (run a read on its machine).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

from ._checks import check_name
from ._commands import AddIfAbsent, Append, Incr
from ._errors import Refused
from ._machine import parse_counter

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ._commands import Command
    from ._machine import Result, StateMachine

__all__ = ("CollectionCalls",)

T = TypeVar("T")

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_HOLDS_LIST, _HOLDS_VALUE = "holds a list, not a value", "holds a value, not a list"


class _Plane(Protocol):
    _clock: Callable[[], float]

    async def propose(self, command: Command) -> Result: ...

    async def _view(self, read: Callable[[StateMachine], T]) -> T: ...


def _why_not_incremented(machine: StateMachine, key: str, delta: int, now: float) -> str:
    if machine.items(key, now):
        return _HOLDS_LIST
    value = machine.get(key, now)
    current = 0 if value is None else parse_counter(value)
    if current is None:
        return f"holds {(value or b'')[:40]!r}, not a counter"
    return f"counter overflow: {current} + {delta} leaves the signed 64-bit range"


class CollectionCalls:
    """Counters, lists and sets: `incr`, `append`, `items`, `add_if_absent`, `set_contains`, `set_size`.

    A key holds a value or a list (one name space, as `get`/`set`/`delete` see it): `set` replaces
    either kind, `delete` removes either, `compare_and_set` never touches a list (it returns False).
    Sets have a name space of their own and never expire.
    """

    async def incr(self: _Plane, key: str, delta: int = 1) -> int:
        """Add `delta` to the counter `key` (missing or expired: 0) and return the new value.

        A counter is a value holding a base-10 ASCII integer (`get` reads `b"42"`) in the signed 64-bit
        range; `incr` keeps its expiry, and one it creates never expires.

        Raises:
            Refused: `key` holds a list, a value that is not a counter, or the sum leaves the signed
                64-bit range; nothing changed.
            ValueError: `delta` is not an int in the signed 64-bit range.
        """
        check_name("key", key)
        if isinstance(delta, bool) or not isinstance(delta, int) or not _INT64_MIN <= delta <= _INT64_MAX:
            raise ValueError(f"delta must be an int in the signed 64-bit range, got {delta!r}")
        now = self._clock()
        result = await self.propose(Incr(key=key, delta=delta, now=now))
        if result is None:
            raise Refused(key, await self._view(lambda m: _why_not_incremented(m, key, delta, now)))
        return int(result)

    async def append(self: _Plane, key: str, value: bytes) -> int:
        """Append `value` to the list `key` (created if missing) and return its new length.

        Raises:
            Refused: `key` holds a live value; nothing changed.
        """
        result = await self.propose(Append(key=check_name("key", key), value=bytes(value), now=self._clock()))
        if result is None:
            raise Refused(key, _HOLDS_VALUE)
        return int(result)

    async def items(self: _Plane, key: str) -> list[bytes]:
        """Return the list `key` in append order (empty if missing).

        Raises:
            Refused: `key` holds a live value.
        """
        check_name("key", key)
        now = self._clock()
        found = await self._view(lambda machine: machine.items(key, now))
        if found is None:
            raise Refused(key, _HOLDS_VALUE)
        return found

    async def add_if_absent(self: _Plane, key: str, members: Sequence[bytes]) -> list[bool]:
        """Add `members` to the set `key`; return, per member, whether it was absent (now added).

        The whole batch is one command (one Raft log entry), so it is all-or-nothing; inside it only
        the first of duplicates is new.
        """
        check_name("key", key)
        batch = [bytes(member) for member in members]
        if not batch:
            return []
        mask = int(await self.propose(AddIfAbsent(key=key, members=batch)) or 0)
        bits = format(mask, "b")[::-1]
        return [index < len(bits) and bits[index] == "1" for index in range(len(batch))]

    async def set_contains(self: _Plane, key: str, member: bytes) -> bool:
        """Return whether `member` was added to the set `key`."""
        check_name("key", key)
        return await self._view(lambda machine: machine.set_contains(key, bytes(member)))

    async def set_size(self: _Plane, key: str) -> int:
        """Return how many members the set `key` holds."""
        check_name("key", key)
        return await self._view(lambda machine: machine.set_size(key))
