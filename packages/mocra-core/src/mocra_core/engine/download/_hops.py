"""`HopGuard`: a download's redirect hops checked as a follow is — scope, robots.txt, then the seen set."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, cast

from ..._errors import HopRefused
from ...download._protocol import Hop, checks_hops
from ...http._url import fingerprint
from .._frontier import seen_key, seen_scope

if TYPE_CHECKING:
    from ...dedup import SeenSet
    from ...download import Downloader, RobotsPolicy
    from ...download._protocol import HopCheckingDownloader
    from ...http import Request, Response, Routing
    from ...modules import CompiledModule

__all__ = ("HopGuard",)


class HopGuard:
    """Downloads a request with each redirect hop checked against the scope, robots.txt and the seen set.

    A hop is refused (the download raises `HopRefused`, which the download stage counts as a drop) when its
    target is out of the module's scope (`"offsite"`: relative to the request's URL, as a follow is to its
    page; a seed's hops, at depth 0, only to the scope's `allowed_domains`, so `http://example.com` may land
    on `https://www.example.com`), when robots.txt disallows its target (`"robots"`), or when its target's
    canonical fingerprint is already in the seen set, in the request's dedup scope (`"duplicate"`). A hop let
    through marks its target seen, in the same set the frontier uses, so a later link to it is dropped as a
    duplicate.

    A retried or redelivered request re-reaches the targets its first attempt marked seen; that must not read
    as a duplicate, or the page would be lost. So each hop also records a claim, "this request (its scoped
    fingerprint) reached this target", in the same seen-set batch as the target itself. A target already seen
    is refused only if the claim is new: another request got there first. The claim lives in the seen set, so
    it holds across workers and restarts as the seen keys do. The price: a request whose hop was refused,
    redelivered after a crash before it was acknowledged, fetches that target once more (a rare duplicate
    fetch, never a loss). A hop back to a URL of the same chain (the request's own URL after a cookie-setting
    bounce) is never a duplicate; loops are the downloader's to catch. `dont_filter` requests mark their
    targets seen but are never refused as duplicates.

    A downloader without the hook (see `checks_hops`) is checked after the fact on its final
    `Response.url`: the page was fetched, but a refused one is not parsed (its bytes are counted).
    """

    def __init__(self, seen: SeenSet | None, robots: RobotsPolicy | None) -> None:
        self._seen = seen
        self._robots = robots

    async def download(
        self, downloader: Downloader, request: Request, routing: Routing, module: CompiledModule
    ) -> Response:
        """Download `request` with `downloader`, refusing hops (`HopRefused`) as the class notes say.

        `routing` and `module` name the request's dedup scope.
        """
        if (
            self._seen is None
            and self._robots is None
            and module.scope.admits_everything(_origin(request, routing))
        ):
            return await downloader.download(request)
        check = _Chain(self._seen, self._robots, request, (module, routing)).check
        if checks_hops(downloader):
            return await cast("HopCheckingDownloader", downloader).download(request, hop=check)
        response = await downloader.download(request)
        if response.url != request.url:  # the intermediate hops are unknown: check where it landed
            method = "HEAD" if request.method == "HEAD" else "GET"  # as most redirects of a page end
            refused = await check(Hop(response.url, method, None, 0))
            if refused is not None:
                raise HopRefused(response.url, refused, request=request, received=len(response.body))
        return response


class _Chain:
    """The hop check of one download: remembers the chain's own seen keys."""

    __slots__ = ("_keys", "_request", "_robots", "_route", "_scope", "_seen")

    def __init__(
        self,
        seen: SeenSet | None,
        robots: RobotsPolicy | None,
        request: Request,
        route: tuple[CompiledModule, Routing],
    ) -> None:
        self._seen = seen
        self._robots = robots
        self._request = request
        self._route = route  # the dedup scope's parts; the scope is made at the first hop (most have none)
        self._scope = ""
        self._keys: list[bytes] = []  # the own key first, made at the first hop (most have none)

    async def check(self, hop: Hop) -> str | None:
        module, routing = self._route
        if not self._request.dont_filter and not module.scope.allows(
            hop.url, origin=_origin(self._request, routing)
        ):
            return "offsite"
        if self._robots is not None and not await self._robots.allows(hop.url):
            return "robots"
        if self._seen is None:
            return None
        keys = self._keys
        if not keys:
            self._scope = seen_scope(*self._route)
            keys.append(seen_key(self._request.fingerprint, self._scope))
        key = seen_key(fingerprint(hop.method, hop.url, hop.body), self._scope)
        if key in keys:
            return None
        keys.append(key)
        fresh, first_claim = await self._seen.add_if_absent([key, _claim_key(keys[0], key)])
        if fresh or not first_claim or self._request.dont_filter:
            return None
        return "duplicate"


def _origin(request: Request, routing: Routing) -> str | None:
    """What a hop of `request` is scoped against: its URL, or nothing for a seed (depth 0)."""
    return request.url if routing.depth > 0 else None


def _claim_key(request_key: bytes, target_key: bytes) -> bytes:
    """The seen-set key of "the request with `request_key` reached `target_key`" (16 bytes)."""
    return hashlib.blake2b(target_key, digest_size=16, key=request_key, person=b"mocra-hop").digest()
