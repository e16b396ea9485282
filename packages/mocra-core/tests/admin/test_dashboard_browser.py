"""The dashboard in a real browser (Debian's Chromium driven by Playwright) over a real crawl.

A slow site (20 ms a page, one download at a time) keeps a crawl going for several seconds while the page
follows it: no console errors, the pages counter moves, Pause holds the crawl (the site stops being hit,
the job's control says `paused`), Resume lets it go on, Stop ends the run as `stopped`.
`MOCRA_DASHBOARD_SCREENSHOT=docs/images/dashboard.png` also writes the screenshot there (for the docs).
"""

from __future__ import annotations

import contextlib
import functools
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import anyio
import anyio.from_thread
import httpx
import msgspec
import pytest

from mocra_core import CrawlResult, Ctx, Mocra, Response, Spider
from mocra_core.admin import AdminContext, serving
from mocra_core.config import AdminSettings
from mocra_core.control import ClusterNode, JobRegistry, JobSnapshot, WorkerInfo
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

from .fake_jobs import FakeView  # type: ignore[import-not-found]

CHROMIUM = pathlib.Path("/usr/bin/chromium")
STATIC = pathlib.Path(__file__).parents[2] / "src" / "mocra_core" / "admin" / "static"
KEY = "dashboard-test-key"
REDIS_URL = "redis://127.0.0.1:6379/15"
JOB = "dashboard-demo"
SCREENSHOT = os.environ.get("MOCRA_DASHBOARD_SCREENSHOT")
PAGES = 3000 if SCREENSHOT else 600  # x 20 ms, one at a time: seconds of crawling, cut short by Stop
BROKEN_EVERY = 40  # page n links to /broken/n (HTTP 500: retried, then dead-lettered) when n % 40 == 5


class TreeSpider(Spider[dict[str, Any]]):
    """Follows every link of a binary tree of pages; one item per page."""

    name = "tree"

    def __init__(self, start: str) -> None:
        self.start_urls = [start]  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
        ctx.emit({"url": response.url})
        for href in response.links():
            ctx.follow(href)


class Site:
    """A binary tree of `PAGES` pages, `/p/0` its root, each served in 20 ms; `served` counts them.

    Every page links back to the root too (a duplicate to drop), and a few link to a page that fails.
    """

    def __init__(self) -> None:
        self.served = 0

    async def page(self, request: ServerRequest) -> ServerResponse:
        await anyio.sleep(0.02)
        self.served += 1
        kind, n = request.path.rsplit("/", 1)
        if kind == "/broken":
            return ServerResponse(500, "broken")
        hrefs = [f"/p/{c}" for c in (2 * int(n) + 1, 2 * int(n) + 2) if c < PAGES] + ["/p/0"]
        if int(n) % BROKEN_EVERY == 5:
            hrefs.append(f"/broken/{n}")
        links = "".join(f'<a href="{href}">{href}</a>' for href in hrefs)
        return ServerResponse(body=f"<html><title>page {n}</title><body>{links}</body></html>")


class Crawl:
    """A crawl of the slow site by one or more workers in a portal thread (the test drives a browser).

    Each worker serves its admin API as a user would start it (`builder.api(...)`, writes keyed): `apis`.
    Two more servers read the first worker's registry: `keyless` (no key configured) and `locked` (reads
    keyed too).
    """

    def __init__(self, job: str, site: Site, apis: list[str], keyless: str, locked: str) -> None:
        self.job = job
        self.site = site
        self.apis = apis
        self.api = apis[0]
        self.keyless = keyless
        self.locked = locked
        self.results: list[Future[CrawlResult]] = []

    @property
    def result(self) -> Future[CrawlResult]:
        """The first worker's run."""
        return self.results[0]

    def hits(self) -> int:
        """Pages the site has served so far (the server side of the crawl)."""
        return self.site.served

    def control(self, api: str | None = None) -> str:
        answer = httpx.get(f"{api or self.api}/api/v1/jobs/{self.job}", timeout=5)
        answer.raise_for_status()
        return str(answer.json()["control"])


