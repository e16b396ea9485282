"""`mocra store ...` on a SQLite file, and `mocra run --store URL` taking its work from the store."""

from __future__ import annotations

import json
import os
import pathlib
import stat
import textwrap

import pytest

from mocra._cli import main
from mocra_core.testing import LocalServer, ServerResponse

TENANTS = """\
[platforms.shop]
config = { currency = "EUR" }

[modules.prices]
version = "2"

[accounts.alice]
[accounts.alice.credentials.shop]
username = "alice"
password = "s3cret-pw"

[accounts.bob]

[[relations]]
account = "alice"
platform = "shop"

[[relations]]
account = "bob"
platform = "shop"

[[relations]]
module = "prices"
platform = "shop"

[[relations]]
module = "prices"
account = "alice"
priority = 5

[[relations]]
module = "prices"
account = "bob"
BOB
"""

SPIDER = """\
from mocra import Spider


class Prices(Spider):
    name = "prices"
    version = "2"

    async def start(self, seeds):
        seeds.get("{base}/prices/" + seeds.routing.account)

    async def parse(self, response, ctx):
        ctx.emit({{"account": response.routing.account}})
"""


class Cli:
    """Runs `mocra ...` in this process: the exit code, stdout and stderr of each command."""

    def __init__(self, capsys: pytest.CaptureFixture[str], url: str) -> None:
        self.capsys = capsys
        self.url = url

    def __call__(self, *args: str, store: str | None = None) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = main(["store", *args, "--store", store or self.url])
        out, err = self.capsys.readouterr()
        return code, out, err

    def ok(self, *args: str, store: str | None = None) -> str:
        code, out, err = self(*args, store=store)
        assert code == 0, err
        assert err == "", err
        return out


