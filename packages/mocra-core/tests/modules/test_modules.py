"""Multi-node modules through the real engine: routing, gates, fan-in, stop, login, cron."""

from __future__ import annotations

from collections import Counter
from http.cookies import SimpleCookie
from typing import Any

import pytest

from mocra_core import ConfigError, Mocra, MocraBuilder, Response, on_item
from mocra_core.modules import Account, Ctx, Login, LoginSession, Module, Node, TaskCtx
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def builder() -> MocraBuilder:
    return Mocra.builder().set("crawl.obey_robots=false", "retry.base=0.01", "retry.max_delay=0.05")


@pytest.fixture
async def server() -> Any:
    async def echo(request: ServerRequest) -> ServerResponse:
        return ServerResponse(body=f"<p>{request.path}</p>")

    site = LocalServer(fallback=echo)
    async with site.running():
        yield site


class Calls:
    def __init__(self) -> None:
        self.generate: Counter[str] = Counter()
        self.parse: Counter[str] = Counter()


def fetch_node(node_id: str, calls: Calls, *, route: str = "next", fan_in: bool = False) -> Node[Any]:
    """A node that fetches /<id>?<meta> and then routes (next / nothing / emit)."""

    class Fetch(Node[Any]):
        id = node_id

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            calls.generate[node_id] += 1
            ctx.get(f"{ctx.meta['base']}/{node_id}/{ctx.meta.get('n', 0)}")

        async def parse(self, response: Response, ctx: Ctx[Any]) -> None:
            calls.parse[node_id] += 1
            if route == "next":
                ctx.next({f"seen_{node_id}": True})
            elif route == "emit":
                ctx.emit({"node": node_id, **ctx.meta})

    Fetch.fan_in = fan_in
    return Fetch()


def chain(name: str, *nodes: Node[Any], base: str) -> Module[Any]:
    class Chain(Module[Any]):
        def nodes(self) -> list[Node[Any]]:
            return list(nodes)

    Chain.name = name
    module = Chain()
    entry = nodes[0]
    original = entry.generate

    async def seeded(ctx: TaskCtx[Any]) -> None:
        ctx.task.meta.setdefault("base", base)
        ctx.task.meta.setdefault("start", "yes")
        await original(ctx)

    entry.generate = seeded  # type: ignore[method-assign]
    return module


async def test_chain_routing_keeps_metadata(builder: MocraBuilder, server: LocalServer) -> None:
    calls = Calls()
    items: list[dict[str, Any]] = []
    module = chain(
        "chain", fetch_node("a", calls), fetch_node("b", calls), fetch_node("c", calls, route="emit"),
        base=server.base_url,
    )  # fmt: skip

    result = await builder.module(module, on_item(items.append)).run_async()

    assert result.ok, result.failures
    assert items == [{"node": "c", "base": server.base_url, "start": "yes", "seen_a": True, "seen_b": True}]
    assert set(server.hits) == {"/a/0", "/b/0", "/c/0"}


async def test_fan_out_reaches_every_successor_and_to_targets_a_node(
    builder: MocraBuilder, server: LocalServer
) -> None:
    from mocra_dag import Graph

    calls = Calls()
    items: list[dict[str, Any]] = []

    class Root(Node[Any]):
        id = "root"

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            ctx.get(f"{server.base_url}/root")

        async def parse(self, response: Response, ctx: Ctx[Any]) -> None:
            ctx.next({"n": 1, "base": server.base_url})
            ctx.to("right", {"n": 2, "base": server.base_url})

    class Forked(Module[Any]):
        name = "forked"

        def nodes(self) -> Graph[Node[Any]]:
            return (
                Graph.builder()
                .node("root", Root())
                .node("left", fetch_node("left", calls, route="emit"), after="root")
                .node("right", fetch_node("right", calls, route="emit"), after="root")
                .build()
            )

    result = await builder.module(Forked(), on_item(items.append)).run_async()

    assert result.ok, result.failures
    assert sorted((i["node"], i["n"]) for i in items) == [("left", 1), ("right", 1), ("right", 2)]


async def test_advance_gate_starts_each_successor_once_per_run(
    builder: MocraBuilder, server: LocalServer
) -> None:
    calls = Calls()

    class Pages(Node[Any]):
        id = "pages"

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            for n in range(5):
                ctx.get(f"{server.base_url}/pages/{n}")

        async def parse(self, response: Response, ctx: Ctx[Any]) -> None:
            calls.parse["pages"] += 1  # no tasks, no follow-ups: the gate decides

    class Gated(Module[Any]):
        name = "gated"
        accounts = (Account(name="one"), Account(name="two"))

        def nodes(self) -> list[Node[Any]]:
            return [Pages(), fetch_node("after", calls, route="none")]

    async def with_base(ctx: TaskCtx[Any]) -> None:
        calls.generate["after"] += 1
        ctx.get(f"{server.base_url}/after/{ctx.account}")

    module = Gated()
    module_nodes = module.nodes()
    module.nodes = lambda: module_nodes  # type: ignore[method-assign]
    module_nodes[1].generate = with_base  # type: ignore[method-assign]

    result = await builder.module(module).run_async()

    assert result.ok, result.failures
    assert calls.parse["pages"] == 10  # 5 pages x 2 accounts
    assert calls.generate["after"] == 2  # once per run (one run per account)
    assert server.hits["/after/one"] == server.hits["/after/two"] == 1