@contextlib.contextmanager
def crawling(*settings: str, job: str = JOB, workers: int = 1) -> Iterator[Crawl]:
    """`workers` workers of `job` crawling the slow site, each with its admin server, until Stop."""
    site = Site()
    registries = [JobRegistry() for _ in range(workers)]

    def admin(registry: JobRegistry, settings: AdminSettings) -> AdminContext:
        return AdminContext(jobs=registry, readiness=lambda: (True, "active"), settings=settings)

    with contextlib.ExitStack() as stack:
        portal = stack.enter_context(anyio.from_thread.start_blocking_portal())

        def enter(manager: contextlib.AbstractAsyncContextManager[Any]) -> Any:
            return stack.enter_context(portal.wrap_async_context_manager(manager))

        site_url = enter(LocalServer(fallback=site.page).running())
        apis = [f"http://127.0.0.1:{_free_port()}" for _ in registries]
        keyless = enter(serving(admin(registries[0], AdminSettings()), "0")).url
        locked = enter(serving(admin(registries[0], AdminSettings(keys=[KEY], read_keys=True)), "0")).url
        run = Crawl(job, site, apis, keyless, locked)
        for registry, api in zip(registries, apis, strict=True):
            builder = (
                Mocra.builder()
                .set(
                    f"crawl.job={job}",
                    "crawl.obey_robots=false",
                    "crawl.concurrency=1",
                    "crawl.per_domain_concurrency=1",
                    "retry.max_retries=1",
                    "retry.base=0.01",
                    "retry.max_delay=0.05",
                    f'admin.keys=["{KEY}"]',
                    *settings,
                )
                .registry(registry)
                .api(api.removeprefix("http://"))
                .spider(TreeSpider(f"{site_url}/p/0"))
            )
            run.results.append(portal.start_task_soon(builder.run_async))
        for api in apis:
            _wait(f"the admin API on {api}", functools.partial(_answers, api))
        try:
            yield run
        finally:
            if not all(result.done() for result in run.results):
                httpx.post(f"{run.api}/api/v1/jobs/{job}/stop", headers={"X-API-Key": KEY}, timeout=5)
            for result in run.results:
                result.result(timeout=30)


