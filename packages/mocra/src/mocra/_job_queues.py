"""Where a job's queues are, for the commands that look into a job (`mocra dlq`, `mocra status`).

A job's queues are in its job dir (`--job-dir DIR`, one process) or on the broker its workers share
(`--queue URL --job NAME`); `JobDirQueues` and `BrokerQueues` open each. Its topics (`job_topics`) are
the stages' and one response topic per module, known from the module names the job recorded in its
coordination store at its first run.
"""

from __future__ import annotations

import contextlib
import pathlib
from typing import TYPE_CHECKING, Protocol

from mocra_core import ConfigError, redact
from mocra_core.engine import BackendPlan, JobDir, read_job_counts, recorded_modules
from mocra_core.topics import STAGES, run_topics

from ._settings_args import add_settings_arguments

if TYPE_CHECKING:
    import argparse
    from collections.abc import AsyncIterator, Sequence

    from mocra_core import Settings
    from mocra_core.observe import StatsSnapshot
    from mocra_core.queue import DeadLetter, QueueBackend

__all__ = (
    "TOPICS",
    "BrokerQueues",
    "JobDirQueues",
    "JobQueues",
    "QueueView",
    "add_job_arguments",
    "job_queues",
    "job_topics",
    "unknown_modules_note",
)

TOPICS = STAGES
"""The stage queues (`mocra dlq replay --topic`): `response` stands for every module's response topic."""


class QueueView(Protocol):
    """What reading a job's queues needs: their dead letters and pending counts."""

    async def dead_letters(self, topic: str, *, limit: int = 100) -> Sequence[DeadLetter]:
        """Up to `limit` dead letters of `topic`, oldest first."""
        ...

    async def pending(self, topic: str) -> int:
        """Messages of `topic` ready, delayed or leased."""
        ...


class JobQueues(Protocol):
    """Where the queues of a job are."""

    def open(self) -> contextlib.AbstractAsyncContextManager[QueueBackend]:
        """Open the job's queues to change them (an async context manager)."""
        ...

    def read(self) -> contextlib.AbstractAsyncContextManager[QueueView]:
        """Open the job's queues to read them, also while the job runs."""
        ...

    async def counts(self) -> StatsSnapshot | None:
        """The job's counts so far (all its runs and workers), or None when none were saved."""
        ...

    async def modules(self) -> list[str] | None:
        """The names of the job's modules (recorded at its first run); None when they are out of reach."""
        ...

    def rerun(self) -> str:
        """How to have the replayed messages processed."""
        ...

    def __str__(self) -> str:
        """The job, for people: its dir, or its name and broker."""
        ...


class JobDirQueues:
    """The queues of a `mocra run --job-dir DIR` job, in its LMDB files."""

    def __init__(self, path: str) -> None:
        self.path = path

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[QueueBackend]:
        """Open the job dir's queues to change them.

        Raises:
            ConfigError: `path` holds no crawl state, or its job is running: its process owns the queues
                (and holds their state in memory), so they change only once it has ended.
        """
        job = self._job()
        try:
            pid = job.running_pid()
            if pid is not None:
                raise ConfigError(
                    "--job-dir",
                    f"the job is running (process {pid}) and its queues change only when it has ended: "
                    "stop it (Ctrl-C) and run this again; `mocra dlq list` and `mocra status` work while "
                    "it runs",
                    source=self.path,
                )
            async with BackendPlan.of_job_dir(self.path).make_queue() as queue:
                yield queue
        finally:
            job.close()

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[QueueView]:
        """Read the job dir's queues, also while its job runs; `ConfigError` when there is no crawl state."""
        job = self._job()
        try:
            async with BackendPlan.of_job_dir(self.path).read_queue() as queue:
                yield queue
        finally:
            job.close()

    def _job(self) -> JobDir:
        if not JobDir.holds_state(self.path):
            raise ConfigError(
                "--job-dir", "holds no crawl state (run `mocra run ... --job-dir` first)", source=self.path
            )
        return JobDir(self.path)

    async def counts(self) -> StatsSnapshot | None:
        """The counts its runs saved in the job dir (also while the job runs)."""
        job = self._job()
        try:
            return job.load_stats()
        finally:
            job.close()

    async def modules(self) -> list[str] | None:
        """The modules recorded in the job dir's coordination store (also while the job runs)."""
        self._job().close()
        if not (pathlib.Path(self.path) / "coordination").exists():  # nothing recorded: leave it so
            return []
        async with BackendPlan.of_job_dir(self.path).make_coordination() as coordination:
            return await recorded_modules(coordination)

    def rerun(self) -> str:
        return f"run the same `mocra run ... --job-dir {self.path}` to process them"

    def __str__(self) -> str:
        return f"job dir {self.path}"


