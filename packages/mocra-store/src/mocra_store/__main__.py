"""``python -m mocra_store``: upgrade/current/head of the schema, a new key, import/export of tenants.

>>> main(["head"])
0002
0
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING

from . import migrate
from ._errors import StoreError
from ._secrets import generate_key
from ._urls import DEFAULT_URL, redact
from .store import Store
from .tenants_file import load_tenants

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("main",)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mocra_store", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("upgrade", help="migrate the database to a revision (default: head)")
    up.add_argument("url", nargs="?", default=DEFAULT_URL)
    up.add_argument("--revision", default="head")
    cur = commands.add_parser("current", help="print the revision the database is at")
    cur.add_argument("url", nargs="?", default=DEFAULT_URL)
    commands.add_parser("head", help="print the newest revision this mocra-store ships")
    commands.add_parser("keygen", help="print a new key for MOCRA_STORE_KEY")
    imp = commands.add_parser("import", help="upsert a tenants file (.toml, .json, .yaml)")
    imp.add_argument("file")
    imp.add_argument("url", nargs="?", default=DEFAULT_URL)
    exp = commands.add_parser("export", help="print the tenants as JSON")
    exp.add_argument("url", nargs="?", default=DEFAULT_URL)
    exp.add_argument("--secrets", action="store_true", help="include the decrypted credentials")
    return parser


async def _import(file: str, url: str) -> dict[str, int]:
    data = load_tenants(file)
    async with Store.open(url) as store:
        return await store.import_tenants(data, source=file)


async def _export(url: str, secrets: bool) -> str:
    async with Store.open(url) as store:
        return json.dumps(await store.export_tenants(secrets=secrets), indent=2, sort_keys=True)


def _run(args: argparse.Namespace) -> str:
    if args.command == "upgrade":
        return f"{redact(args.url)} is at revision {migrate.upgrade(args.url, args.revision)}"
    if args.command == "current":
        return migrate.current(args.url) or "none"
    if args.command == "head":
        return migrate.head()
    if args.command == "keygen":
        return generate_key()
    if args.command == "import":
        counts = asyncio.run(_import(args.file, args.url))
        return ", ".join(f"{table}: {n}" for table, n in sorted(counts.items())) or "nothing to import"
    return asyncio.run(_export(args.url, args.secrets))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; errors print one line to stderr and return 1."""
    args = _parser().parse_args(argv)
    try:
        text = _run(args)
    except StoreError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
