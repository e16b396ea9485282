"""`JobDir`: the on-disk state of a resumable crawl (`--job-dir`): queues, seen set, coordination, stats."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

import msgspec

from .._errors import ConfigError
from ..backends.lmdb._lockfile import LockFile
from ..backends.lmdb._state import StateStore
from ..observe import StatsSnapshot

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..observe import Stats

__all__ = ("JobDir",)

_STATS = b"stats"  # the job's counts, per-domain counts included: saved once a second and at the end
_COUNTS = b"counts"  # the same but the per-domain counts: saved after every ack too


class JobDir:
    """A directory holding everything a crawl needs to resume after Ctrl-C or `kill -9`.

    - `queue/`: every stage's queue (LMDB); leases held by a dead process come back on open.
    - `seen/`: the fingerprints already admitted (LMDB).
    - `coordination/`: gates, stop signals and fan-in bookkeeping of module runs (LMDB).
    - `state/`: the job's stats (LMDB), kept here.

    The first three are backends of the run's `BackendPlan`, which opens them.

    Writes are not fsynced (`sync=False`): they survive the process being killed, not a power cut. The
    job's counts are saved after every ack (`save_counts`), so a kill loses only those of the work then
    in flight, which the next run does again and counts; per-domain counts and crawl time are saved once
    a second (`save_stats`).
    """

    def __init__(self, path: str | pathlib.Path) -> None:
        self.path = pathlib.Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError("crawl.job_dir", f"cannot create {str(self.path)!r}: {exc}") from None
        self._state = StateStore(self.path / "state")

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

    def running_pid(self) -> str | None:
        """The pid of the process running the job (holding its queue), or None when none does."""
        return LockFile.holder(str(self.path / "queue"))

    def load_stats(self) -> StatsSnapshot | None:
        """The job's stats as its last run saved them, if any: its counts, with the per-domain ones."""
        full, counts = self._state.get(_STATS, _COUNTS)
        stats = None if full is None else msgspec.msgpack.decode(full, type=StatsSnapshot)
        if counts is None:  # none saved yet, or by an older mocra
            return stats
        domains = {} if stats is None else stats.domains  # they may lag the counts by a second
        return msgspec.structs.replace(msgspec.msgpack.decode(counts, type=StatsSnapshot), domains=domains)

    def save_stats(self, snapshot: StatsSnapshot) -> None:
        """Persist the job's stats, per-domain counts included (called once a second and at the end)."""
        counts = msgspec.structs.replace(snapshot, domains={})
        self._state.put({_STATS: msgspec.msgpack.encode(snapshot), _COUNTS: msgspec.msgpack.encode(counts)})

    def save_counts(self, snapshot: StatsSnapshot) -> None:
        """Persist the job's counts but the per-domain ones (cheap: called after every ack)."""
        self._state.put({_COUNTS: msgspec.msgpack.encode(snapshot)})

    def counts_saver(self, stats: Stats) -> Callable[[], None]:
        """A function saving the job's counts as `stats` has them (`save_counts`), for after each ack."""
        return lambda: self.save_counts(stats.job_snapshot(domains=False))

    def close(self) -> None:
        """Close the state database."""
        self._state.close()
