"""The public surface is a decision: these tests pin it (as httpx and anyio do)."""

from __future__ import annotations

import pytest

import mocra
import mocra_core

MOCRA = {
    "Account", "CallbackSink", "ChannelSink", "ConfigError", "CrawlResult", "CsvSink", "Ctx",
    "DataSink", "DownloadError", "InvalidURL", "JsonlSink", "Login", "LoginSession", "MissingExtra",
    "Mocra", "MocraBuilder", "MocraError", "Module", "Node", "Progress", "Request", "Response",
    "Seeds", "Settings", "Spider", "TaskCtx", "__version__", "channel", "on_item",
}  # fmt: skip


def test_mocra_surface_is_pinned() -> None:
    assert set(mocra.__all__) == MOCRA
    assert list(mocra.__all__) == sorted(mocra.__all__)
    assert len(mocra.__all__) <= 30


def test_mocra_names_are_mocra_core_objects() -> None:
    for name in mocra.__all__:
        if name != "__version__":
            assert getattr(mocra, name) is getattr(mocra_core, name)


def test_mocra_core_surface_is_sorted_and_importable() -> None:
    assert list(mocra_core.__all__) == sorted(mocra_core.__all__)
    for name in mocra_core.__all__:
        assert hasattr(mocra_core, name), name
    assert MOCRA <= set(mocra_core.__all__)


def test_versions_agree() -> None:
    from importlib import metadata

    assert (
        mocra.__version__
        == mocra_core.__version__
        == metadata.version("mocra")
        == metadata.version("mocra-core")
    )


def test_cluster_config_and_sql_sink_are_lazy_and_not_in_all() -> None:
    import mocra_cluster

    assert mocra.ClusterConfig is mocra_core.ClusterConfig is mocra_cluster.ClusterConfig
    assert "ClusterConfig" not in mocra.__all__  # star imports must work without the cluster extra
    assert mocra.SqlSink is mocra_core.sinks.SqlSink
    assert "SqlSink" not in mocra.__all__  # nor without the sql extra
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = mocra.Nope  # type: ignore[attr-defined]
