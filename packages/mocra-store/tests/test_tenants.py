"""The tenants file: TOML/JSON/YAML, errors naming file and key path, import/export round trip."""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import pytest

from mocra_store import Store, TenantsFileError, check_tenants, generate_key, load_tenants

TOML = """
[platforms.shop]
config = { base_url = "https://shop.example" }

[middlewares.retry]
kind = "download"
config = { tries = 3 }

[modules.prices]
version = "2"
config = { pages = 10 }
middlewares = [{ name = "retry", config = { tries = 5 } }]

[accounts.alice]
config = { region = "eu" }

[accounts.alice.credentials.shop]
username = "alice"
password = "s3cret"

[[relations]]
account = "alice"
platform = "shop"

[[relations]]
module = "prices"
platform = "shop"

[[relations]]
module = "prices"
account = "alice"
priority = 5
enabled = true
config = { pages = 3 }

[[schedules]]
module = "prices"
account = "alice"
cron = "0 * * * *"
"""

EXPORTED = {
    "platforms": {"shop": {"enabled": True, "config": {"base_url": "https://shop.example"}}},
    "middlewares": {"retry": {"kind": "download", "enabled": True, "config": {"tries": 3}}},
    "modules": {
        "prices": {
            "version": "2",
            "enabled": True,
            "config": {"pages": 10},
            "middlewares": [{"name": "retry", "position": 0, "enabled": True, "config": {"tries": 5}}],
        }
    },
    "accounts": {
        "alice": {
            "enabled": True,
            "config": {"region": "eu"},
            "credentials": {"shop": {"username": "alice", "password": "s3cret", "extra": {}}},
        }
    },
    "relations": [
        {"account": "alice", "platform": "shop", "priority": 0, "enabled": True, "config": {}},
        {"module": "prices", "account": "alice", "priority": 5, "enabled": True, "config": {"pages": 3}},
        {"module": "prices", "platform": "shop", "priority": 0, "enabled": True, "config": {}},
    ],
    "schedules": [
        {"module": "prices", "account": "alice", "cron": "0 * * * *", "misfire": 60.0, "enabled": True}
    ],
}


@pytest.fixture
def toml_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "tenants.toml"
    path.write_text(TOML)
    return path


def test_toml_json_and_yaml_read_the_same(toml_file: pathlib.Path, tmp_path: pathlib.Path) -> None:
    import yaml  # type: ignore[import-untyped]

    data = load_tenants(toml_file)
    as_json, as_yaml = tmp_path / "t.json", tmp_path / "t.yaml"
    as_json.write_text(json.dumps(data))
    as_yaml.write_text(yaml.safe_dump(data))

    assert load_tenants(as_json) == load_tenants(as_yaml) == data
    assert data["relations"][2] == {
        "module": "prices",
        "account": "alice",
        "priority": 5,
        "enabled": True,
        "config": {"pages": 3},
    }


