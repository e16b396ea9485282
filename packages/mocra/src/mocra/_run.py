"""What `mocra run` needs: load spiders from a file, pick a sink from `-o`, print the summary."""

from __future__ import annotations

import importlib.util
import inspect
import pathlib
import sys
from typing import TYPE_CHECKING, Any, TextIO

from mocra_core import ConfigError, CsvSink, JsonlSink, Spider, redact
from mocra_core.modules import Module
from mocra_core.sinks import FanoutSink

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mocra_core import CrawlResult, DataSink
    from mocra_core.observe import StatsSnapshot

__all__ = ("job_counts_line", "load_spiders", "make_sink", "make_sinks", "print_summary")


def load_spiders(path: str, *, names: list[str] | None = None) -> list[Spider[Any] | Module[Any]]:
    """Import `path` and instantiate the `Spider` and `Module` subclasses it defines (or those in `names`).

    Raises:
        ConfigError: the file is missing, fails to import, defines no spider, or a name is unknown.
    """
    file = pathlib.Path(path)
    if not file.is_file():
        raise ConfigError("path", "no such file", source=path)
    module_name = f"mocra_spiders_{file.stem}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise ConfigError("path", "not a Python file", source=path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ConfigError("path", f"importing it failed: {type(exc).__name__}: {exc}", source=path) from exc
    found = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Spider | Module)
        and obj.__module__ == module_name
        and obj.name
    ]
    if not found:
        raise ConfigError("path", "defines no Spider or Module subclass with a name", source=path)
    if names:
        by_name = {cls.name: cls for cls in found}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise ConfigError(
                "--spider", f"unknown {unknown}; the file defines {sorted(by_name)}", source=path
            )
        found = [by_name[n] for n in names]
    return [cls() for cls in found]


def make_sink(
    output: str, *, append: bool = False, table: str | None = None, key: Sequence[str] = ()
) -> DataSink:
    """The sink of one `-o`: a database URL (`scheme://…`) → `SqlSink`, else a file by its extension.

    Files: `.jsonl` / `.jl` / `.ndjson` → JSON lines, `.csv` → CSV, `.parquet` → Parquet (the `polars`
    extra), `.xlsx` → an Excel workbook (the `excel` extra); `table` and `key` are for databases. A
    database gets `table` (default `items`) and, with `key`, upserts (each item one row however often it
    is written).

    Raises:
        ConfigError: another extension.
        MissingExtra: a database URL without the `sql` extra, `.parquet` without `polars`, `.xlsx`
            without `excel`.

    Example:
        >>> make_sink("items.jsonl")
        JsonlSink('items.jsonl')
        >>> make_sink("items.parquet"), make_sink("items.xlsx")
        (ParquetSink('items.parquet'), XlsxSink('items.xlsx'))
        >>> make_sink("sqlite:///items.db", key=["id"])
        SqlSink('sqlite:///items.db', 'items', key=('id',))
    """
    if "://" in output:
        from mocra_core.sinks import SqlSink

        return SqlSink(output, table or "items", key=key or None)
    suffix = pathlib.Path(output).suffix.lower()
    if suffix in (".jsonl", ".jl", ".ndjson"):
        return JsonlSink(output, append=append)
    if suffix == ".csv":
        return CsvSink(output, append=append)
    if suffix == ".parquet":
        from mocra_core.sinks import ParquetSink

        return ParquetSink(output, append=append)
    if suffix == ".xlsx":
        from mocra_core.sinks import XlsxSink

        return XlsxSink(output, append=append)
    raise ConfigError(
        "--output",
        f"unknown format {suffix!r}; use .jsonl, .csv, .parquet, .xlsx or a database URL",
        source=output,
    )


def make_sinks(
    outputs: Sequence[str], *, append: bool = False, table: str | None = None, key: Sequence[str] = ()
) -> DataSink | None:
    """The sink of all `-o` outputs: none, one, or a `FanoutSink` writing each batch to every one.

    `table` and `key` go to the database outputs (an error when there is none).
    """
    if (table or key) and not any("://" in output for output in outputs):
        raise ConfigError(
            "--table/--key", "apply to a database output (-o sqlite:///items.db)", source="mocra run"
        )
    sinks = [make_sink(output, append=append, table=table, key=key) for output in outputs]
    if not sinks:
        return None
    return sinks[0] if len(sinks) == 1 else FanoutSink(*sinks)


