"""Child processes a test starts, killed if the test fails while they run: none is left to warn later."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator

from .tree_crawl import kill


@contextlib.contextmanager
def reaping() -> Iterator[list[subprocess.Popen[bytes]]]:
    """A list for the processes a block starts; those still running when it exits are SIGKILLed and reaped.

    A failed assertion otherwise leaves them running; their `Popen` objects, collected in a later test,
    fail that test with "subprocess ... is still running" (pytest turns the ResourceWarning into an error).
    """
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                kill(process)