def test_yaml_without_pyyaml_names_the_install(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.yml"
    path.write_text("accounts: {}\n")
    monkeypatch.setitem(sys.modules, "yaml", None)  # what an environment without PyYAML looks like

    with pytest.raises(TenantsFileError, match=r"t\.yml: reading YAML needs PyYAML: pip install pyyaml"):
        load_tenants(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[acounts.alice]\n", r"acounts: unknown section \(known: platforms, middlewares"),
        ("[accounts.alice]\nenabeld = true\n", r"accounts\.alice\.enabeld: unknown key"),
        ("[accounts.alice]\nconfig = 3\n", r"accounts\.alice\.config: expected table, got int"),
        ("[accounts.alice]\nenabled = 1\n", r"accounts\.alice\.enabled: expected bool, got int"),
        ("[[relations]]\nmodule = 'm'\n", r"relations\[0\]: name exactly two of account, platform, module"),
        (
            "[[relations]]\nmodule = 'm'\naccount = 'a'\npriority = 'high'\n",
            r"relations\[0\]\.priority: expected",
        ),
        ("[[schedules]]\nmodule = 'm'\n", r"schedules\[0\]: missing key cron"),
        ("[middlewares.x]\nkind = 'upload'\n", r"middlewares\.x\.kind: must be 'download' or 'data'"),
        (
            "[modules.m]\nmiddlewares = [{ position = 1 }]\n",
            r"modules\.m\.middlewares\[0\]: missing key name",
        ),
        ("[accounts.alice.credentials.shop]\npassword = 5\n", r"credentials\.shop\.password: expected str"),
        ("[accounts\n", r"not valid TOML: "),
    ],
)
def test_errors_name_the_file_and_the_key_path(tmp_path: pathlib.Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)

    with pytest.raises(TenantsFileError, match=message) as raised:
        load_tenants(path)

    assert str(raised.value).startswith(f"{path}: ")


def test_missing_and_unknown_files_are_named(tmp_path: pathlib.Path) -> None:
    with pytest.raises(TenantsFileError, match=r"nope\.toml: cannot read"):
        load_tenants(tmp_path / "nope.toml")
    (tmp_path / "t.ini").write_text("")
    with pytest.raises(TenantsFileError, match=r"unknown tenants file type '\.ini'"):
        load_tenants(tmp_path / "t.ini")


def test_a_mapping_is_checked_the_same_way() -> None:
    with pytest.raises(TenantsFileError, match=r"^<tenants>: platforms\.shop: expected a table, got list"):
        check_tenants({"platforms": {"shop": []}})


@pytest.mark.anyio
async def test_import_then_export_round_trips(
    url: str, toml_file: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    key = generate_key()
    async with Store.open(url, key=key) as store:
        counts = await store.import_tenants(load_tenants(toml_file), source=str(toml_file))
        exported = await store.export_tenants(secrets=True)
        without_secrets = await store.export_tenants()
        again = await store.import_tenants(exported)
        after_second_import = await store.export_tenants(secrets=True)

    assert exported == EXPORTED
    assert after_second_import == exported
    assert counts["accounts"] == 1 and counts["credentials"] == 1
    assert again["module_accounts"] == 1
    assert "credentials" not in without_secrets["accounts"]["alice"]
    assert {k: v for k, v in without_secrets.items() if k != "accounts"} == {
        k: v for k, v in EXPORTED.items() if k != "accounts"
    }


@pytest.mark.anyio
async def test_an_export_imports_into_an_empty_store_and_exports_the_same(
    url: str, toml_file: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    async with Store.open(url) as store:
        await store.import_tenants(load_tenants(toml_file))
        exported = await store.export_tenants(secrets=True)
    other = f"sqlite:///{tmp_path}/other.db"

    async with Store.open(other, migrate=True) as store:
        await store.import_tenants(json.loads(json.dumps(exported)))
        assert await store.export_tenants(secrets=True) == exported
        (assignment,) = await store.assignments()

    assert assignment.config == {"base_url": "https://shop.example", "pages": 3, "region": "eu"}


@pytest.mark.anyio
async def test_import_leaves_unnamed_fields_alone(url: str) -> None:
    async with Store.open(url) as store:
        await store.import_tenants({"accounts": {"alice": {"enabled": False, "config": {"a": 1}}}})
        await store.import_tenants({"accounts": {"alice": {"config": {"b": 2}}}})

        (alice,) = await store.accounts()

    assert (alice.enabled, alice.config) == (False, {"b": 2})


@pytest.mark.anyio
async def test_a_reference_to_nothing_is_named_and_nothing_is_written(url: str) -> None:
    tenants: dict[str, Any] = {
        "accounts": {"alice": {}},
        "relations": [{"account": "alice", "platform": "shopp"}],
    }
    async with Store.open(url) as store:
        with pytest.raises(TenantsFileError, match=r"t\.toml: relations\[0\]\.platform: no platform 'shopp'"):
            await store.import_tenants(tenants, source="t.toml")

        assert await store.accounts() == []
