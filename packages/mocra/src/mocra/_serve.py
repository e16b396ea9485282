"""`mocra serve` (a node waiting for jobs) and `mocra run --api` (a run with the admin API beside it).

Both run a `JobNode`: jobs made by `job_builder` from the spiders of a file, the settings (`-c`, `MOCRA_*`,
`-s`, options) and the `-o` outputs, where `{job}` stands for each job's name.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
import threading
from typing import TYPE_CHECKING, Any

from mocra_core import ConfigError

from ._run import load_spiders, make_sinks
from ._settings_args import add_settings_arguments

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

    from mocra_core import CrawlResult, DataSink, MocraBuilder, Settings
    from mocra_core.modules import Module, Spider

    from ._progress import ProgressDisplay

__all__ = ("add_serve_command", "job_sinks", "run_with_api")

_JOB_IN_PATH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def job_sinks(
    outputs: Sequence[str],
    *,
    table: str | None = None,
    key: Sequence[str] = (),
    continues: Callable[[Settings], bool],
    per_job: bool,
) -> Callable[[Settings, str], DataSink | None]:
    """The sink of a job from its settings and name: the `-o` outputs with `{job}` replaced by the name.

    With `per_job`, a file output must hold `{job}` (jobs side by side do not share a file).

    Raises:
        ConfigError: (when called) `{job}` is missing, or the job's name cannot be part of a file name.

    Example:
        >>> from mocra_core import Settings
        >>> sinks = job_sinks(["items-{job}.jsonl"], continues=lambda s: False, per_job=True)
        >>> sinks(Settings(), "books")
        JsonlSink('items-books.jsonl')
    """

    def sink(settings: Settings, job: str) -> DataSink | None:
        files = [output for output in outputs if "://" not in output]
        if per_job and any("{job}" not in output for output in files):
            raise ConfigError(
                "--output", "jobs run side by side here: put {job} in each file name (-o items-{job}.jsonl)"
            )
        if any("{job}" in output for output in outputs) and not _JOB_IN_PATH.fullmatch(job):
            raise ConfigError("job", f"{job!r} cannot be part of a file name: use letters, digits, . _ + -")
        named = [output.replace("{job}", job) for output in outputs]
        return make_sinks(named, append=continues(settings), table=table, key=key)

    return sink


def _listening(url: str) -> None:
    sys.stderr.write(f"admin API on {url} (dashboard at {url}/)\n")
    sys.stderr.flush()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread() and sys.platform != "win32"


def run_with_api(
    builder: MocraBuilder,
    spiders: Sequence[Spider[Any] | Module[Any]],
    *,
    settings: Settings,
    sink: Callable[[Settings, str], DataSink | None],
    address: str,
    progress: ProgressDisplay,
) -> CrawlResult:
    """Run `builder`'s job with the admin API on `address`; `POST /api/v1/jobs` may start more of `spiders`.

    Returns once every job has ended (Ctrl-C drains them all); the result is the first job's.
    """
    import anyio

    from mocra_core.admin import JobNode

    node = JobNode(spiders, settings=settings, sink=sink, registry=builder.job_registry)
    run = functools.partial(
        node.run,
        address,
        first=builder,
        progress=progress.update,
        until_idle=True,
        handle_signals=_main_thread(),
        on_listening=_listening,
    )
    result = anyio.run(run)
    assert result is not None
    return result


def _cmd_serve(args: argparse.Namespace) -> int:
    import anyio

    from mocra_core.admin import JobNode
    from mocra_core.config import load

    from ._cli import _continues

    flags = [(f"--queue {args.queue}", "queue.url", args.queue)] if args.queue else []
    settings = load(args.config, overrides=args.set, flags=flags)
    if not args.verbose:  # -v / -vv win over the `log_level` setting
        logging.getLogger().setLevel(settings.log_level)
    spiders = load_spiders(args.path, names=args.spider)
    key = [field for text in args.key for field in text.split(",") if field]
    sink = job_sinks(args.output, table=args.table, key=key, continues=_continues, per_job=True)
    sink(settings, "check")  # an output without {job} or of an unknown format fails now (sinks open lazily)
    node = JobNode(spiders, settings=settings, sink=sink)
    names = ", ".join(node.spiders())
    sys.stderr.write(f"mocra serve: {names}; POST /api/v1/jobs starts a job, Ctrl-C drains and stops\n")
    run = functools.partial(node.run, args.api, handle_signals=_main_thread(), on_listening=_listening)
    anyio.run(run)
    for job, outcome in node.results.items():
        if isinstance(outcome, BaseException):
            sys.stdout.write(f"{job}: failed: {outcome}\n")
        else:
            s = outcome.stats
            sys.stdout.write(f"{job}: {outcome.reason}: {s.responses} pages, {s.items} items\n")
    return 0


def add_api_argument(parser: argparse.ArgumentParser, *, default: str | None) -> None:
    """The `--api HOST:PORT` option."""
    where = f" (default {default})" if default else ""
    parser.add_argument(
        "--api",
        metavar="HOST:PORT",
        default=default,
        help=f"serve the admin API and dashboard here{where}; 127.0.0.1 unless 0.0.0.0:PORT is given "
        "(mocra[dashboard]; writes need a key: [admin] keys or MOCRA_ADMIN_KEYS)",
    )


def add_serve_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `mocra serve`."""
    serve = commands.add_parser(
        "serve",
        help="a long-running node: the admin API starts jobs of the spiders of a file",
        description='Serve the admin API and dashboard; POST /api/v1/jobs {"spider": NAME, "job": NAME, '
        '"settings": {...}, "start_urls": [...]} starts a job, as `mocra run` would. Jobs run side by '
        "side; Ctrl-C drains them and stops.",
    )
    serve.add_argument("path", help="a .py file defining one or more Spider or Module subclasses")
    add_api_argument(serve, default="127.0.0.1:12800")
    serve.add_argument(
        "-o",
        "--output",
        action="append",
        default=[],
        help="each job's items go here; {job} stands for the job's name (-o items-{job}.jsonl), or a "
        "database URL (repeatable)",
    )
    serve.add_argument("--table", help="with a database output: the table (default items)")
    serve.add_argument(
        "--key", action="append", default=[], metavar="FIELD", help="with a database output: the key field(s)"
    )
    add_settings_arguments(serve)
    serve.add_argument("--queue", metavar="URL", help="the jobs' broker: redis://…, nats://… or kafka://…")
    serve.add_argument(
        "--spider", action="append", help="offer only the spider or module with this name (repeatable)"
    )
    serve.set_defaults(func=_cmd_serve)