class BrokerQueues:
    """The queues of a `mocra run --queue URL --job NAME` job, on its broker.

    Args:
        settings: The run's settings; `queue.url` names the broker, with its `[queue.*]` options.
        job: The job's name (`--job`; `mocra run` without it names the job after its spiders, joined by `+`).
    """

    def __init__(self, settings: Settings, job: str) -> None:
        if not BackendPlan.decide(settings, job=job, read_only=True).shared:
            problem = f"expected a broker URL (redis://, nats://, kafka://), got {settings.queue.url!r}"
            raise ConfigError("--queue", problem, source="command line")
        if not job:
            raise ConfigError(
                "--job",
                "name the job: the --job given to `mocra run` (default: its spider names, joined by '+')",
                source="command line",
            )
        self.settings = settings
        self.job = job

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[QueueBackend]:
        """Connect to the broker; raises `BackendUnavailable` naming the URL when it cannot be reached."""
        async with BackendPlan.decide(self.settings, job=self.job, read_only=True).make_queue() as queue:
            yield queue

    def read(self) -> contextlib.AbstractAsyncContextManager[QueueView]:
        """Connect to the broker (its queues are read as they are changed: through the backend)."""
        return self.open()

    async def counts(self) -> StatsSnapshot | None:
        """The counts the job's workers saved in its coordination store; None without a shared store."""
        try:
            return await read_job_counts(self.settings, self.job)
        except ConfigError:  # a NATS or Kafka queue and no coordination.url: the job has no shared counts
            return None

    async def modules(self) -> list[str] | None:
        """The modules recorded in the job's coordination store; None when the settings name none."""
        try:
            plan = BackendPlan.decide(self.settings, job=self.job, read_only=True)
            async with plan.make_coordination() as coordination:
                return await recorded_modules(coordination)
        except ConfigError:  # a NATS or Kafka queue and no coordination.url
            return None

    def rerun(self) -> str:
        return (
            f"the workers of job {self.job!r} process them; if none is running, start one "
            f"(`mocra run ... --queue ... --job {self.job}`)"
        )

    def __str__(self) -> str:
        return f"job {self.job!r} on {redact(self.settings.queue.url)}"


async def job_topics(queues: JobQueues) -> tuple[tuple[str, ...], bool]:
    """Every topic of the job (`mocra_core.topics.run_topics`), and whether its modules were known.

    Without them (a NATS or Kafka job read without its `coordination.url`), only the stages' topics.
    """
    modules = await queues.modules()
    return run_topics(modules or ()), modules is not None


def unknown_modules_note(queues: JobQueues) -> str:
    """What a command says when the job's modules, hence their response queues, are out of reach."""
    return (
        f"note: the modules of {queues} are unknown (its coordination store is not named: pass its "
        "coordination.url with -s or -c): their response queues are left out\n"
    )


def add_job_arguments(parser: argparse.ArgumentParser, *, api: str | None = None) -> None:
    """The options that name a job: `--job-dir DIR`, or `--queue URL --job NAME [-c FILE] [-s KEY=VALUE]`.

    With `api` (its help), `--api URL --job NAME` (a node's admin API) names one too.
    """
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--job-dir", help="the job dir given to `mocra run`")
    where.add_argument("--queue", metavar="URL", help="the broker given to `mocra run --queue`")
    if api is not None:
        where.add_argument("--api", metavar="URL", help=api)
    parser.add_argument("--job", metavar="NAME", help="with --queue: the job given to `mocra run --job`")
    add_settings_arguments(
        parser,
        set_help="with --queue: override a setting",
        config_help="with --queue: a TOML settings file ([queue.*] options)",
    )


def job_queues(args: argparse.Namespace) -> JobQueues:
    """The queues the options of `add_job_arguments` name."""
    if args.job_dir:
        return JobDirQueues(args.job_dir)
    from mocra_core.config import load

    settings = load(
        args.config, overrides=args.set, flags=[(f"--queue {args.queue}", "queue.url", args.queue)]
    )
    return BrokerQueues(settings, args.job or settings.crawl.job or "")
