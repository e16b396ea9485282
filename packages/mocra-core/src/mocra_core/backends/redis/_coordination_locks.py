"""`RedisLocks`: the fenced locks and the leader lease of a `RedisCoordination`.

A lock is the hash `{namespace}:l:{name}` (`h` holder, `t` token, `e` expiry); tokens come from the
counter `{namespace}:fence` (`INCR`), so they increase across all locks and all clients. The leader
lease is the reserved lock `__leader__`, taken or renewed by `is_leader` (see `RedisCoordination`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...coordination._protocol import LEADER_LOCK
from ._coordination_lua import ACQUIRE, RELEASE, RENEW

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from redis.asyncio import Redis
    from redis.commands.core import AsyncScript

__all__ = ("RedisLocks",)


class RedisLocks:
    """Takes, renews and frees locks by their Redis key; holds this client's leader lease.

    Args:
        redis: The client the scripts are registered on.
        namespace: Prefix of the keys.
        clock: Judges expiry, in epoch seconds.
        run: Runs a script with keys and arguments (the coordination's: checks it is open, maps errors).
    """

    __slots__ = ("_acquire", "_clock", "_fence", "_leader", "_release", "_renew", "_run", "prefix")

    def __init__(
        self,
        redis: Redis,
        namespace: str,
        clock: Callable[[], float],
        run: Callable[[AsyncScript, Sequence[bytes], Sequence[object]], Awaitable[Any]],
    ) -> None:
        self.prefix = f"{namespace}:l:".encode()
        """Prefix of every lock's key."""
        self._fence = f"{namespace}:fence".encode()
        self._clock = clock
        self._run = run
        self._acquire = redis.register_script(ACQUIRE)
        self._renew = redis.register_script(RENEW)
        self._release = redis.register_script(RELEASE)
        self._leader: tuple[int, float] | None = None  # token, deadline of the leader lease we hold

    async def take(self, lk: bytes, holder: str, ttl: float) -> tuple[int, float] | None:
        """A new fencing token and the grant's deadline if the lock is free, expired or `holder`'s."""
        now = self._clock()
        token = await self._run(self._acquire, [lk, self._fence], [now, now + ttl, holder])
        return None if token is None else (int(token), now + ttl)

    async def extend(self, lk: bytes, holder: str, token: int, ttl: float) -> float | None:
        """The new deadline if the lock's latest grant is `(holder, token)`, else None."""
        deadline = self._clock() + ttl
        return deadline if await self._run(self._renew, [lk], [holder, token, deadline]) else None

    async def release(self, lk: bytes, holder: str, token: int) -> bool:
        """Free the lock if its latest grant is `(holder, token)`."""
        return bool(await self._run(self._release, [lk], [holder, token]))

    def holds_lease(self, leader_ttl: float) -> bool:
        """Whether the leader lease held has more than half of `leader_ttl` left (no call needed)."""
        held = self._leader
        return held is not None and held[1] - self._clock() > leader_ttl / 2

    async def lead(self, holder: str, ttl: float) -> bool:
        """Renew the leader lease held, else take it; whether `holder` holds it now."""
        held, lk = self._leader, self.prefix + LEADER_LOCK.encode()
        self._leader = None
        if held is not None:
            deadline = await self.extend(lk, holder, held[0], ttl)
            if deadline is not None:
                self._leader = (held[0], deadline)
                return True
        self._leader = await self.take(lk, holder, ttl)
        return self._leader is not None

    async def step_down(self, holder: str) -> None:
        """Give up the leader lease if held (its holder is `holder`)."""
        held, self._leader = self._leader, None
        if held is not None:
            await self._run(self._release, [self.prefix + LEADER_LOCK.encode()], [holder, held[0]])
