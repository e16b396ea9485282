"""Workspace-level fixtures: the repository root and a runner for the project's own tools."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest


class Workspace:
    """The checked-out repository and the tools installed in its venv."""

    root = pathlib.Path(__file__).resolve().parents[1]
    bin = pathlib.Path(sys.executable).parent

    def tool(self, name: str) -> str:
        """Path of a console script installed beside the running interpreter."""
        path = self.bin / name
        if path.exists():
            return str(path)
        found = shutil.which(name)
        if found is None:
            pytest.fail(f"{name} is not installed; run `uv sync --all-packages --all-extras`")
        return found

    def run(
        self, *args: str, cwd: pathlib.Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run a command, capturing text output; never raises on a non-zero exit."""
        return subprocess.run(
            args, cwd=cwd or self.root, env=env, capture_output=True, text=True, timeout=900, check=False
        )


@pytest.fixture(scope="session")
def ws() -> Workspace:
    return Workspace()
