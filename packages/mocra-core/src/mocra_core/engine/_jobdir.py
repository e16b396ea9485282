"""`JobDir`: the on-disk state of a resumable crawl (`--job-dir`): queues, seen set, coordination, stats."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

import lmdb
import msgspec

from .._errors import ConfigError
from ..coordination import LmdbCoordination
from ..dedup import LmdbSeenSet
from ..observe import StatsSnapshot
from ..queue import LmdbQueue
from ._codec import EngineCodec

if TYPE_CHECKING:
    from ..config import QueueSettings

__all__ = ("JobDir",)

_STATS = b"stats"


class JobDir:
    """A directory holding everything a crawl needs to resume after Ctrl-C or `kill -9`.

    - `queue/`: every stage's queue (LMDB); leases held by a dead process come back on open.
    - `seen/`: the fingerprints already admitted (LMDB).
    - `coordination/`: gates, stop signals and fan-in bookkeeping of module runs (LMDB).
    - `state/`: stats (LMDB).

    Writes are not fsynced (`sync=False`): they survive the process being killed, not a power cut.
    """

    def __init__(self, path: str | pathlib.Path) -> None:
        self.path = pathlib.Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError("crawl.job_dir", f"cannot create {str(self.path)!r}: {exc}") from None
        self._state: lmdb.Environment | None = None

    @property
    def is_resumed(self) -> bool:
        """True when this directory already holds state from an earlier run."""
        return self.holds_state(self.path)

    @staticmethod
    def holds_state(path: str | pathlib.Path) -> bool:
        """True when `path` holds crawl state from an earlier run (it is not created).

        Example:
            >>> JobDir.holds_state("/nonexistent/job")
            False
        """
        return (pathlib.Path(path) / "state").exists()

    def open_queue(self, settings: QueueSettings) -> LmdbQueue:
        """The durable queue for every topic of the engine."""
        return LmdbQueue(
            str(self.path / "queue"),
            codec=EngineCodec(),
            visibility_timeout=settings.visibility_timeout,
            max_attempts=settings.max_attempts,
        )

    def open_coordination(self) -> LmdbCoordination:
        """The durable coordination store (gates, stop signals, fan-in bookkeeping)."""
        return LmdbCoordination(str(self.path / "coordination"))

    def open_seen(self) -> LmdbSeenSet:
        """The durable seen set."""
        return LmdbSeenSet(str(self.path / "seen"))

    def _env(self) -> lmdb.Environment:
        if self._state is None:
            self._state = lmdb.open(
                str(self.path / "state"), map_size=64 << 20, sync=False, metasync=False, max_dbs=0
            )
        return self._state

    def load_stats(self) -> StatsSnapshot | None:
        """The stats saved by the previous run, if any."""
        with self._env().begin() as txn:
            raw = txn.get(_STATS)
        return None if raw is None else msgspec.msgpack.decode(raw, type=StatsSnapshot)

    def save_stats(self, snapshot: StatsSnapshot) -> None:
        """Persist the stats (called periodically and at the end)."""
        with self._env().begin(write=True) as txn:
            txn.put(_STATS, msgspec.msgpack.encode(snapshot))

    def close(self) -> None:
        """Close the state database."""
        if self._state is not None:
            self._state.close()
            self._state = None