async def test_stop_signal_halts_the_run(builder: MocraBuilder, server: LocalServer) -> None:
    parsed: list[str] = []

    class Many(Node[Any]):
        id = "many"

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            for n in range(30):
                ctx.get(f"{server.base_url}/many/{n}")

        async def parse(self, response: Response, ctx: Ctx[Any]) -> None:
            parsed.append(response.url)
            if len(parsed) == 2:
                ctx.stop("found what we wanted")

    class Stoppable(Module[Any]):
        name = "stoppable"

        def nodes(self) -> list[Node[Any]]:
            return [Many()]

    result = await builder.set("crawl.concurrency=1", "crawl.parse_workers=1").module(Stoppable()).run_async()

    assert result.reason == "finished"
    assert len(parsed) < 30
    assert result.stats.dropped["stopped"] + len(parsed) == 30


async def test_fallback_gate_reinjects_the_predecessor_request_once(
    builder: MocraBuilder, server: LocalServer
) -> None:
    calls = Calls()

    class Broken(Node[Any]):
        id = "broken"

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            calls.generate["broken"] += 1
            raise RuntimeError("cannot build the request")

    module = chain("fallback", fetch_node("first", calls), Broken(), base=server.base_url)

    result = await builder.module(module).run_async()

    assert server.hits["/first/0"] == 2  # fetched, then re-injected once
    assert calls.generate["broken"] == 2
    assert result.dead_letters == 1
    assert "cannot build the request" in result.failures[0].reason


async def test_fan_in_runs_once_after_all_upstream_work(builder: MocraBuilder, server: LocalServer) -> None:
    calls = Calls()
    merged: list[dict[str, Any]] = []

    class List(Node[Any]):
        id = "list"
        advance = False

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            ctx.get(f"{server.base_url}/list")

        async def parse(self, response: Response, ctx: Ctx[Any]) -> None:
            for n in range(7):
                ctx.next({"n": n, "base": server.base_url})

    class Detail(Node[Any]):
        id = "detail"

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            ctx.get(f"{server.base_url}/detail/{ctx.meta['n']}")

        async def parse(self, response: Response, ctx: Ctx[Any]) -> None:
            calls.parse["detail"] += 1
            ctx.next({"n": ctx.meta["n"], "size": len(response.body)})

    class Merge(Node[Any]):
        id = "merge"
        fan_in = True

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            calls.generate["merge"] += 1
            assert calls.parse["detail"] == 7  # every detail was parsed first
            ctx.emit({"details": sorted(i["n"] for i in ctx.inputs)})

    class Merged(Module[Any]):
        name = "merged"

        def nodes(self) -> list[Node[Any]]:
            return [List(), Detail(), Merge()]

    result = await builder.module(Merged(), on_item(merged.append)).run_async()

    assert result.ok, result.failures
    assert calls.generate["merge"] == 1
    assert merged == [{"details": list(range(7))}]


class LoginSite:
    def __init__(self) -> None:
        self.logins: Counter[str] = Counter()
        self.expire_once = {"bob"}
        self.seen_cookies: list[str] = []

    async def login(self, request: ServerRequest) -> ServerResponse:
        from urllib.parse import parse_qs

        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        if form.get("password") != "secret":
            return ServerResponse(401, "bad credentials")
        self.logins[form["user"]] += 1
        token = f"{form['user']}-{self.logins[form['user']]}"
        return ServerResponse(body="ok", headers={"Set-Cookie": f"session={token}; Path=/"})

    async def data(self, request: ServerRequest) -> ServerResponse:
        cookie = SimpleCookie(request.headers.get("cookie", ""))
        if "session" not in cookie:
            return ServerResponse(401, "login required")
        token = cookie["session"].value
        user = token.split("-")[0]
        if user in self.expire_once and token.endswith("-1"):  # bob's first session is stale
            return ServerResponse(401, "session expired")
        self.seen_cookies.append(token)
        return ServerResponse(body=f"<p>{token}</p>")


def login_module(base: str, accounts: tuple[Account, ...]) -> Module[Any]:
    class Data(Node[Any]):
        id = "data"

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            for n in range(3):
                ctx.get(f"{base}/data/{n}", meta={"who": ctx.account})

        async def parse(self, response: Response, ctx: Ctx[Any]) -> None:
            ctx.emit({"who": ctx.meta["who"], "status": response.status})

    class Members(Module[Any]):
        name = "members"
        relogin_on = frozenset({401})

        def nodes(self) -> list[Node[Any]]:
            return [Data()]

        async def login(self, session: LoginSession) -> Login | None:
            assert session.account is not None
            response = await session.post(
                f"{base}/login", form={"user": session.account.username, "password": session.account.password}
            )
            if response.status != 200:
                raise session.fail(f"HTTP {response.status} from the login form")
            return Login(headers={"X-Account": session.account.name})

    Members.accounts = accounts
    return Members()


