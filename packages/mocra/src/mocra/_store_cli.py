"""`mocra store ...`: create and migrate a store, import and export tenants, list and switch what runs.

Every subcommand takes `--store URL` (default `sqlite:///mocra.db`); the store is read through
`mocra_core.metadata` (the facade never imports mocra_store). Errors are mocra errors: `mocra` prints
them on one line and exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import TYPE_CHECKING

from mocra_core import redact
from mocra_core.metadata import open_store, read_tenants, store_revision, upgrade_store

from ._store_show import assignment_rows, run_rows, table, tenant_rows, write_export

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ("DEFAULT_STORE", "add_store_commands")

DEFAULT_STORE = "sqlite:///mocra.db"
_KINDS = ("account", "platform", "module")


def _out(text: str) -> None:
    sys.stdout.write(text)


async def _init(args: argparse.Namespace) -> int:
    before, head = await store_revision(args.store)
    if before == head:
        _out(f"{redact(args.store)}: already initialised, at revision {head}\n")
        return 0
    _out(f"{redact(args.store)}: ready, at revision {await upgrade_store(args.store)}\n")
    return 0


async def _upgrade(args: argparse.Namespace) -> int:
    before, head = await store_revision(args.store)
    if before == head:
        _out(f"{redact(args.store)}: at revision {head} already (the newest)\n")
        return 0
    after = await upgrade_store(args.store)
    _out(f"{redact(args.store)}: upgraded {before or 'empty'} -> {after}\n")
    return 0


async def _status(args: argparse.Namespace) -> int:
    current, head = await store_revision(args.store)
    _out(f"store      {redact(args.store)}\nrevision   {current or 'none'} (this mocra needs {head})\n")
    if current != head:
        _out(f"needs      `mocra store upgrade --store {redact(args.store)}`\n")
        return 0
    async with open_store(args.store) as store:
        for kind, found in (
            ("accounts", await store.accounts()),
            ("platforms", await store.platforms()),
            ("modules", await store.modules()),
        ):
            _out(f"{kind:<11}{len(found)} ({sum(t.enabled for t in found)} enabled)\n")
        rows = await store.assignments(include_disabled=True)
        _out(f"{'runs seed':<11}{sum(a.enabled for a in rows)} of {len(rows)} account/platform/module rows\n")
        last = await store.runs(limit=1)
        if last:
            run = last[0]
            when = run.started_at.strftime("%Y-%m-%d %H:%M:%S")
            _out(f"last run   {when} UTC {run.module} {run.status}\n")
    return 0


async def _import(args: argparse.Namespace) -> int:
    data = read_tenants(args.file)
    async with open_store(args.store) as store:
        counts = await store.import_tenants(data, source=args.file)
    written = [[name, n] for name, n in sorted(counts.items())]
    _out(table(["table", "rows written"], written) if written else "nothing to import\n")
    return 0


async def _export(args: argparse.Namespace) -> int:
    async with open_store(args.store) as store:
        data = await store.export_tenants(secrets=args.secrets)
    written = write_export(data, args.output, sys.stdout, secrets=args.secrets)
    if written is not None:
        _out(f"wrote {written}{' (with passwords: keep it private)' if args.secrets else ''}\n")
    return 0


async def _list(args: argparse.Namespace) -> int:
    async with open_store(args.store) as store:
        if args.what == "accounts":
            headers, rows = tenant_rows(await store.accounts(), versions=False)
        elif args.what == "platforms":
            headers, rows = tenant_rows(await store.platforms(), versions=False)
        else:
            headers, rows = tenant_rows(await store.modules(), versions=True)
    _out(table(headers, rows) if rows else f"no {args.what}\n")
    return 0


async def _assignments(args: argparse.Namespace) -> int:
    async with open_store(args.store) as store:
        found = await store.assignments(include_disabled=args.all)
    headers, rows = assignment_rows(found, why=args.all)
    _out(table(headers, rows) if rows else "nothing to run: no account/platform/module row is complete\n")
    return 0


async def _switch(args: argparse.Namespace) -> int:
    enabled = args.action == "enable"
    async with open_store(args.store) as store:
        await store.set_enabled(args.kind, args.name, enabled)
    _out(f"{args.kind} {args.name}: {'enabled' if enabled else 'disabled'}\n")
    return 0


async def _runs(args: argparse.Namespace) -> int:
    async with open_store(args.store) as store:
        found = await store.runs(module=args.module, account=args.account, limit=args.limit)
    headers, rows = run_rows(found)
    _out(table(headers, rows) if rows else "no runs recorded\n")
    return 0


def _command(work: Callable[[argparse.Namespace], Awaitable[int]]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        if args.verbose < 1:
            logging.getLogger("alembic").setLevel(logging.WARNING)  # "Running upgrade …" on every init

        async def once() -> int:
            return await work(args)

        return asyncio.run(once())

    return run


def add_store_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `mocra store ...` to the `mocra` command's subcommands.

    Example:
        >>> parser = argparse.ArgumentParser(prog="mocra")
        >>> add_store_commands(parser.add_subparsers(dest="command"))
        >>> args = parser.parse_args(["store", "assignments", "--all", "--store", "sqlite:///t.db"])
        >>> args.store, args.all
        ('sqlite:///t.db', True)
    """
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--store",
        metavar="URL",
        default=DEFAULT_STORE,
        help=f"the store: sqlite:///FILE or postgresql://user@host/db (default {DEFAULT_STORE})",
    )
    store = commands.add_parser(
        "store",
        help="the tenants store: init, upgrade, import, export, list, enable/disable, runs",
        description="Accounts × platforms × modules, their relations, logins, schedules and run records. "
        "Passwords are encrypted with MOCRA_STORE_KEY when it is set.",
    )
    actions = store.add_subparsers(dest="action", metavar="ACTION", required=True)

    def add(
        name: str, work: Callable[[argparse.Namespace], Awaitable[int]], text: str
    ) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, parents=[common], help=text, description=text)
        parser.set_defaults(func=_command(work))
        return parser

    add("init", _init, "create the store (or bring it to the newest schema) and say its revision")
    add("upgrade", _upgrade, "migrate the store's schema to the newest revision")
    add("status", _status, "the store's revision against the one needed, and what it holds")
    add("import", _import, "upsert a tenants file (.toml, .json, .yaml); never deletes").add_argument(
        "file", help="the tenants file"
    )
    export = add("export", _export, "the tenants as JSON on stdout, or into -o FILE (.json, .toml, .yaml)")
    export.add_argument("--secrets", action="store_true", help="include the logins' passwords (decrypted)")
    export.add_argument("-o", "--output", metavar="FILE", help="write here; the extension picks the format")
    for what in ("accounts", "platforms", "modules"):
        add(
            what, _list, f"list the {what}: name, enabled{', version' if what == 'modules' else ''}"
        ).set_defaults(what=what)
    assignments = add("assignments", _assignments, "what a run seeds: account, platform, module, priority")
    assignments.add_argument("--all", action="store_true", help="also the disabled rows, and why")
    for action in ("enable", "disable"):
        switch = add(action, _switch, f"{action} an account, platform or module")
        switch.add_argument("kind", choices=_KINDS)
        switch.add_argument("name")
    runs = add("runs", _runs, "the run records, newest first")
    runs.add_argument("--module", help="only this module's runs")
    runs.add_argument("--account", help="only this account's runs")
    runs.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
