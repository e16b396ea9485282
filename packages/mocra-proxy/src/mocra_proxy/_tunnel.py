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
    state share sessions), each with `Proxy.session` set. When the pool evicts a session's proxy, the
    source gives a new session in its place (`evicted`). With `sessions=0` it gives the gateway itself:
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
        self._gateway, self._format, self._prefix = gateway, session_format, session_prefix
        if not sessions:
            self._proxies: list[Proxy] = [gateway]
            return
        self._proxies = [self._session(number) for number in range(sessions)]

    async def fetch(self) -> Sequence[Proxy]:
        """The session proxies (or the gateway alone): the same ones until one is evicted."""
        return tuple(self._proxies)

    def evicted(self, proxy: Proxy) -> None:
        """Replace an evicted session by a new one: session `n` becomes `n + sessions` (the next fetch).

        The pool calls this when it evicts one of this source's proxies (or sees it evicted in shared
        state), so every process sharing the state moves to the same new session. The gateway alone
        (`sessions=0`) has nothing to replace.
        """
        for slot, current in enumerate(self._proxies):
            if current.id == proxy.id and current.session is not None:
                number = int(current.session.removeprefix(self._prefix)) + len(self._proxies)
                self._proxies[slot] = self._session(number)
                return

    def _session(self, number: int) -> Proxy:
        session = f"{self._prefix}{number}"
        try:
            username = self._format.format(username=self._gateway.username, session=session)
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"session_format {self._format!r}: only {{username}} and {{session}} may appear ({exc!r})"
            ) from None
        return msgspec.structs.replace(self._gateway, username=username, session=session)

    def __repr__(self) -> str:
        return f"TunnelSource(name={self.name!r}, proxies={len(self._proxies)})"
