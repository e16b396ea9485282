"""`mocra deploy`: publish a file's code to a running job as a new generation, roll back, list generations.

With `--api URL` it asks a node of the job (`POST /api/v1/jobs/{job}/deploy`) to deploy its own file or to
roll back: the way to a job whose coordination store lives inside its nodes (a Raft cluster's).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sys
import urllib.parse
from typing import TYPE_CHECKING, Any, TextIO

import anyio
import msgspec

from mocra_core import ConfigError, MocraError
from mocra_core.engine import BackendPlan
from mocra_core.generations import Deployed, JobGenerations, activate_number, deploy, read_generations

from ._job_queues import add_job_arguments

if TYPE_CHECKING:
    import argparse
    from collections.abc import AsyncIterator

    from mocra_core.coordination import Coordination

__all__ = ("KEYS_ENV", "add_deploy_command", "deploy_through_api", "print_deployed", "print_generations")

KEYS_ENV = "MOCRA_ADMIN_KEYS"
"""Where `mocra deploy --api` reads the API key by default (comma-separated keys: the first is sent)."""
API_TIMEOUT = 150.0
"""Seconds `mocra deploy --api` waits for the node (it imports its file apart: up to 120 s)."""


def add_deploy_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `mocra deploy` on the `mocra` sub-commands."""
    parser = commands.add_parser(
        "deploy",
        help="publish new code of a job's spiders (a new generation), roll back, or list generations",
        description="Prepare the file (imported apart: a file that fails to import never activates), verify "
        "it (--verify), then activate it on the job by compare-and-set: its workers started with --reload "
        "switch to it, the generation before drains. The job is a job dir (--job-dir DIR) or a job on a "
        "broker (--queue URL --job NAME), or a node of the job with --api (--api URL --job NAME): that "
        "node deploys its own file (the one its run was started with, --reload) or rolls back.",
    )
    parser.add_argument("path", nargs="?", help="the spiders' .py file (the one the workers run)")
    add_job_arguments(
        parser,
        api="a node's admin API (http://HOST:PORT, `mocra run --api`): it deploys its own file, "
        "or --activate N; for a cluster, whose generations live inside its nodes",
    )
    parser.add_argument(
        "--key-env",
        default=KEYS_ENV,
        metavar="VAR",
        help=f"with --api: the variable holding the API key (default {KEYS_ENV})",
    )
    parser.add_argument(
        "--verify",
        metavar="RESPONSES_DIR",
        help="run the spiders' parse over the responses recorded there (.json records, or HTML files) "
        "and refuse a parse that raises or items shaped unlike the active generation's",
    )
    parser.add_argument(
        "--spider", action="append", default=[], help="only this spider or module (repeatable)"
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--activate", type=int, metavar="N", help="activate generation N again (a rollback)")
    what.add_argument("--status", action="store_true", help="list the job's generations")
    parser.set_defaults(func=cmd_deploy)


def cmd_deploy(args: argparse.Namespace) -> int:
    """Run `mocra deploy`."""
    if args.activate is None and not args.status and not args.path and not args.api:
        raise ConfigError(
            "path", "name the spiders' file to deploy (or --activate N, or --status)", source="mocra deploy"
        )
    return anyio.run(_deploy, args, sys.stdout)


async def _deploy(args: argparse.Namespace, out: TextIO) -> int:
    if args.api:
        _check_api_args(args)
        key = _api_key(args.key_env)
        answer = await deploy_through_api(
            args.api, args.job, key, activate=args.activate, spiders=args.spider
        )
        print_answer(answer, out, api=args.api)
        return 0
    job = _job_label(args)
    async with _coordination(args) as coordination:
        if args.status:
            _, record = await read_generations(coordination)
            print_generations(record, out, job=job)
        elif args.activate is not None:
            record = await activate_number(coordination, args.activate, job=job, spiders=args.spider)
            out.write(f"{job}: generation {args.activate} active again (a rollback)\n")
            print_generations(record, out, job=job)
        else:
            done = await deploy(args.path, coordination, job=job, verify=args.verify, spiders=args.spider)
            print_deployed(done, out, job=job)
    return 0


def _check_api_args(args: argparse.Namespace) -> None:
    """With --api: a job name, and nothing the node would have to take from the caller (code, a path)."""
    where = "mocra deploy --api"
    if not args.job:
        raise ConfigError("--job", "name the job (the --job given to `mocra run`)", source=where)
    if args.path:
        raise ConfigError(
            "path",
            "give no file with --api: the node deploys its own (the one its run started with)",
            source=where,
        )
    if args.verify or args.status:
        what = "--verify" if args.verify else "--status"
        raise ConfigError(what, "not through --api (use --queue, or GET /api/v1/jobs/<job>)", source=where)


def _api_key(variable: str) -> str:
    keys = [part.strip() for part in os.environ.get(variable, "").split(",") if part.strip()]
    if not keys:
        raise ConfigError(variable, "is not set (the node's admin API key, admin.keys)", source="environment")
    return keys[0]


async def deploy_through_api(
    api: str, job: str, key: str, *, activate: int | None = None, spiders: list[str] | None = None
) -> dict[str, Any]:
    """Ask the node at `api` to deploy its own file to `job` (or to activate generation `activate`).

    Returns the node's answer (`DeployAnswer` as JSON: `job`, `record`, `activated`, `file`, `rollback`...).

    Raises:
        MocraError: the node refused (what it said, with its status) or could not be reached.
    """
    import httpx

    base = api if "://" in api else f"http://{api}"
    url = f"{base.rstrip('/')}/api/v1/jobs/{urllib.parse.quote(job, safe='')}/deploy"
    body: dict[str, Any] = {} if activate is None else {"activate": activate}
    if spiders:
        body["spiders"] = spiders
    try:
        async with httpx.AsyncClient(timeout=API_TIMEOUT) as client:
            response = await client.post(url, json=body, headers={"Authorization": f"Bearer {key}"})
    except httpx.HTTPError as exc:
        raise MocraError(f"{base}: cannot reach the node: {exc}") from None
    try:
        answer: dict[str, Any] = msgspec.json.decode(response.content)
    except msgspec.DecodeError:
        answer = {"error": response.text.strip()[:200]}
    if response.status_code != 200:
        said = answer.get("error", answer)
        raise MocraError(f"{base} answered {response.status_code}: {said}")
    return answer


def print_answer(answer: dict[str, Any], out: TextIO, *, api: str) -> None:
    """What a node answered `mocra deploy --api`: the rollback or the deploy, and the generations."""
    job = f"job {answer['job']!r}"
    record = msgspec.convert(answer["record"], JobGenerations)
    if answer.get("rollback") is not None:
        out.write(f"{job}: generation {answer['rollback']} active again (a rollback, through {api})\n")
        print_generations(record, out, job=job)
        return
    out.write(f"{job}: the node at {api} deployed its file {answer.get('file')}\n")
    done = Deployed(
        record=record,
        activated=answer.get("activated", {}),
        unchanged=answer.get("unchanged", []),
        new=answer.get("new", []),
        removed=answer.get("removed", []),
    )
    print_deployed(done, out, job=job)


def _job_label(args: argparse.Namespace) -> str:
    return f"job dir {args.job_dir}" if args.job_dir else f"job {args.job!r}"


@contextlib.asynccontextmanager
async def _coordination(args: argparse.Namespace) -> AsyncIterator[Coordination]:
    """The coordination store of the job `add_job_arguments` names (where its generations are)."""
    if args.job_dir:
        plan = BackendPlan.of_job_dir(args.job_dir)
    else:
        from mocra_core.config import load

        settings = load(
            args.config, overrides=args.set, flags=[(f"--queue {args.queue}", "queue.url", args.queue)]
        )
        args.job = args.job or settings.crawl.job
        if not args.job:
            raise ConfigError("--job", "name the job (the --job given to `mocra run`)", source="mocra deploy")
        plan = BackendPlan.decide(settings, job=args.job, read_only=True)
        if not plan.shared:
            raise ConfigError("--queue", f"expected a broker URL, got {args.queue!r}", source="mocra deploy")
    async with plan.make_coordination() as coordination:
        yield coordination


def print_deployed(done: Deployed, out: TextIO, *, job: str) -> None:
    """What a deploy did, one line per module."""
    record = done.record
    for name, number in done.activated.items():
        gens = record.modules[name]
        draining = [g.number for g in gens.generations if g.state == "draining"]
        before = f"; generation {', '.join(map(str, draining))} drains" if draining else ""
        out.write(f"{job}: {name} generation {number} ({gens.generations[-1].hash}) activated{before}\n")
    for name in done.unchanged:
        out.write(f"{job}: {name} unchanged (its code is the active generation)\n")
    for name in done.new:
        out.write(f"{job}: {name} is new to the job\n")
    for name in done.removed:
        out.write(f"{job}: {name} is not in the file: its generation drains, no new work is made for it\n")
    for name, seen in done.verified.items():
        out.write(f"  verified {name}: {seen}\n")


def print_generations(record: JobGenerations | None, out: TextIO, *, job: str) -> None:
    """The job's generations: per module, each generation's number, state, code hash and activation time."""
    if record is None:
        out.write(f"{job}: no generations recorded (the job never ran, nor was deployed to)\n")
        return
    out.write(f"{'module':<20} {'gen':>4}  {'state':<9} {'hash':<16}  activated\n")
    for name, gens in sorted(record.modules.items()):
        for g in gens.generations:
            when = (
                datetime.datetime.fromtimestamp(g.activated, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
                if g.activated
                else "-"
            )
            out.write(f"{name:<20} {g.number:>4}  {g.state:<9} {g.hash or '?':<16}  {when}\n")
