"""The `mocra` command line."""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("main",)

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


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of the `mocra` command.

    Returns:
        The parser; each sub-command stores its handler in ``func``.

    Example:
        >>> build_parser().parse_args(["version"]).command
        'version'
    """
    parser = argparse.ArgumentParser(prog="mocra", description="Queue-driven web crawling.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    version = commands.add_parser("version", help="print the versions of the installed mocra packages")
    version.set_defaults(func=_cmd_version)
    return parser


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
    code: int = args.func(args)
    return code