@pytest.fixture
def crawl() -> Iterator[Crawl]:
    with crawling() as run:
        yield run


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(api: str) -> bool:
    try:
        return httpx.get(f"{api}/health", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def _wait(what: str, check: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"needs Debian's chromium at {CHROMIUM} (.ci/run installs it)"
)
def test_the_dashboard_follows_pauses_resumes_and_stops_a_crawl(crawl: Crawl, tmp_path: pathlib.Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=10_000)
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
            page.goto(f"{crawl.api}/")

            # The page picks the running job and follows its stream; the pages counter moves.
            expect(page.locator("#job")).to_have_value(JOB)
            expect(page.locator("#live")).to_have_text("live")
            expect(page.locator("#control")).to_have_text("running")
            before = page.inner_text("#pages-total")
            page.wait_for_function(
                "before => document.getElementById('pages-total').textContent !== before", arg=before
            )
            expect(page.locator("#pages-rate")).not_to_have_text("-")
            expect(page.locator("#workers tbody tr")).to_have_count(1)
            expect(page.locator("#cluster-section")).to_be_hidden()

            # Pause asks for the key first; a wrong key is refused (401) and said so; the right one pauses
            # the job: the site stops being hit.
            page.get_by_role("button", name="Pause").click()
            expect(page.locator("#message")).to_contain_text("needs the API key")
            page.get_by_label("API key").fill("not-the-key")
            page.get_by_role("button", name="Use key").click()
            expect(page.locator("#message")).to_contain_text("the API key was refused (401: wrong API key)")
            assert [e for e in errors if "status of 401" not in e] == []
            errors.clear()  # the browser logs the refused request itself
            page.get_by_label("API key").fill(KEY)
            page.get_by_role("button", name="Use key").click()
            expect(page.locator("#control")).to_have_text("paused")
            assert crawl.control() == "paused"
            time.sleep(1.5)  # downloads in flight when the pause came end
            held = crawl.hits()
            time.sleep(2.0)
            assert crawl.hits() == held, "the site was still crawled while the job was paused"
            assert not crawl.result.done()

            # Resume: the crawl goes on.
            page.get_by_role("button", name="Resume").click()
            expect(page.locator("#control")).to_have_text("running")
            assert crawl.control() == "running"
            _wait("the crawl to go on after Resume", lambda: crawl.hits() > held + 20)

            # Dead letters show up in their table; Replay puts them back in their queue.
            expect(page.locator("#dlq tbody tr", has_text="/broken/")).not_to_have_count(0)
            page.get_by_role("button", name="Replay").click()
            expect(page.locator("#message")).to_contain_text("went back to their queues")
            assert errors == []

            if SCREENSHOT:
                time.sleep(40)  # a fuller rate chart for the docs
            page.screenshot(path=tmp_path / "dashboard.png", full_page=True)
            assert (tmp_path / "dashboard.png").stat().st_size > 10_000
            if SCREENSHOT:
                shutil.copyfile(tmp_path / "dashboard.png", SCREENSHOT)
            assert errors == []

            # Stop (confirmed in a dialog): the run ends as stopped (its server with it).
            page.once("dialog", lambda dialog: dialog.accept())
            page.get_by_role("button", name="Stop").click()
            expect(page.locator("#control")).to_have_text("stopping")
            expect(page.get_by_role("button", name="Pause")).to_be_disabled()
            assert errors == []
            result = crawl.result.result(timeout=30)
            assert result.reason == "stopped"
            assert 0 < result.stats.responses < PAGES
        finally:
            browser.close()


@pytest.fixture
def redis_job() -> Iterator[str]:
    """A fresh job name on the local Redis; its keys are deleted afterwards."""
    import redis

    job = f"dashboard{uuid.uuid4().hex[:12]}"
    yield job
    with redis.Redis(host="127.0.0.1", port=6379, db=15) as client:
        for key in client.scan_iter(match=f"mocra-{job}*", count=1000):
            client.delete(key)


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"needs Debian's chromium at {CHROMIUM} (.ci/run installs it)"
)
def test_any_workers_dashboard_shows_and_steers_the_whole_job(redis_job: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=10_000)
    errors: list[str] = []
    with (
        crawling(f"queue.url={REDIS_URL}", job=redis_job, workers=2) as crawl,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            pages = []
            for api in crawl.apis:  # one tab on each worker's server
                page = browser.new_page()
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(f"{api}/")
                expect(page.locator("#job")).to_have_value(redis_job)
                expect(page.locator("#workers tbody tr")).to_have_count(2)  # the fleet, from either one
                page.get_by_label("API key").fill(KEY)
                page.get_by_role("button", name="Use key").click()
                pages.append(page)
            first, second = pages

            # Pause on the first worker's page holds both workers; the second's page says so.
            first.get_by_role("button", name="Pause").click()
            expect(second.locator("#control")).to_have_text("paused")
            time.sleep(1.5)  # both workers see the pause and end the downloads they had in flight
            held = crawl.hits()
            time.sleep(2.0)
            assert crawl.hits() == held, "a worker went on crawling while the job was paused"

            # Resume on the second worker's page: the job goes on, the first's page says so.
            second.get_by_role("button", name="Resume").click()
            expect(first.locator("#control")).to_have_text("running")
            _wait("the crawl to go on after Resume", lambda: crawl.hits() > held + 20)
            for page in pages:
                expect(page.locator("#workers tbody tr", has_text="active")).to_have_count(2)
            assert errors == []
        finally:
            browser.close()


class ClusterJob(FakeView):  # type: ignore[misc]
    """A job of a three-node cluster with two live workers (the admin tests' fake view, with a fleet)."""

    async def snapshot(self) -> JobSnapshot:
        now = time.time()
        self.stats.response("127.0.0.1", 200, 2048, 0.02)
        workers = [
            WorkerInfo(id=f"n{i}:1", host=f"n{i}", pid=100 + i, started=now - 60, seen=now, state="active")
            for i in (1, 2)
        ]
        nodes = [
            ClusterNode(id="n1", role="leader", term=4, heartbeat=now, partitions=[0, 1]),
            ClusterNode(id="n2", role="follower", term=4, heartbeat=now, partitions=[2]),
            ClusterNode(id="n3", role="follower", term=4, heartbeat=now - 1, partitions=[]),
        ]
        base: JobSnapshot = await super().snapshot()
        return msgspec.structs.replace(base, workers=workers, cluster=nodes)


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"needs Debian's chromium at {CHROMIUM} (.ci/run installs it)"
)
def test_a_cluster_job_shows_its_nodes_and_its_dead_letters_can_be_replayed() -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=10_000)
    view = ClusterJob("fleet")
    registry = JobRegistry()
    registry.add(view)
    settings = AdminSettings(keys=[KEY])
    context = AdminContext(jobs=registry, readiness=lambda: (True, "active"), settings=settings)
    errors: list[str] = []
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(serving(context, "0")) as server,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{server.url}/")
            expect(page.locator("#cluster-section")).to_be_visible()
            expect(page.locator("#cluster tbody tr")).to_have_count(3)
            expect(page.locator("#cluster tbody tr").first).to_contain_text("leader")
            expect(page.locator("#cluster tbody tr").first).to_contain_text("0, 1")
            expect(page.locator("#workers tbody tr")).to_have_count(2)
            expect(page.locator("#workers-total")).to_have_text("2")

            expect(page.locator("#dlq tbody tr")).to_have_count(3)
            page.get_by_label("Stage").select_option("request")
            page.get_by_label("API key").fill(KEY)
            page.get_by_role("button", name="Use key").click()
            page.get_by_role("button", name="Replay").click()
            expect(page.locator("#message")).to_contain_text("Replay: 3 dead letter(s) of fleet went back")
            expect(page.locator("#dlq tbody")).to_have_text("no dead letters")
            expect(page.get_by_role("button", name="Replay")).to_be_disabled()
            assert view.letters == []
            assert errors == []
        finally:
            browser.close()


