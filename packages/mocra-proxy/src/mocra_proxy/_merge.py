"""How a stored record and an incoming one combine: the rules every `PoolState` applies on save.

Two pools may report the same proxy at once, each from its own (possibly a second old) copy. Taking
the last write would let a stale copy wipe out another pool's ban, so a save merges field by field.
`_redis_lua.py` applies the same rules inside Redis; the conformance suite holds the two together.
"""

from __future__ import annotations

import msgspec

from ._health import ProxyHealth
from ._tiers import DomainTier

__all__ = ("MAX_BANS", "merge_health", "merge_tier")

MAX_BANS = 64  # ban times kept per domain (the newest)


def merge_health(stored: ProxyHealth, incoming: ProxyHealth) -> ProxyHealth:
    """The record to keep when `incoming` is saved over `stored` (neither is changed).

    - Counts of successes and failures and `last_used` keep the higher value (two reports that raced
      from the same copy count once, never less).
    - A success (`consecutive_errors == 0`) at or after the stored `last_used` ends the stored errors,
      backoff and cooldown; an older success ends nothing.
    - A failure never lowers the error counts or shortens the cooldown: a ban is never lost.
    - `latency` is the newer record's; an eviction is for good.

    Example:
        >>> banned = ProxyHealth(failures=1, consecutive_errors=1, cooldowns=1, cooldown_until=130.0,
        ...                      last_used=100.0)
        >>> stale = ProxyHealth(failures=1, consecutive_errors=1, last_used=101.0)  # a 500, no ban
        >>> merge_health(banned, stale).cooldown_until
        130.0
        >>> merge_health(banned, ProxyHealth(successes=1, last_used=102.0)).cooldown_until
        0.0
    """
    newer = incoming.last_used >= stored.last_used
    if incoming.consecutive_errors == 0:
        state = incoming if newer else stored
        errors, cooldowns, until = state.consecutive_errors, state.cooldowns, state.cooldown_until
    else:
        errors = max(stored.consecutive_errors, incoming.consecutive_errors)
        cooldowns = max(stored.cooldowns, incoming.cooldowns)
        until = max(stored.cooldown_until, incoming.cooldown_until)
    return ProxyHealth(
        successes=max(stored.successes, incoming.successes),
        failures=max(stored.failures, incoming.failures),
        consecutive_errors=errors,
        cooldowns=cooldowns,
        cooldown_until=until,
        latency=incoming.latency if newer else stored.latency,
        last_used=max(stored.last_used, incoming.last_used),
        evicted=stored.evicted or incoming.evicted,
    )


def merge_tier(stored: DomainTier, incoming: DomainTier) -> DomainTier:
    """The tier record to keep when `incoming` is saved over `stored` (neither is changed).

    The record that got to its tier later wins (an escalation or a step down is news); at the same
    tier since the same time, the ban times of both are kept (the newest `MAX_BANS`).

    Example:
        >>> merge_tier(DomainTier(tier=0, since=5.0, bans=[6.0]), DomainTier(tier=0, since=5.0, bans=[7.0]))
        DomainTier(tier=0, since=5.0, bans=[6.0, 7.0])
    """
    if incoming.tier == stored.tier and incoming.since == stored.since:
        bans = sorted(set(stored.bans) | set(incoming.bans))[-MAX_BANS:]
        return DomainTier(tier=stored.tier, since=stored.since, bans=bans)
    chosen = incoming if incoming.since >= stored.since else stored
    return msgspec.structs.replace(chosen, bans=sorted(chosen.bans)[-MAX_BANS:])
