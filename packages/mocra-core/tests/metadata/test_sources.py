"""One suite over both metadata sources: the code's modules and a store holding the same tenants."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from mocra_core import ConfigError
from mocra_core.metadata import CodeSource, MetadataSource, RunLog, plan_work
from mocra_core.modules import Account, CompiledModule, Module, Node, compile_module
from mocra_store import Store

pytestmark = pytest.mark.anyio


class Only(Node[None]):
    pass


class Shop(Module[None]):
    name = "shop"
    version = "1"
    config = {"pages": 2}
    cron = "0 * * * *"
    accounts = (
        Account(name="alice", username="alice", password="pw-a"),
        Account(name="bob", username="bob", password="pw-b", extra={"otp": "1"}),
    )

    def nodes(self) -> list[Node[None]]:
        return [Only()]


SHOP: CompiledModule = compile_module(Shop())


@asynccontextmanager
async def code(_: str) -> AsyncIterator[MetadataSource]:
    yield CodeSource([SHOP])


@asynccontextmanager
async def store(url: str) -> AsyncIterator[MetadataSource]:
    async with Store.open(url) as opened:
        await opened.import_tenants(
            {
                "modules": {"shop": {"version": "1"}},
                "accounts": {
                    "alice": {"credentials": {"*": {"username": "alice", "password": "pw-a"}}},
                    "bob": {
                        "credentials": {"*": {"username": "bob", "password": "pw-b", "extra": {"otp": "1"}}}
                    },
                },
                "platforms": {"web": {}},
                "relations": [
                    {"module": "shop", "platform": "web"},
                    *({"account": name, "platform": "web"} for name in ("alice", "bob")),
                    *({"module": "shop", "account": name} for name in ("alice", "bob")),
                ],
                "schedules": [{"module": "shop", "cron": "0 * * * *"}],
            }
        )
        yield opened


@pytest.fixture(params=[code, store], ids=["code", "store"])
async def source(request: pytest.FixtureRequest, store_url: str) -> AsyncIterator[MetadataSource]:
    async with request.param(store_url) as opened:
        yield opened


async def test_it_is_a_metadata_source(source: MetadataSource) -> None:
    assert isinstance(source, MetadataSource)


async def test_rows_name_the_module_and_its_accounts(source: MetadataSource) -> None:
    rows = await source.assignments()
    assert sorted((row.module, row.account, row.version, row.enabled) for row in rows) == [
        ("shop", "alice", "1", True),
        ("shop", "bob", "1", True),
    ]


async def test_credentials_are_the_accounts(source: MetadataSource) -> None:
    bob = await source.credentials("bob")
    assert bob is not None and (bob.username, bob.password, dict(bob.extra)) == ("bob", "pw-b", {"otp": "1"})
    assert "pw-b" not in repr(bob)
    assert await source.credentials("nobody") is None


async def test_the_plan_is_the_codes_own(source: MetadataSource) -> None:
    plan = await plan_work({"shop": SHOP}, source)
    (module,) = plan.modules.values()
    assert module.starts == ()  # on cron
    (entry,) = module.schedules
    assert entry.cron == "0 * * * *"
    assert sorted(start.tenant or "" for start in entry.starts) == ["alice", "bob"]
    assert all(start.meta == {"pages": 2} for start in entry.starts)
    assert sorted((a.username, a.password) for a in module.accounts) == [("alice", "pw-a"), ("bob", "pw-b")]
    assert plan.runs == 2 and not plan.skipped


async def test_a_bad_cron_in_a_source_names_the_module() -> None:
    class Bad(CodeSource):
        async def schedules(self) -> list[Any]:
            from mocra_core.metadata import CodeSchedule

            return [CodeSchedule("shop", None, None, "every tuesday")]

    with pytest.raises(ConfigError, match=r"shop\.schedule"):
        await plan_work({"shop": SHOP}, Bad([SHOP]))


def test_a_store_is_a_run_log() -> None:
    assert isinstance(Store("sqlite:///:memory:"), RunLog)
