"""docs/updating.md: its commands parse with the CLI, and the message format it states is the wire's."""

from __future__ import annotations

import pathlib
import re
import shlex

from mocra._cli import build_parser
from mocra_core.queue._envelope import ENVELOPE_MINOR, ENVELOPE_VERSION

DOC = pathlib.Path(__file__).parents[3] / "docs" / "updating.md"
TEXT = DOC.read_text()


def test_every_command_in_the_page_parses() -> None:
    parser = build_parser()
    (block,) = re.findall(r"```bash\n(.*?)```", TEXT, flags=re.S)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    inline = re.findall(r"`(mocra (?:run|deploy) [^`]+)`", TEXT)
    assert commands and inline
    for command in [*commands, *inline]:
        argv = shlex.split(command.replace("...", "redis://127.0.0.1:6379/0"))[1:]
        parser.parse_args(argv)  # SystemExit on an option the CLI does not have


def test_the_page_states_todays_format() -> None:
    assert f"today {ENVELOPE_VERSION}.{ENVELOPE_MINOR}" in TEXT