def rows(text: str) -> list[list[str]]:
    """The cells of a table printed by `mocra store`, below its header."""
    return [line.split() for line in text.splitlines()[1:]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> Cli:
    return Cli(capsys, f"sqlite:///{tmp_path}/mocra.db")


@pytest.fixture
def tenants(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "tenants.toml"
    path.write_text(TENANTS.replace("BOB", "enabled = false"))
    return path


@pytest.fixture
def filled(cli: Cli, tenants: pathlib.Path) -> Cli:
    cli.ok("init")
    cli.ok("import", str(tenants))
    return cli


def test_init_creates_the_store_at_the_newest_revision(cli: Cli) -> None:
    assert "ready, at revision 0002" in cli.ok("init")
    assert "already initialised, at revision 0002" in cli.ok("init")
    assert "at revision 0002 already" in cli.ok("upgrade")


def test_upgrade_says_from_and_to(cli: Cli) -> None:
    from mocra_store import migrate

    migrate.upgrade(cli.url, "0001")
    assert cli.ok("upgrade").endswith("upgraded 0001 -> 0002\n")


def test_import_prints_the_rows_written_per_table(cli: Cli, tenants: pathlib.Path) -> None:
    cli.ok("init")
    written = dict(rows(cli.ok("import", str(tenants))))
    assert written == {
        "account_platforms": "2",
        "accounts": "2",
        "credentials": "1",
        "module_accounts": "2",
        "module_platforms": "1",
        "modules": "1",
        "platforms": "1",
    }


def test_accounts_platforms_and_modules_are_listed(filled: Cli) -> None:
    assert rows(filled.ok("accounts")) == [["alice", "yes"], ["bob", "yes"]]
    assert rows(filled.ok("platforms")) == [["shop", "yes"]]
    out = filled.ok("modules")
    assert out.split()[:3] == ["name", "enabled", "version"]
    assert rows(out) == [["prices", "yes", "2"]]


def test_assignments_show_what_a_run_seeds_and_with_all_why_a_row_is_off(filled: Cli) -> None:
    assert rows(filled.ok("assignments")) == [["alice", "shop", "prices", "2", "5"]]
    assert rows(filled.ok("assignments", "--all")) == [
        ["alice", "shop", "prices", "2", "5", "yes"],
        ["bob", "shop", "prices", "2", "0", "no", "module×account", "prices/bob"],
    ]


def test_disable_and_enable_switch_a_tenant(filled: Cli) -> None:
    assert filled.ok("disable", "account", "alice") == "account alice: disabled\n"
    assert rows(filled.ok("accounts")) == [["alice", "no"], ["bob", "yes"]]
    assert filled.ok("assignments") == "nothing to run: no account/platform/module row is complete\n"
    assert ["alice", "shop", "prices", "2", "5", "no", "account", "alice"] in rows(
        filled.ok("assignments", "--all")
    )
    filled.ok("enable", "account", "alice")
    assert rows(filled.ok("assignments")) == [["alice", "shop", "prices", "2", "5"]]


def test_an_unknown_name_is_one_line_and_exit_2(filled: Cli) -> None:
    code, out, err = filled("enable", "module", "ghost")
    assert (code, out) == (2, "")
    assert err == f"mocra: error: store: {filled.url}: no module named 'ghost'\n"


def test_export_leaves_passwords_out_and_round_trips_into_another_store(
    filled: Cli, tmp_path: pathlib.Path
) -> None:
    exported = filled.ok("export")
    assert "s3cret-pw" not in exported
    data = json.loads(exported)
    assert "credentials" not in data["accounts"]["alice"]
    again = tmp_path / "again.json"
    again.write_text(exported)
    other = f"sqlite:///{tmp_path}/other.db"
    filled.ok("init", store=other)
    filled.ok("import", str(again), store=other)
    for listing in (["assignments", "--all"], ["accounts"], ["platforms"], ["modules"]):
        assert filled.ok(*listing, store=other) == filled.ok(*listing)


def test_export_with_secrets_to_a_file_is_private(filled: Cli, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "with-secrets.json"
    out = filled.ok("export", "--secrets", "-o", str(path))
    assert "s3cret-pw" not in out and str(path) in out
    data = json.loads(path.read_text())
    assert data["accounts"]["alice"]["credentials"]["shop"]["password"] == "s3cret-pw"
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_status_names_the_revision_and_counts(filled: Cli) -> None:
    out = filled.ok("status")
    assert "revision   0002 (this mocra needs 0002)" in out
    assert "accounts   2 (2 enabled)" in out
    assert "runs seed  1 of 2 account/platform/module rows" in out


def test_status_of_an_empty_database_says_to_upgrade(cli: Cli) -> None:
    out = cli.ok("status")
    assert "revision   none" in out
    assert f"`mocra store upgrade --store {cli.url}`" in out


def test_runs_of_an_empty_store(filled: Cli) -> None:
    assert filled.ok("runs") == "no runs recorded\n"


def test_a_store_that_is_down_is_named_without_traceback(cli: Cli) -> None:
    url = "postgresql://u:hunter2@127.0.0.1:1/x"
    for args in (("status",), ("accounts",), ("init",)):
        code, out, err = cli(*args, store=url)
        assert (code, out) == (2, "")
        assert err.startswith("mocra: error: store backend at 'postgresql://u:***@127.0.0.1:1/x': ")
        assert "hunter2" not in err and "Traceback" not in err
        assert err.count("\n") == 1


def test_an_unmigrated_store_names_the_upgrade_command(cli: Cli, tenants: pathlib.Path) -> None:
    code, out, err = cli("import", str(tenants))
    assert (code, out) == (2, "")
    assert "is not initialised" in err and "`mocra store upgrade`" in err
    assert err.count("\n") == 1


def test_a_bad_tenants_file_names_the_key(cli: Cli, tmp_path: pathlib.Path) -> None:
    cli.ok("init")
    bad = tmp_path / "bad.toml"
    bad.write_text("[accounts.alice]\nenabeld = true\n")
    code, _, err = cli("import", str(bad))
    assert code == 2
    assert f"{bad}: accounts.alice.enabeld: unknown key" in err


def test_mocra_run_takes_its_work_from_the_store(
    filled: Cli, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tenants = tmp_path / "both.toml"
    tenants.write_text(TENANTS.replace("BOB", "enabled = true"))  # 2 accounts x 1 module, both on
    filled.ok("import", str(tenants))
    server = LocalServer(
        {path: ServerResponse(body="ok") for path in ("/prices/alice@shop", "/prices/bob@shop")}
    )
    with server.run_in_thread() as base:
        spider = tmp_path / "spider.py"
        spider.write_text(textwrap.dedent(SPIDER.format(base=base)))
        items = tmp_path / "items.jsonl"
        capsys.readouterr()
        code = main(
            ["run", str(spider), "--store", filled.url, "-o", str(items), "-s", "crawl.obey_robots=false"]
        )
        out, err = capsys.readouterr()
    assert code == 0, out + err
    assert dict(server.hits) == {"/prices/alice@shop": 1, "/prices/bob@shop": 1}
    assert sorted(json.loads(line)["account"] for line in items.read_text().splitlines()) == [
        "alice@shop",
        "bob@shop",
    ]
    runs = rows(filled.ok("runs"))
    # started (a date and a time), seconds, status, module, account, platform, pages
    assert sorted((r[4], r[5], r[6], r[3], r[7]) for r in runs) == [
        ("prices", "alice", "shop", "succeeded", "1"),
        ("prices", "bob", "shop", "succeeded", "1"),
    ]
    assert rows(filled.ok("runs", "--account", "bob"))[0][5] == "bob"
