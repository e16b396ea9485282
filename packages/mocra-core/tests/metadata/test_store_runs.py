"""Runs whose work comes from a mocra-store (SQLite, PostgreSQL): rows, logins, schedules, run records."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import pytest

from mocra_core import BackendUnavailable, ConfigError, Ctx, Mocra, MocraBuilder, Response, Seeds, Spider
from mocra_core.modules import Login, LoginSession, Module, Node, TaskCtx
from mocra_core.testing import LocalServer, ServerResponse
from mocra_store import Store

pytestmark = pytest.mark.anyio


class Visit(Spider[dict[str, Any]]):
    """GETs `/<name>/<account>` for its run, and emits the run's account and meta."""

    def __init__(self, name: str, base: str) -> None:
        self.name = name  # type: ignore[misc]
        self.base = base

    async def start(self, seeds: Seeds) -> None:
        seeds.get(f"{self.base}/{self.name}/{seeds.routing.account}")

    async def parse(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
        ctx.emit({"account": response.routing.account, "meta": dict(response.meta)})


class Prices(Visit):
    version = "2"
    config = {"pages": 1, "source": "code"}


class Stock(Visit):
    pass


def tenants(*, disabled: tuple[str, str] = ("stock", "carol")) -> dict[str, Any]:
    accounts = ("alice", "bob", "carol")
    return {
        "platforms": {"shop": {"config": {"source": "platform", "currency": "EUR"}}},
        "modules": {
            "prices": {"version": "2", "config": {"source": "module"}},
            "stock": {},
            "ghost": {},
        },
        "accounts": {name: {} for name in accounts},
        "relations": [
            *({"account": name, "platform": "shop"} for name in accounts),
            {"module": "prices", "platform": "shop"},
            {"module": "stock", "platform": "shop"},
            {"module": "ghost", "platform": "shop"},
            {"module": "ghost", "account": "alice"},
            *(
                {
                    "module": module,
                    "account": name,
                    "enabled": (module, name) != disabled,
                    "config": {"who": name},
                }
                for module in ("prices", "stock")
                for name in accounts
            ),
        ],
    }


async def fill(url: str, data: dict[str, Any]) -> None:
    async with Store.open(url) as store:
        await store.import_tenants(data)


def serve_everything(server: LocalServer, paths: list[str]) -> None:
    for path in paths:
        server.route(path, ServerResponse(body="ok"))


def builder() -> MocraBuilder:
    return Mocra.builder().set("crawl.obey_robots=false", "retry.base=0.01", "retry.max_delay=0.05")


async def test_a_store_of_3_accounts_x_2_modules_seeds_exactly_its_enabled_rows(
    store_url: str, server: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    await fill(store_url, tenants())
    expected = [f"/{m}/{a}@shop" for m in ("prices", "stock") for a in ("alice", "bob", "carol")]
    expected.remove("/stock/carol@shop")
    serve_everything(server, expected + ["/stock/carol@shop"])
    items: list[dict[str, Any]] = []

    class Collect:
        async def open(self) -> None: ...
        async def write(self, batch: list[dict[str, Any]]) -> None:
            items.extend(batch)

        async def close(self) -> None: ...

    result = await (
        builder()
        .store(store_url)
        .spider(Prices("prices", server.base_url), Collect())  # type: ignore[arg-type]
        .spider(Stock("stock", server.base_url), Collect())  # type: ignore[arg-type]
        .run_async()
    )

    assert result.ok, result.failures
    assert dict(server.hits) == dict.fromkeys(expected, 1)
    prices_alice = next(i for i in items if i["account"] == "alice@shop" and i["meta"].get("pages"))
    # code defaults < platform < module < relation rows
    assert prices_alice["meta"] == {"pages": 1, "source": "module", "currency": "EUR", "who": "alice"}
    log = caplog.text
    assert "carol/shop/stock: skipped, disabled (module×account stock/carol)" in log
    assert "alice/shop/ghost: skipped, this run defines no module 'ghost'" in log


async def test_a_version_mismatch_is_reported_and_its_rows_skipped(
    store_url: str, server: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    data = tenants()
    data["modules"]["prices"]["version"] = "3"
    await fill(store_url, data)
    serve_everything(server, [f"/stock/{a}@shop" for a in ("alice", "bob")])
    result = await (
        builder()
        .store(store_url)
        .spider(Prices("prices", server.base_url))
        .spider(Stock("stock", server.base_url))
    ).run_async()
    assert result.ok, result.failures
    assert sorted(server.hits) == ["/stock/alice@shop", "/stock/bob@shop"]
    assert "the store has version '3' of 'prices' and the code '2'" in caplog.text


class Entry(Node[dict[str, Any]]):
    async def generate(self, ctx: TaskCtx[dict[str, Any]]) -> None:
        ctx.get(f"{ctx.meta['base']}/portal/{ctx.routing.account}")

    async def parse(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
        ctx.emit({"account": response.routing.account})


class Portal(Module[dict[str, Any]]):
    name = "portal"

    def nodes(self) -> list[Node[dict[str, Any]]]:
        return [Entry()]

    async def login(self, session: LoginSession) -> Login | None:
        account = session.account
        assert account is not None
        base = account.extra["base"]
        answer = await session.post(f"{base}/login", form={"user": account.username, "pw": account.password})
        if answer.status != 200:
            raise session.fail(f"login answered {answer.status}")
        return Login(headers={"X-Session": account.username})


async def test_logins_take_their_credentials_from_the_store(store_url: str, server: LocalServer) -> None:
    serve_everything(server, ["/login", "/portal/alice@shop", "/portal/bob@shop"])
    base = server.base_url
    await fill(
        store_url,
        {
            "platforms": {"shop": {}},
            "modules": {"portal": {"config": {"base": base}}},
            "accounts": {
                "alice": {
                    "credentials": {
                        "shop": {"username": "alice", "password": "pw-a", "extra": {"base": base}}
                    }
                },
                "bob": {
                    "credentials": {"shop": {"username": "bob", "password": "pw-b", "extra": {"base": base}}}
                },
            },
            "relations": [
                {"account": "alice", "platform": "shop"},
                {"account": "bob", "platform": "shop"},
                {"module": "portal", "platform": "shop"},
                {"module": "portal", "account": "alice"},
                {"module": "portal", "account": "bob"},
            ],
        },
    )
    result = await builder().store(store_url).module(Portal()).run_async()
    assert result.ok, result.failures
    logins = sorted(
        (parse_qs(r.body.decode())["user"][0], parse_qs(r.body.decode())["pw"][0])
        for r in server.requests
        if r.path == "/login"
    )
    assert logins == [("alice", "pw-a"), ("bob", "pw-b")]
    sessions = {r.path: r.headers.get("x-session") for r in server.requests if r.path.startswith("/portal/")}
    assert sessions == {"/portal/alice@shop": "alice", "/portal/bob@shop": "bob"}


async def test_every_run_writes_its_record(store_url: str, server: LocalServer) -> None:
    await fill(store_url, tenants())
    serve_everything(server, [f"/prices/{a}@shop" for a in ("alice", "bob", "carol")])
    result = (
        await builder()
        .store(store_url)
        .set("crawl.job=records")
        .spider(Prices("prices", server.base_url))
        .run_async()
    )
    assert result.ok, result.failures
    async with Store.open(store_url) as store:
        runs = await store.runs(module="prices")
    assert sorted((r.account, r.platform, r.status) for r in runs) == [
        ("alice", "shop", "succeeded"),
        ("bob", "shop", "succeeded"),
        ("carol", "shop", "succeeded"),
    ]
    assert all(r.run_id.startswith("records/prices:") and r.finished_at is not None for r in runs)
    assert all(r.stats["pages"] == 1 and r.stats["reason"] == "finished" for r in runs)


async def test_a_store_schedule_fires_through_cron(store_url: str, server: LocalServer) -> None:
    data = tenants()
    data["schedules"] = [{"module": "prices", "account": "bob", "cron": "* * * * * *"}]
    await fill(store_url, data)
    serve_everything(server, [f"/prices/{a}@shop" for a in ("alice", "bob", "carol")])
    result = await (
        builder()
        .store(store_url)
        .set("crawl.cron_max_fires=1")
        .spider(Prices("prices", server.base_url))
        .run_async()
    )
    assert result.ok, result.failures
    # alice and carol start with the crawl; bob only when the schedule fires (once: cron_max_fires)
    assert dict(server.hits) == {"/prices/alice@shop": 1, "/prices/carol@shop": 1, "/prices/bob@shop": 1}
    async with Store.open(store_url) as store:
        runs = await store.runs(module="prices")
    (bob,) = [r for r in runs if r.account == "bob"]
    assert ":cron" in bob.run_id


async def test_a_store_that_is_down_stops_the_run_at_start(server: LocalServer) -> None:
    server.route("/prices/x", ServerResponse(body="never"))
    down = "postgresql://mocra:s3cret@127.0.0.1:1/tenants"
    with pytest.raises(
        BackendUnavailable, match=r"store backend at 'postgresql://mocra:\*\*\*@127\.0\.0\.1:1/tenants'"
    ) as caught:
        await builder().store(down).spider(Prices("prices", server.base_url)).run_async()
    assert "s3cret" not in str(caught.value)
    assert not server.hits


async def test_a_store_not_migrated_names_the_upgrade(tmp_path: Any, server: LocalServer) -> None:
    url = f"sqlite:///{tmp_path}/empty.db"
    with pytest.raises(ConfigError, match=r"store upgrade"):
        await builder().store(url).spider(Prices("prices", server.base_url)).run_async()
    assert not server.hits
