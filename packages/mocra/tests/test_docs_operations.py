"""docs/operations.md is true to the server: every route it lists exists with its method, and every route
of the server is listed; every `[admin]` key it names is a setting."""

from __future__ import annotations

import pathlib
import re

from starlette.routing import Route

from mocra_core.admin import AdminContext, admin_app
from mocra_core.config import Settings
from mocra_core.control import JobRegistry

DOC = pathlib.Path(__file__).parents[3] / "docs" / "operations.md"
TEXT = DOC.read_text()


def documented() -> set[tuple[str, str]]:
    """(method, path) of each row of the HTTP API table (`POST /a/{job}/pause`, `/resume`, ... expanded)."""
    found: set[tuple[str, str]] = set()
    for cell in re.findall(r"^\| `(GET|POST) ([^|]+)\|", TEXT, flags=re.M):
        method, rest = cell
        paths = [p.strip().strip("`").split("?")[0] for p in rest.split(",")]
        first = paths[0]
        for path in paths:
            if not path.startswith("/"):
                continue
            if path.count("/") == 1 and first.count("/") > 1:  # `/resume` after `/api/v1/jobs/{job}/pause`
                path = first.rsplit("/", 1)[0] + path
            found.add((method, path))
    return found


def served() -> set[tuple[str, str]]:
    app = admin_app(AdminContext(jobs=JobRegistry(), readiness=lambda: (True, "idle")))
    return {
        (method, route.path)
        for route in app.routes
        if isinstance(route, Route)
        for method in (route.methods or set()) - {"HEAD"}
    }


def test_every_route_is_documented_and_every_documented_route_exists() -> None:
    missing = served() - documented() - {("GET", "/")}  # the dashboard has its own section
    extra = documented() - served()
    assert not missing, f"routes not in docs/operations.md: {sorted(missing)}"
    assert not extra, f"docs/operations.md lists routes the server lacks: {sorted(extra)}"


def test_the_admin_settings_named_exist() -> None:
    names = set(re.findall(r"`admin\.(\w+)", TEXT))
    fields = set(type(Settings().admin).__struct_fields__)
    assert names and names <= fields, names - fields
