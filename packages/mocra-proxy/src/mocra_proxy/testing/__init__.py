"""Real proxies and sites on 127.0.0.1 for tests: `ForwardProxy` and `OriginServer`.

Nothing here is used by the pool itself; it ships so that users (and mocra's own tests) can test code
that goes through proxies without mocks.
"""

from __future__ import annotations

from ._forward import ForwardProxy, Mode, Seen
from ._origin import OriginRequest, OriginServer

__all__ = ("ForwardProxy", "Mode", "OriginRequest", "OriginServer", "Seen")
