"""mocra-store on its own: a tenants file in, assignments with merged config and an encrypted login out.

Run: python examples/store_tenants.py   (needs only `pip install 'mocra-store[encryption]'`)
"""

from __future__ import annotations

import asyncio
import pathlib
import tempfile

from mocra_store import Store, generate_key, load_tenants

TENANTS = """
[platforms.shop]
config = { base_url = "https://shop.example", pages = 1 }

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
config = { pages = 3 }

[[relations]]
module = "prices"
account = "bob"
enabled = false

[[schedules]]
module = "prices"
account = "alice"
cron = "0 * * * *"
"""


async def main(folder: pathlib.Path) -> None:
    tenants = folder / "tenants.toml"
    tenants.write_text(TENANTS)
    url = f"sqlite:///{folder / 'mocra.db'}"

    async with Store.open(url, key=generate_key(), migrate=True) as store:
        print("imported:", await store.import_tenants(load_tenants(tenants), source=str(tenants)))
        for a in await store.assignments(include_disabled=True):
            state = "on" if a.enabled else f"off ({a.disabled_by})"
            tools = [(m.name, m.config) for m in a.middlewares]
            print(f"{a.account}/{a.platform}/{a.module} v{a.version} priority {a.priority} {state}")
            print("  config:", a.config, "middlewares:", tools)
        print("login:", await store.credentials("alice", "shop"))
        print("schedules:", [(s.module, s.account, s.cron) for s in await store.schedules()])
        await store.run_started("run-1", account="alice", platform="shop", module="prices", worker="w1")
        await store.run_finished("run-1", status="succeeded", stats={"items": 42})
        print("runs:", [(r.run_id, r.status, r.stats) for r in await store.runs()])


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(main(pathlib.Path(folder)))
