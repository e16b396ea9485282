"""`job_builder`: the one path from (spiders, settings, overrides, start URLs, job) to a `MocraBuilder`.

`mocra run`, `mocra serve`'s `POST /api/v1/jobs` and code that starts jobs by name all come through here,
so a job started any of these ways is put together the same way: same settings, same sinks, same seeds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from .._errors import ConfigError
from ..config import Settings
from ..config._load import SettingsLayers
from ..modules import Spider
from ._builder import Mocra, MocraBuilder
from ._plan import job_name

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from ..modules import Module
    from ..sinks import DataSink

__all__ = ("job_builder", "with_overrides", "with_start_urls")


def with_overrides(
    settings: Settings, overrides: Mapping[str, Any], *, source: str = "overrides"
) -> Settings:
    """`settings` with `{"section.key": value}` overrides applied, checked as a whole.

    Raises:
        ConfigError: naming the key and `source` (`source settings.crawl.max_pages: must be at least 1`).

    Example:
        >>> with_overrides(Settings(), {"crawl.max_pages": 5, "crawl.obey_robots": False}).crawl.max_pages
        5
        >>> with_overrides(Settings(), {"crawl.max_pages": 0}, source="POST /api/v1/jobs")
        Traceback (most recent call last):
        ...
        mocra_core._errors.ConfigError: POST /api/v1/jobs settings: crawl.max_pages: must be at least 1 (leave it unset for no limit), got 0
    """  # noqa: E501
    if not overrides:
        return settings
    layers = SettingsLayers(msgspec.to_builtins(settings))
    for key, value in overrides.items():
        path = [part for part in key.split(".") if part]
        if not path:
            raise ConfigError(key or "settings", "expected section.key", source=f"{source} settings")
        layers.set(path, value, source=f"{source} settings")
    return layers.convert(source=f"{source} settings")


def with_start_urls(spider: Spider[Any] | Module[Any], urls: Sequence[str]) -> Spider[Any]:
    """A new spider of `spider`'s class whose `start_urls` are `urls` (the class itself is left alone).

    Raises:
        ConfigError: `spider` is a `Module` (its starts come from its nodes), or a URL is not a string.

    Example:
        >>> class Books(Spider[dict[str, str]]):
        ...     name = "books"
        ...     start_urls = ("https://a.example/",)
        ...     start_urls_file = "more-urls.csv"
        >>> seeded = with_start_urls(Books(), ["https://b.example/"])
        >>> seeded.start_urls, seeded.start_urls_file, Books.start_urls
        (('https://b.example/',), None, ('https://a.example/',))
    """
    if not isinstance(spider, Spider):
        raise ConfigError("start_urls", f"{spider.name!r} is a module, not a spider: its nodes seed it")
    if not all(isinstance(url, str) for url in urls):
        raise ConfigError("start_urls", "expected a list of URLs (strings)")
    cls = type(spider)
    given = {"start_urls": tuple(urls), "start_urls_file": None, "__module__": cls.__module__}  # only these
    seeded = type(cls.__name__, (cls,), given)
    fresh: Spider[Any] = seeded()
    return fresh


def job_builder(
    modules: Sequence[Spider[Any] | Module[Any]],
    *,
    settings: Settings | None = None,
    overrides: Mapping[str, Any] | None = None,
    start_urls: Sequence[str] | None = None,
    job: str | None = None,
    sink: Callable[[Settings, str], DataSink | None] | None = None,
    source: str = "job_builder",
) -> MocraBuilder:
    """A builder running `modules` as one job, made the same way whoever starts it.

    Args:
        modules: The spiders and modules of the job.
        settings: The base settings (a file, `MOCRA_*`, `-s` and options already merged), default none.
        overrides: `{"section.key": value}` applied on top (an API request's `settings`).
        start_urls: Seed the spiders with these URLs instead of their `start_urls`.
        job: The job's name (`crawl.job`); default: the module names joined by `+`.
        sink: Makes the job's sink from its final settings and name; None: items are counted, not kept.
        source: Named in errors about `overrides` (`POST /api/v1/jobs`).

    Raises:
        ConfigError: an override or the job name is invalid, start URLs given to a module, or no module.

    Example:
        >>> class Books(Spider[dict[str, str]]):
        ...     name = "books"
        ...     async def parse(self, response, ctx): ...
        >>> builder = job_builder([Books()], overrides={"crawl.max_pages": 3}, job="nightly")
        >>> builder.build_settings().crawl.job, builder.build_settings().crawl.max_pages
        ('nightly', 3)
    """
    if not modules:
        raise ConfigError("spider", "a job needs at least one spider or module", source=source)
    final = with_overrides(settings or Settings(), {**(overrides or {})}, source=source)
    if job is not None:
        final = with_overrides(final, {"crawl.job": job}, source=source)
    if start_urls is not None:
        modules = [with_start_urls(module, start_urls) for module in modules]
    name = job_name(final, [module.name for module in modules])
    items = sink(final, name) if sink is not None else None
    builder = Mocra.builder().settings(final)
    for module in modules:
        builder.module(module, items)
    return builder
