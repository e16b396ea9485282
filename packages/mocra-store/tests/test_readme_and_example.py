"""The README's Python blocks and examples/store_tenants.py run and print what they say; the README's
TOML block is a valid tenants file; the wheel alone (no mocra, no mocra_core) runs the example."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from mocra_store import check_tenants
from mocra_store.__main__ import main

PACKAGE = pathlib.Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parents[1]
README = PACKAGE / "README.md"
EXAMPLE = ROOT / "examples" / "store_tenants.py"


def _run(path: pathlib.Path, python: str = sys.executable, *flags: str) -> str:
    result = subprocess.run(
        [python, *flags, str(path)], capture_output=True, text=True, timeout=120, check=False, cwd=path.parent
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", README.read_text(), flags=re.MULTILINE | re.DOTALL)


def _promised(code: str) -> list[str]:
    """What the block's `print(...)  # expected` lines promise, in order."""
    return re.findall(r"^\s*print\(.*\)  # (.+)$", code, flags=re.MULTILINE)


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_readme_block_prints_what_its_comments_say(index: int, tmp_path: pathlib.Path) -> None:
    code = _blocks("python")[index]
    script = tmp_path / f"block_{index}.py"
    script.write_text(code)

    printed = _run(script).splitlines()

    assert printed == _promised(code)


def test_readme_tenants_file_is_valid() -> None:
    import tomllib

    (block,) = _blocks("toml")
    checked = check_tenants(tomllib.loads(block), source="README")

    assert checked["accounts"]["alice"]["credentials"]["shop"]["username"] == "alice"


EXPECTED_EXAMPLE = [
    "alice/shop/prices v2 priority 5 on",
    "  config: {'base_url': 'https://shop.example', 'pages': 3, 'region': 'eu'}"
    " middlewares: [('retry', {'tries': 5})]",
    "bob/shop/prices v2 priority 0 off (module×account prices/bob)",
]


def test_standalone_example_prints_merged_assignments_and_a_redacted_login() -> None:
    printed = _run(EXAMPLE)

    lines = printed.splitlines()
    assert lines[1:4] == EXPECTED_EXAMPLE
    assert "login: Credentials(username='alice', password='***', extra=<0 key(s)>)" in lines
    assert "s3cret" not in printed.replace('password = "s3cret"', "")


def test_standalone_example_imports_nothing_from_mocra() -> None:
    imports = re.findall(r"^(?:from|import) (\S+)", EXAMPLE.read_text(), flags=re.MULTILINE)

    assert {name.split(".")[0] for name in imports} == {
        "__future__",
        "asyncio",
        "pathlib",
        "tempfile",
        "mocra_store",
    }


def test_python_dash_m_mocra_store(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path}/cli.db"
    tenants = tmp_path / "t.json"
    tenants.write_text('{"accounts": {"alice": {"credentials": {"*": {"username": "a", "password": "pw"}}}}}')

    def cli(*args: str) -> str:
        """The command's stdout, run in this process (one process start per command took a second)."""
        assert main(list(args)) == 0
        return capsys.readouterr().out

    not_yet = subprocess.run(
        [sys.executable, "-m", "mocra_store", "import", str(tenants), url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert not_yet.returncode == 1
    assert "not initialised" in not_yet.stderr and "Traceback" not in not_yet.stderr
    assert cli("current", url).strip() == "none"
    assert cli("upgrade", url, "--revision", "0001").strip().endswith("is at revision 0001")
    assert cli("upgrade", url).strip().endswith("is at revision 0002")
    assert cli("head").strip() == cli("current", url).strip() == "0002"
    assert cli("import", str(tenants), url).strip() == "accounts: 1, credentials: 1"
    assert '"password"' not in cli("export", url)
    assert '"password": "pw"' in cli("export", url, "--secrets")
    assert len(cli("keygen").strip()) == 44


def _uv() -> str:
    found = pathlib.Path(sys.executable).parent / "uv"
    return str(found) if found.exists() else (shutil.which("uv") or pytest.fail("uv is not installed"))


@pytest.mark.slow
def test_the_wheel_alone_runs_the_example_and_migrates(tmp_path: pathlib.Path) -> None:
    def run(*args: str) -> str:
        result = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    run(_uv(), "build", "--package", "mocra-store", "--wheel", "--out-dir", str(tmp_path), str(ROOT))
    run(_uv(), "venv", "--quiet", "--python", sys.executable, str(tmp_path / "venv"))
    python = tmp_path / "venv" / "bin" / "python"
    wheel = next(tmp_path.glob("*.whl"))
    run(_uv(), "pip", "install", "--quiet", "--python", str(python), f"{wheel}[encryption]")
    shutil.copy(EXAMPLE, tmp_path / EXAMPLE.name)

    printed = run(str(python), "-I", str(tmp_path / EXAMPLE.name))

    assert printed.splitlines()[1:4] == EXPECTED_EXAMPLE
    assert run(str(python), "-I", "-m", "mocra_store", "upgrade", "sqlite:///w.db").endswith(
        "revision 0002\n"
    )
    alone = 'import importlib.util as u; print([m for m in ("mocra", "mocra_core") if u.find_spec(m)])'
    assert run(str(python), "-I", "-c", alone).strip() == "[]"
