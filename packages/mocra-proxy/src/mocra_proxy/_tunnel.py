"""`TunnelSource`: one gateway that rotates its exit, with sticky sessions named in the username."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ._proxy import Proxy

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("TunnelSource",)


class TunnelSource:
    """A rotating gateway (Bright Data, Oxylabs, Smartproxy style) seen as `sessions` sticky proxies.

    Such a gateway picks a new exit per request, unless the username names a session: then the exit stays
    the same for that session. With `sessions=N` the source gives N proxies differing only by the session
    id put in the username by `session_format` (keys `{username}` and `{session}`; session ids are
    `"{session_prefix}0"` … `"{session_prefix}N-1"`, the same in every process, so workers sharing pool
    state share sessions), each with `Proxy.session` set. With `sessions=0` it gives the gateway itself:
    one proxy whose exit rotates per request.

    Args:
        gateway_url: The gateway, `scheme://user:pass@host:port`.
        sessions: How many sticky sessions (0: none, rotate per request).
        session_format: The username for a session, e.g. `"{username}-session-{session}"` (Bright Data),
            `"customer-{username}-sessid-{session}"` (Oxylabs).
        session_prefix: Put before the session number (a job name keeps jobs' sessions apart).
        tier: Cost tier of its proxies.
        name: The source's name (`Proxy.source`).
        weight: Order among sources when the pool refills (higher first).

    Example:
        >>> import anyio
        >>> source = TunnelSource("http://cust:pw@gw.example.net:22225", sessions=2, session_prefix="job")
        >>> [(p.redacted, p.session) for p in anyio.run(source.fetch)]
        [('http://cust-session-job0:***@gw.example.net:22225', 'job0'), \
('http://cust-session-job1:***@gw.example.net:22225', 'job1')]
    """

    def __init__(
        self,
        gateway_url: str,
        *,
        sessions: int = 0,
        session_format: str = "{username}-session-{session}",
        session_prefix: str = "",
        tier: int = 0,
        name: str = "tunnel",
        weight: float = 1.0,
    ) -> None:
        if sessions < 0:
            raise ValueError(f"sessions must be 0 or more, got {sessions}")
        if sessions and "{session}" not in session_format:
            raise ValueError(f"session_format {session_format!r} has no {{session}}")
        self.name = name
        self.weight = weight
        gateway = Proxy.parse(gateway_url, tier=tier, source=name)
        if not sessions:
            self._proxies: tuple[Proxy, ...] = (gateway,)
            return
        proxies = []
        for number in range(sessions):
            session = f"{session_prefix}{number}"
            try:
                username = session_format.format(username=gateway.username, session=session)
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(
                    f"session_format {session_format!r}: only {{username}} and {{session}} may appear "
                    f"({exc!r})"
                ) from None
            proxies.append(msgspec.structs.replace(gateway, username=username, session=session))
        self._proxies = tuple(proxies)

    async def fetch(self) -> Sequence[Proxy]:
        """The session proxies (or the gateway alone), the same on every call."""
        return self._proxies

    def __repr__(self) -> str:
        return f"TunnelSource(name={self.name!r}, proxies={len(self._proxies)})"