async def test_login_runs_once_per_account_and_its_cookies_reach_every_request(
    builder: MocraBuilder, server: LocalServer
) -> None:
    site = LoginSite()
    server.route("/login", site.login)
    for n in range(3):
        server.route(f"/data/{n}", site.data)
    accounts = (Account(name="alice", username="alice", password="secret"),
                Account(name="bob", username="bob", password="secret"))  # fmt: skip
    items: list[dict[str, Any]] = []

    result = await builder.module(login_module(server.base_url, accounts), on_item(items.append)).run_async()

    assert result.ok, result.failures
    assert site.logins == {"alice": 1, "bob": 2}  # bob's first session expired once: logged in again
    assert sorted((i["who"], i["status"]) for i in items) == [("alice", 200)] * 3 + [("bob", 200)] * 3
    assert sorted(site.seen_cookies) == ["alice-1"] * 3 + ["bob-2"] * 3
    data_requests = [r for r in server.requests if r.path.startswith("/data/")]
    assert {r.headers["x-account"] for r in data_requests} == {"alice", "bob"}


async def test_failed_login_is_a_clear_error(builder: MocraBuilder, server: LocalServer) -> None:
    site = LoginSite()
    server.route("/login", site.login)
    accounts = (Account(name="mallory", username="mallory", password="guess"),)

    result = await builder.module(login_module(server.base_url, accounts)).run_async()

    assert result.dead_letters == 3
    assert all(
        "login of account 'mallory' in module 'members' failed: HTTP 401 from the login form" in f.reason
        for f in result.failures
    )
    assert server.hits["/login"] == 1  # not retried for every request


async def test_cron_fires_on_schedule_without_a_database(builder: MocraBuilder, server: LocalServer) -> None:
    from mocra_core import Spider

    runs: list[str | None] = []

    class Ticker(Spider[Any]):
        name = "ticker"
        cron = "* * * * * *"  # every second (6 fields, seconds first)
        start_urls = (server.url("/tick"),)

        async def parse(self, response: Response, ctx: Ctx[Any]) -> None:
            runs.append(response.routing.run)

    result = await builder.set("crawl.cron_max_fires=2").spider(Ticker()).run_async()

    assert result.reason == "finished"
    assert server.hits["/tick"] == 2  # each firing crawls afresh (dedup is per cron run)
    assert len(set(runs)) == 2


def test_invalid_graphs_name_the_node() -> None:
    class Dangling(Module[Any]):
        name = "dangling"

        def nodes(self) -> Any:
            from mocra_dag import Graph

            return Graph.builder().node("a", Node()).node("b", Node(), after="missing").build()

    with pytest.raises(ConfigError, match="missing"):
        Mocra.builder().module(Dangling())

    class NoNodes(Module[Any]):
        name = "none"

    with pytest.raises(ConfigError, match="must override nodes"):
        Mocra.builder().module(NoNodes())


async def test_start_launches_another_module_with_the_meta(
    builder: MocraBuilder, server: LocalServer
) -> None:
    calls = Calls()
    items: list[dict[str, Any]] = []

    class Kickoff(Node[Any]):
        id = "kickoff"

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            ctx.get(f"{server.base_url}/kickoff")

        async def parse(self, response: Response, ctx: Ctx[Any]) -> None:
            ctx.start("worker", {"base": server.base_url, "n": 7, "from": "kickoff"})

    class First(Module[Any]):
        name = "first"

        def nodes(self) -> list[Node[Any]]:
            return [Kickoff()]

    class Worker(Module[Any]):
        name = "worker"
        autostart = False  # only started by `first`

        def nodes(self) -> list[Node[Any]]:
            return [fetch_node("work", calls, route="emit")]

    sink = on_item(items.append)
    result = await builder.module(First(), sink).module(Worker(), sink).run_async()

    assert result.ok, result.failures
    assert [(i["n"], i["from"]) for i in items] == [(7, "kickoff")]


async def test_routing_to_an_unknown_node_is_a_clear_error(
    builder: MocraBuilder, server: LocalServer
) -> None:
    class Lost(Node[Any]):
        id = "lost"

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            ctx.get(f"{server.base_url}/lost")

        async def parse(self, response: Response, ctx: Ctx[Any]) -> None:
            ctx.to("nowhere")

    class Module1(Module[Any]):
        name = "lostmodule"

        def nodes(self) -> list[Node[Any]]:
            return [Lost()]

    result = await builder.module(Module1()).run_async()

    assert result.dead_letters == 1
    assert "routed to unknown node 'nowhere'" in result.failures[0].reason
