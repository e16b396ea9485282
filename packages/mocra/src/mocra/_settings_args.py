"""The `-s KEY=VALUE` and `-c FILE` options of `mocra run`, `serve`, `shell` and `check`; their settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from mocra_core import Settings

__all__ = ("add_settings_arguments", "load_settings")


def add_settings_arguments(
    parser: argparse.ArgumentParser,
    *,
    set_help: str = "override a setting (repeatable)",
    config_help: str = "a TOML settings file",
) -> None:
    """Add `-s/--set KEY=VALUE` (repeatable) and `-c/--config FILE` to `parser`, with these help texts."""
    parser.add_argument("-s", "--set", action="append", default=[], metavar="KEY=VALUE", help=set_help)
    parser.add_argument("-c", "--config", help=config_help)


def load_settings(args: argparse.Namespace) -> Settings:
    """The settings `args` name: the `--config` file (or the defaults) with the `--set` overrides.

    Raises:
        ConfigError: the file or an override is invalid.
    """
    from mocra_core.config import load

    return load(args.config, overrides=args.set)