def print_summary(result: CrawlResult, stream: TextIO, *, output: str | Sequence[str] | None = None) -> None:
    """Write a short human summary of a run: its own counts and time, then a resumed job's so far."""
    s = result.stats
    lines = [
        f"{result.reason}: {s.responses} pages, {s.items} items in {s.elapsed:.1f}s "
        f"({s.pages_per_second:.0f} pages/s)",
        *_job_so_far(result.job),
        f"  requests {s.requests}, retries {s.retries}, errors {s.errors}, "
        f"dead letters {s.dead_lettered}{_queued_dead_letters(result)}",
        f"  status {s.status}",
        f"  dropped {s.dropped or {}}",
        *_offsite_hosts(s),
        *_proxy_failures(s),
        f"  latency ms {s.latency_ms}, {s.bytes / 1e6:.1f} MB received",
    ]
    if s.concurrency:
        lines.append(f"  autoscale: {s.concurrency} downloads at once at the end (crawl.autoscale)")
    if result.reason == "unavailable":
        lines.append(
            "  the broker or shared store did not answer for crawl.outage_timeout seconds; what this worker"
            " held returns to the job's other workers or its next run"
        )
    if result.reason == "stopped":
        lines.append(
            "  stopped by an operator: the work in flight was finished; what was not fetched stays queued"
            " for the job's next run"
        )
    if result.reason == "lost":
        lines.append(
            "  the job's state vanished from its coordination store (a server restarted without"
            " persistence?): its seed flags and seen set are gone, and its queues too if they were on that"
            " server (`mocra status` tells). Its items so far are written; running the job again starts it"
            " over (every page is fetched again: give it another -o file or --job)"
        )
    if result.reason == "max_pages" and not s.requests:
        lines.append(
            "  the job's page budget was spent by its earlier runs: a larger crawl.max_pages goes on"
        )
    if result.nothing_crawled is not None:
        lines.append(f"  nothing was crawled: {result.nothing_crawled}")
        if result.dead_letters:
            lines.append(
                "  (with --job-dir or --queue, `mocra dlq list` shows every dead letter and"
                " `mocra dlq replay` sends them back)"
            )
    for failure in result.failures[:10]:
        reason = failure.reason.strip().splitlines()[-1] if failure.reason.strip() else "?"
        lines.append(f"  dead letter [{failure.topic}] {failure.url}: {reason}")
    if result.dead_letters > 10:
        lines.append(f"  ... and {result.dead_letters - 10} more dead letters")
    outputs = [output] if isinstance(output, str) else list(output or ())
    if outputs:
        lines.append(f"  items written to {', '.join(redact(o) for o in outputs)}")
    stream.write("\n".join(lines) + "\n")


def _offsite_hosts(stats: StatsSnapshot) -> list[str]:
    """The line of the hosts most dropped as out of scope (`dropped["offsite"]`), when there are some."""
    if not stats.offsite_hosts:
        return []
    return ["  offsite hosts: " + ", ".join(f"{host} {n}" for host, n in stats.offsite_hosts.items())]


def _proxy_failures(stats: StatsSnapshot) -> list[str]:
    """The line of the proxies that failed most (passwords redacted), when some did."""
    if not stats.proxy_failures:
        return []
    total = sum(stats.proxy_failures.values())
    shown = ", ".join(f"{proxy} {n}" for proxy, n in stats.proxy_failures.items())
    return [f"  proxy failures {total}: {shown}"]


def _queued_dead_letters(result: CrawlResult) -> str:
    """The dead-letter queues' size when it is not this run's count (earlier runs', other workers')."""
    if result.dead_letters == result.stats.dead_lettered:
        return ""
    return f" ({result.dead_letters} in the dead-letter queues)"


def _job_so_far(job: StatsSnapshot | None) -> list[str]:
    """The summary line of a job's runs so far, when other runs (earlier, or other workers') count too."""
    if job is None or job.runs < 2:
        return []
    return [f"  {job_counts_line(job)}"]


def job_counts_line(job: StatsSnapshot) -> str:
    """One line of a job's counts so far (all its runs, all its workers), and what a kill can lose.

    Example:
        >>> from mocra_core.observe import StatsSnapshot
        >>> line = job_counts_line(StatsSnapshot(responses=9, items=8, elapsed=3.0, runs=2))
        >>> line.split(" in ")[0]
        'job so far, 2 runs: 9 pages, 8 items, 0 errors, 0 dead letters'
    """
    runs = f"{job.runs} run{'s' * (job.runs != 1)}"
    return (
        f"job so far, {runs}: {job.responses} pages, {job.items} items, {job.errors} errors, "
        f"{job.dead_lettered} dead letters in {job.elapsed:.1f}s of crawling (the runs' times added up); "
        "a kill -9 loses at most the killed run's last second of counts"
    )
