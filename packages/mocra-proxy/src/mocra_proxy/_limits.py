"""`Limits`: how hard one proxy (and one proxy on one domain) may be used; checked when a lease is taken."""

from __future__ import annotations

import msgspec

__all__ = ("Limits",)


class Limits(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Per-proxy and per-(proxy, domain) limits; `None` means no limit.

    A rate of `r` requests per second spaces leases `1/r` seconds apart (no bursts). Concurrency counts
    leases held at the same time. A lease that finds every proxy limited waits for the earliest one.

    Attributes:
        rate: Leases per second of one proxy.
        concurrency: Leases of one proxy held at once.
        domain_rate: Leases per second of one proxy for one domain.
        domain_concurrency: Leases of one proxy for one domain held at once.

    Example:
        >>> Limits(rate=2.0, concurrency=4)
        Limits(rate=2.0, concurrency=4, domain_rate=None, domain_concurrency=None)
    """

    rate: float | None = None
    concurrency: int | None = None
    domain_rate: float | None = None
    domain_concurrency: int | None = None

    def __post_init__(self) -> None:
        for name in ("rate", "concurrency", "domain_rate", "domain_concurrency"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"Limits.{name} must be positive or None, got {value!r}")
