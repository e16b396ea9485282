"""The README's local-plane example runs and prints what the README says."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_local_plane_example_prints_what_the_readme_says(tmp_path: pathlib.Path) -> None:
    text = README.read_text()
    section = text[text.index("## The local plane") :]
    code = re.search(r"^```python\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    expected = re.search(r"^```text\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    assert code is not None and expected is not None
    result = subprocess.run(
        [sys.executable, "-c", code.group(1)], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected.group(1)
