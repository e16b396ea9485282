"""The `mocra` command line: run, new, check, serve, deploy, demo, dlq, status, cluster, store, version."""

from __future__ import annotations

import argparse
import functools
import logging
import sys
from importlib import metadata
from typing import TYPE_CHECKING

from mocra_core import MocraError

from ._check import add_check_command
from ._deploy import add_deploy_command
from ._job_queues import add_job_arguments
from ._new import add_new_command
from ._progress import ProgressDisplay, add_progress_arguments
from ._run import load_spiders, print_summary
from ._serve import add_api_argument, add_serve_command
from ._settings_args import add_settings_arguments
from ._shell import add_shell_command
from ._store_cli import add_store_commands

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mocra_core import Settings

__all__ = ("build_parser", "main")

logger = logging.getLogger("mocra")

_DISTRIBUTIONS = ("mocra", "mocra-core", "mocra-cluster", "mocra-dag", "mocra-proxy", "mocra-store")


def _installed_versions() -> list[tuple[str, str]]:
    found = []
    for dist in _DISTRIBUTIONS:
        try:
            found.append((dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            continue
    return found


def _cmd_version(_: argparse.Namespace) -> int:
    for dist, version in _installed_versions():
        sys.stdout.write(f"{dist} {version}\n")
    sys.stdout.write(f"python {sys.version.split()[0]}\n")
    return 0


def _settings(args: argparse.Namespace) -> Settings:
    from mocra_core.config import load

    flags = [  # the options that stand for a setting; an error names the option
        (f"{option} {value}", key, value)
        for option, key, value in (
            ("--queue", "queue.url", args.queue),
            ("--store", "store.url", args.store),
            ("--job", "crawl.job", args.job),
            ("--job-dir", "crawl.job_dir", args.job_dir),
        )
        if value
    ]
    settings = load(args.config, overrides=args.set, flags=flags)  # file, MOCRA_*, -s, options; checked once
    if not args.verbose:  # -v / -vv win over the `log_level` setting
        logging.getLogger().setLevel(settings.log_level)
    return settings


def _cmd_run(args: argparse.Namespace) -> int:
    from mocra_core.engine import job_builder

    from ._serve import job_sinks

    settings = _settings(args)
    spiders = load_spiders(args.path, names=args.spider)
    key = [field for text in args.key for field in text.split(",") if field]
    outputs = functools.partial(job_sinks, args.output, table=args.table, key=key, continues=_continues)
    builder = job_builder(spiders, settings=settings, sink=outputs(per_job=False))
    if args.reload:
        builder.reload(args.path)
    if args.cluster:
        from mocra_core.engine import cluster_from_env

        builder.cluster(cluster_from_env())  # MOCRA_NODE_ID, MOCRA_CLUSTER_ADDR, MOCRA_DATA_DIR, …
    with ProgressDisplay(sys.stderr, mode=args.progress, every=args.progress_every) as progress:
        if args.api is None:
            result = builder.run(progress=progress.update)
        else:
            from ._serve import run_with_api

            others = outputs(per_job=True)  # jobs started through the API: one file each
            result = run_with_api(
                builder, spiders, settings=settings, sink=others, address=args.api, progress=progress
            )
        progress.finish(result.stats)
    print_summary(result, sys.stdout, output=args.output)
    code = _EXIT_CODES.get(result.reason, 0)
    return NOTHING_CRAWLED if code == 0 and result.nothing_crawled is not None else code


_EXIT_CODES = {"interrupted": 130, "unavailable": 75, "lost": 1}  # 75: EX_TEMPFAIL, run it again later
NOTHING_CRAWLED = 3  # the run had work but parsed no page: every start URL invalid, or all dead-lettered


def _continues(settings: Settings) -> bool:
    """Whether this run may go on with a job begun before: then its `-o` files are appended to.

    So is a job dir that holds crawl state, and any job on a broker: its queues outlive its workers, so a
    worker started again (after Ctrl-C, a crash, or exit 75) or beside another continues it.
    """
    from mocra_core.engine import BackendPlan, JobDir

    if BackendPlan.decide(settings, job="", read_only=True).shared:
        return True
    job_dir = settings.crawl.job_dir
    return job_dir is not None and JobDir.holds_state(job_dir)


def _cmd_demo(args: argparse.Namespace) -> int:
    from ._demo_run import run_demo, serve_demo

    if args.serve:
        return serve_demo(port=args.port, books=args.books, stream=sys.stdout)
    with ProgressDisplay(sys.stderr, mode=args.progress, every=args.progress_every) as progress:
        return run_demo(output=args.output, books=args.books, stream=sys.stdout, progress=progress)


def _cmd_dlq(args: argparse.Namespace) -> int:
    from ._dlq import list_dead_letters, replay_dead_letters
    from ._job_queues import TOPICS, job_queues

    queues = job_queues(args)
    if args.action == "list":
        list_dead_letters(queues, limit=args.limit, stream=sys.stdout)
    else:
        replay_dead_letters(queues, topics=args.topic or TOPICS, stream=sys.stdout)
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    from ._job_queues import job_queues
    from ._status import print_status

    print_status(job_queues(args), stream=sys.stdout)
    return 0


def _cmd_cluster(args: argparse.Namespace) -> int:
    import os

    from mocra_core import ConfigError
    from mocra_core.engine import cluster_status

    password = os.environ.get(args.password_env, "")
    if not password:
        raise ConfigError(args.password_env, "is not set (the cluster password)", source="environment")
    status = cluster_status(args.addr, password=password, timeout=args.timeout)
    connected = set(status.connected) | {status.addr}
    voters = ", ".join(v if v in connected else f"{v} (unreachable)" for v in status.voters)
    sys.stdout.write(
        f"node     {status.addr} ({status.state})\n"
        f"leader   {status.leader or '-'}\n"
        f"term     {status.term}\n"
        f"applied  {status.applied_index} (commit {status.commit_index})\n"
        f"members  {len(status.voters)}: {voters}\n"
        f"quorum   {'yes' if status.has_quorum else 'no'}\n"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of the `mocra` command.

    Returns:
        The parser; each sub-command stores its handler in ``func``.

    Example:
        >>> build_parser().parse_args(["run", "spider.py", "-o", "items.jsonl"]).output
        ['items.jsonl']
    """
    parser = argparse.ArgumentParser(prog="mocra", description="Queue-driven web crawling.")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv: debug)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = commands.add_parser("run", help="run the spiders and modules defined in a Python file")
    run.add_argument("path", help="a .py file defining one or more Spider or Module subclasses")
    run.add_argument(
        "-o",
        "--output",
        action="append",
        default=[],
        help="write items to this .jsonl, .csv, .parquet (polars extra) or .xlsx (excel extra) file, or to a "
        "database table: a SQLAlchemy URL such as sqlite:///items.db (the sql extra); repeatable",
    )
    run.add_argument("--table", help="with a database output: the table (default items)")
    run.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="FIELD",
        help="with a database output: the item field(s) identifying an item; a row per key (upsert)",
    )
    add_settings_arguments(run)
    run.add_argument("--job-dir", help="keep crawl state here; the same command resumes after a crash")
    run.add_argument(
        "--queue", metavar="URL", help="share the crawl through a broker: redis://…, nats://… or kafka://…"
    )
    run.add_argument(
        "--job", metavar="NAME", help="job name: workers with the same name and --queue share a crawl"
    )
    run.add_argument(
        "--store",
        metavar="URL",
        help="take the work from a tenants store (`mocra store`): sqlite:///… or postgresql://…",
    )
    run.add_argument(
        "--spider", action="append", help="run only the spider or module with this name (repeatable)"
    )
    run.add_argument(
        "--reload",
        action="store_true",
        help="load new code from PATH while running: alone on a job, when the file changes; with --queue, "
        "once `mocra deploy` activated the file's code (work already queued drains on the old code)",
    )
    run.add_argument(
        "--cluster",
        action="store_true",
        help="run as a cluster node (no Redis): MOCRA_NODE_ID, MOCRA_CLUSTER_ADDR, MOCRA_DATA_DIR, "
        "MOCRA_SEEDS, MOCRA_CLUSTER_PASSWORD",
    )
    add_api_argument(run, default=None)
    add_progress_arguments(run)
    run.set_defaults(func=_cmd_run)
    add_new_command(commands)
    add_check_command(commands)
    add_shell_command(commands)

    demo = commands.add_parser("demo", help="crawl the bundled offline demo bookshop")
    demo.add_argument(
        "-o", "--output", default="items.jsonl", help="where to write the books (default items.jsonl)"
    )
    demo.add_argument("--books", type=int, default=50, help="number of books on the demo site (default 50)")
    demo.add_argument("--serve", action="store_true", help="only serve the demo site (for your own spider)")
    demo.add_argument("--port", type=int, default=8000, help="port for --serve (default 8000)")
    add_progress_arguments(demo)
    demo.set_defaults(func=_cmd_demo)

    dlq = commands.add_parser(
        "dlq",
        help="list or replay the dead-letter queues of a job",
        description="The job is a job dir (--job-dir DIR) or a job on a broker (--queue URL --job NAME).",
    )
    dlq.add_argument("action", choices=("list", "replay"))
    add_job_arguments(dlq)
    dlq.add_argument("--limit", type=int, default=1000, help="list at most this many per queue")
    dlq.add_argument(
        "--topic", action="append", choices=("task", "request", "response"), help="replay only this queue"
    )
    dlq.set_defaults(func=_cmd_dlq)

    status = commands.add_parser(
        "status",
        help="how many messages of a job are queued and dead-lettered",
        description="The job is a job dir (--job-dir DIR) or a job on a broker (--queue URL --job NAME).",
    )
    add_job_arguments(status)
    status.set_defaults(func=_cmd_status)

    cluster = commands.add_parser("cluster", help="ask a node of a `mocra run --cluster` cluster")
    cluster.add_argument("action", choices=("status",), help="status: leader, term, applied index, members")
    cluster.add_argument("--addr", required=True, metavar="HOST:PORT", help="the node's MOCRA_CLUSTER_ADDR")
    cluster.add_argument(
        "--password-env",
        default="MOCRA_CLUSTER_PASSWORD",
        metavar="VAR",
        help="the environment variable holding the cluster password (default MOCRA_CLUSTER_PASSWORD)",
    )
    cluster.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the answer")
    cluster.set_defaults(func=_cmd_cluster)

    add_store_commands(commands)
    add_serve_command(commands)
    add_deploy_command(commands)

    version = commands.add_parser("version", help="print the versions of the installed mocra packages")
    version.set_defaults(func=_cmd_version)
    return parser


def _configure_logging(verbosity: int) -> None:
    level = logging.DEBUG if verbosity >= 2 else logging.INFO
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    if verbosity < 1:
        for noisy in (
            "httpx",
            "httpcore",
            "mocra_core.engine._engine",
            "mocra_core.engine._end",
            "mocra_core.engine._lifecycle",  # the run's state changes: `mocra run -v` shows them
        ):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        # aiokafka narrates group joins at INFO and, while the broker is away, logs an ERROR per metadata
        # retry (thousands a minute); mocra's own messages say what a worker does about it
        logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `mocra` command line and return its exit code.

    Args:
        argv: The arguments after the program name; `sys.argv[1:]` when omitted.

    Example:
        >>> main(["version"])  # doctest: +ELLIPSIS
        mocra 0.1.0
        ...
        0
    """
    args = build_parser().parse_args(argv)
    if args.command != "version":
        _configure_logging(args.verbose)
    try:
        code: int = args.func(args)
    except MocraError as exc:
        sys.stderr.write(f"mocra: error: {exc}\n")
        return 2
    return code
