"""`ClusterSeenSet`: the seen set of a job on a `mocra_cluster` control plane, one command per batch."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mocra_cluster import ClusterError, ClusterUnavailable, NoQuorum

from ...dedup._errors import SeenSetError
from ...dedup._seen_set import check_fingerprints

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mocra_cluster import ControlPlane

__all__ = ("ClusterSeenSet",)

logger = logging.getLogger(__name__)

_ATTEMPTS = 3


class ClusterSeenSet:
    """Fingerprints in a set of the control plane: a whole batch is one `AddIfAbsent` command.

    On Raft that is one log entry (one majority round trip) per batch, whatever its size. The set is
    shared by every node of the cluster, kept in the replicated state (and its snapshots), and never
    forgets.

    **Unknown outcomes.** When the leader changes while it holds a batch, the plane cannot tell whether
    the batch was applied; the batch is proposed again and, since the first try may have recorded it,
    every first occurrence in it is answered new: a few URLs may be crawled twice, none is lost. Without
    a quorum (or after three tries) `add_if_absent` raises `SeenSetError`.

    Args:
        plane: The control plane (it belongs to its owner: `aclose` leaves it open).
        key: The name of the set in the plane (one per job).

    Example:
        >>> import anyio, tempfile
        >>> from mocra_cluster import LocalControlPlane
        >>> async def main(path):
        ...     async with LocalControlPlane(path, sync=False) as plane:
        ...         seen = ClusterSeenSet(plane, key="job-1/seen")
        ...         return await seen.add_if_absent([b"a" * 16, b"a" * 16, b"b" * 16]), await seen.count()
        >>> with tempfile.TemporaryDirectory() as path:
        ...     anyio.run(main, path)
        ([True, False, True], 2)
    """

    def __init__(self, plane: ControlPlane, *, key: str = "seen") -> None:
        self._plane = plane
        self._key = key

    async def add_if_absent(self, fingerprints: Sequence[bytes]) -> list[bool]:
        """Add the fingerprints in one command; return, per fingerprint, whether it was new."""
        check_fingerprints(fingerprints)
        if not fingerprints:
            return []
        uncertain: ClusterUnavailable | None = None
        for _ in range(_ATTEMPTS):
            try:
                answers = await self._plane.add_if_absent(self._key, fingerprints)
            except NoQuorum as exc:
                raise SeenSetError(self._key, f"no quorum: {exc}") from exc
            except ClusterUnavailable as exc:  # the outcome is unknown: propose it again
                logger.warning("seen set %s: batch outcome unknown (%s); proposing it again", self._key, exc)
                uncertain = exc
                continue
            except ClusterError as exc:
                raise SeenSetError(self._key, str(exc)) from exc
            if uncertain is None:
                return answers
            return _first_occurrences(fingerprints)
        raise SeenSetError(self._key, f"batch not committed after {_ATTEMPTS} tries: {uncertain}")

    async def contains(self, fingerprint: bytes) -> bool:
        """Return whether `fingerprint` was added (a local read)."""
        check_fingerprints([fingerprint])
        try:
            return await self._plane.set_contains(self._key, fingerprint)
        except ClusterError as exc:
            raise SeenSetError(self._key, str(exc)) from exc

    async def count(self) -> int:
        """Return how many distinct fingerprints were added."""
        try:
            return await self._plane.set_size(self._key)
        except ClusterError as exc:
            raise SeenSetError(self._key, str(exc)) from exc

    async def aclose(self) -> None:
        """Nothing to release: the plane belongs to its owner."""

    async def __aenter__(self) -> ClusterSeenSet:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _first_occurrences(fingerprints: Sequence[bytes]) -> list[bool]:
    seen: set[bytes] = set()
    answers = []
    for fingerprint in fingerprints:
        answers.append(fingerprint not in seen)
        seen.add(fingerprint)
    return answers
