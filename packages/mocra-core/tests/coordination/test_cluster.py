"""What `ClusterCoordination` and `ClusterSeenSet` add to the shared suites: namespaces, errors, the extra."""

from __future__ import annotations

import pathlib
import sys

import pytest

import mocra_core.coordination
import mocra_core.dedup
from mocra_cluster import LocalControlPlane
from mocra_core import MissingExtra
from mocra_core.coordination import MAX_KEY_BYTES, ClusterCoordination, CoordinationError
from mocra_core.dedup import ClusterSeenSet, SeenSetError

pytestmark = pytest.mark.anyio


async def test_namespaces_keep_jobs_apart_and_long_keys_fit(tmp_path: pathlib.Path) -> None:
    async with LocalControlPlane(tmp_path, sync=False) as plane:
        one, two = ClusterCoordination(plane, namespace="one"), ClusterCoordination(plane, namespace="two")
        longest = "k" * MAX_KEY_BYTES
        assert await one.set_if_absent("seeded/shop") and await two.set_if_absent("seeded/shop")
        await one.set(longest, b"1")
        await one.set(longest[:-1] + "j", b"2")  # differs in the last byte: its own digest
        assert (await one.get(longest), await two.get(longest)) == (b"1", None)
        assert await one.get(longest[:-1] + "j") == b"2"
        assert await plane.get("one/seeded/shop") == b"1"  # the plane's key: namespace/key
        assert await one.acquire_lock("login/a", "h", ttl=10) is not None
        assert await two.acquire_lock("login/a", "h2", ttl=10) is not None  # locks too


async def test_a_closed_store_or_plane_raises_coordination_errors(tmp_path: pathlib.Path) -> None:
    plane = LocalControlPlane(tmp_path, sync=False)
    coordination = ClusterCoordination(plane)
    seen = ClusterSeenSet(plane)
    await plane.aclose()
    with pytest.raises(CoordinationError, match="control plane is closed"):
        await coordination.get("k")
    with pytest.raises(SeenSetError, match="closed"):
        await seen.add_if_absent([b"f" * 16])
    await coordination.aclose()
    with pytest.raises(CoordinationError, match="store is closed"):
        await coordination.set("k", b"v")


async def test_without_the_extra_the_names_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in sys.modules if name.partition(".")[0] == "mocra_cluster"]:
        monkeypatch.setitem(sys.modules, name, None)  # type: ignore[arg-type]  # as if not installed
    for module in ("mocra_core.backends.cluster._coordination", "mocra_core.backends.cluster._seen"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.delattr(mocra_core.coordination, "ClusterCoordination")
    monkeypatch.delattr(mocra_core.dedup, "ClusterSeenSet")
    with pytest.raises(MissingExtra, match=r"ClusterCoordination needs: pip install 'mocra\[cluster\]'"):
        mocra_core.coordination.ClusterCoordination  # noqa: B018
    with pytest.raises(MissingExtra, match=r"ClusterSeenSet needs: pip install 'mocra\[cluster\]'"):
        mocra_core.dedup.ClusterSeenSet  # noqa: B018
