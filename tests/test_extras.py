"""Every extra of every distribution installs only packages that the distribution's code imports.

Read from each `packages/*/pyproject.toml` (`[project.optional-dependencies]`), a requirement of an extra is:

- another extra of the same distribution (`all = ["mocra-core[redis,...]"]`): that extra must exist;
- a workspace distribution (`mocra-core[polars]`, `mocra-store[postgres]`): its import package must be
  imported by this distribution's code, and the extras named in brackets must exist in its pyproject;
- a third-party package: its import name (`IMPORT_NAMES`, else the name with `-` as `_`) must be imported
  somewhere under the distribution's `src/`: `import X` / `from X ...` (inside a function too),
  `importlib.import_module("X")`, `require_extra("X", ...)`; a database driver counts when the code names
  it in a SQLAlchemy URL (`"postgresql+psycopg"`: SQLAlchemy imports it).

Extras in brackets of a third-party requirement (`redis[hiredis]`, `psycopg[binary]`) are that package's
own: redis-py uses hiredis's parser when it is installed, psycopg loads its binary build; mocra never imports
them. A package listed on its own that mocra uses only through another package goes in `ACCELERATORS`.
"""

from __future__ import annotations

import ast
import pathlib
import re
import tomllib
from typing import NamedTuple

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

IMPORT_NAMES = {
    "nats-py": "nats",
    "pyyaml": "yaml",
    "prometheus-client": "prometheus_client",
    "quickjs-ng": "quickjs",
}
"""Distribution name → import name, where the default (lower case, `-` → `_`) is not it."""

ACCELERATORS = {"hiredis": "redis", "psycopg-binary": "psycopg"}
"""Packages used through another package (that one must be imported) rather than imported themselves."""

_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")


class Requirement(NamedTuple):
    distribution: str  # the distribution whose extra it is
    extra: str
    name: str  # the required distribution, normalized
    extras: tuple[str, ...]  # the extras it asks of that distribution


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pyprojects() -> dict[str, dict[str, object]]:
    found = {}
    for path in sorted(ROOT.glob("packages/*/pyproject.toml")):
        project = tomllib.loads(path.read_text("utf-8"))["project"]
        project["_dir"] = path.parent
        found[_normal(project["name"])] = project
    return found


PROJECTS = _pyprojects()


def _requirements() -> list[Requirement]:
    found = []
    for distribution, project in PROJECTS.items():
        extras: dict[str, list[str]] = project.get("optional-dependencies", {})  # type: ignore[assignment]
        for extra, requirements in extras.items():
            for text in requirements:
                match = _NAME.match(text)
                assert match, f"{distribution}[{extra}]: cannot read the requirement {text!r}"
                asked = tuple(e.strip() for e in (match.group(2) or "").split(",") if e.strip())
                found.append(Requirement(distribution, extra, _normal(match.group(1)), asked))
    return found


REQUIREMENTS = _requirements()


def import_name(distribution: str) -> str:
    """The top-level package a distribution installs."""
    return IMPORT_NAMES.get(distribution, distribution.replace("-", "_"))


def imports(distribution: str, module: str) -> list[str]:
    """The files under the distribution's `src/` that import `module` (or name it as a SQLAlchemy driver)."""
    src = PROJECTS[distribution]["_dir"] / "src"  # type: ignore[operator]
    return [str(path.relative_to(ROOT)) for path in sorted(src.rglob("*.py")) if module in _used(path)]


def _used(path: pathlib.Path) -> set[str]:
    """Top-level packages a module imports: `import X`, `from X import`, `importlib.import_module("X")`,
    `require_extra("X", ...)` (in a function too), and drivers of SQLAlchemy URLs (`"postgresql+psycopg"`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.partition(".")[0])
        elif isinstance(node, ast.Call) and _called(node) in _IMPORTERS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value.partition(".")[0])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(match.group(1) for match in _DRIVER.finditer(node.value))
    return found


_IMPORTERS = {"import_module", "require_extra"}
_DRIVER = re.compile(r"^[a-z]+\+([a-z0-9_]+)(?::|$)")  # "postgresql+psycopg", "sqlite+aiosqlite://..."


def _called(call: ast.Call) -> str | None:
    function = call.func
    if isinstance(function, ast.Attribute):
        return function.attr
    return function.id if isinstance(function, ast.Name) else None


def test_the_workspace_has_extras_to_check() -> None:
    assert {"mocra", "mocra-core", "mocra-store"} <= set(PROJECTS)
    assert len(REQUIREMENTS) > 20


@pytest.mark.parametrize("req", REQUIREMENTS, ids=lambda r: f"{r.distribution}[{r.extra}]->{r.name}")
def test_each_package_an_extra_installs_is_used(req: Requirement) -> None:
    if req.name == req.distribution:  # an extra made of other extras: `all`
        declared = PROJECTS[req.distribution].get("optional-dependencies", {})
        missing = [extra for extra in req.extras if extra not in declared]  # type: ignore[operator]
        assert not missing, f"{req.distribution}[{req.extra}] names extras it does not have: {missing}"
        return
    if req.name in PROJECTS:  # a workspace distribution, perhaps with its extras
        declared = PROJECTS[req.name].get("optional-dependencies", {})
        missing = [extra for extra in req.extras if extra not in declared]  # type: ignore[operator]
        assert not missing, f"{req.distribution}[{req.extra}] asks {req.name} for extras it lacks: {missing}"
    module = import_name(ACCELERATORS.get(req.name, req.name))
    assert imports(req.distribution, module), (
        f"{req.distribution}[{req.extra}] installs {req.name}, but no code of {req.distribution} imports "
        f"{module}: build what the extra is for, or drop it"
    )


def _leaves(distribution: str, extra: str) -> set[str]:
    """The packages an extra installs, workspace extras expanded."""
    found: set[str] = set()
    for req in REQUIREMENTS:
        if (req.distribution, req.extra) != (distribution, extra):
            continue
        if req.name in PROJECTS:
            if req.name != distribution:
                found.add(req.name)
            for asked in req.extras:
                found |= _leaves(req.name, asked)
        else:
            found.add(req.name)
    return found


def test_all_installs_what_every_other_extra_does() -> None:
    for distribution, project in PROJECTS.items():
        extras: dict[str, list[str]] = project.get("optional-dependencies", {})  # type: ignore[assignment]
        if "all" not in extras:
            continue
        others = set().union(*(_leaves(distribution, extra) for extra in extras if extra != "all"))
        missing = others - _leaves(distribution, "all")
        assert not missing, f"{distribution}[all] does not install {sorted(missing)}"


def test_the_scanner_reads_code_not_comments(tmp_path: pathlib.Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        '"""from openpyxl import load_workbook"""\n'
        "import importlib  # import polars\n"
        "from . import sibling\n"
        "def f() -> None:\n"
        "    import redis.asyncio\n"
        '    importlib.import_module("yaml")\n'
        '    require_extra("mocra_store", "store", "a store")\n'
        'URL = "postgresql+psycopg://u@h/db"\n',
        "utf-8",
    )
    assert _used(module) == {"importlib", "redis", "yaml", "mocra_store", "psycopg"}