def _assets_the_page_loads() -> set[str]:
    """`static/...` files named by index.html, and the modules app.js imports, transitively."""
    page = (STATIC / "index.html").read_text()
    wanted = set(re.findall(r'(?:src|href)="static/([^"]+)"', page))
    todo = [name for name in wanted if name.endswith(".js")]
    while todo:
        source = (STATIC / todo.pop()).read_text()
        for name in re.findall(r'from "\./([^"]+)"', source):
            if name not in wanted:
                wanted.add(name)
                todo.append(name)
    return wanted


def test_every_file_the_page_loads_is_in_static() -> None:
    wanted = _assets_the_page_loads()
    assert {"app.js", "app.css", "api.js", "chart.js"} <= wanted
    assert sorted(name for name in wanted if not (STATIC / name).is_file()) == []


@pytest.mark.slow
def test_the_mocra_core_wheel_ships_the_dashboard(tmp_path: pathlib.Path) -> None:
    uv = pathlib.Path(sys.executable).parent / "uv"
    command = [str(uv) if uv.exists() else "uv", "build", "--package", "mocra-core", "--wheel"]
    done = subprocess.run(
        [*command, "--out-dir", str(tmp_path)],
        cwd=pathlib.Path(__file__).parents[4],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [wheel] = tmp_path.glob("mocra_core-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"mocra_core/admin/static/{name}" for name in ("index.html", *_assets_the_page_loads())}
    assert sorted(expected - shipped) == []


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"needs Debian's chromium at {CHROMIUM} (.ci/run installs it)"
)
def test_the_dashboard_says_when_a_node_refuses_writes_or_keys_its_reads(crawl: Crawl) -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=10_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            # No key configured on the node: a write is refused with the server's reason (403).
            page = browser.new_page()
            page.goto(f"{crawl.keyless}/")
            expect(page.locator("#control")).to_have_text("running")
            page.get_by_label("API key").fill(KEY)
            page.get_by_role("button", name="Use key").click()
            page.get_by_role("button", name="Pause").click()
            refusal = "Pause is not allowed (403: writes need an API key"
            expect(page.locator("#message")).to_contain_text(refusal)
            assert crawl.control() == "running"

            # Reads keyed: the page asks for the key, then follows the job (the stream carries the key).
            page = browser.new_page()
            page.goto(f"{crawl.locked}/")
            expect(page.locator("#message")).to_contain_text("Reading this node needs the API key")
            expect(page.locator("#job")).to_be_disabled()
            page.get_by_label("API key").fill(KEY)
            page.get_by_role("button", name="Use key").click()
            expect(page.locator("#job")).to_have_value(JOB)
            expect(page.locator("#live")).to_have_text("live")
            before = page.inner_text("#pages-total")
            page.wait_for_function(
                "before => document.getElementById('pages-total').textContent !== before", arg=before
            )
        finally:
            browser.close()
