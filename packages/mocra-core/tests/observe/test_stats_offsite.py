"""`Stats.offsite`: requests dropped as out of scope, by host, bounded; snapshots show the top hosts."""

from __future__ import annotations

import msgspec

from mocra_core.observe import Stats, StatsSnapshot
from mocra_core.observe._stats import OFFSITE_HOSTS_CAP, OTHER_HOSTS


def test_offsite_counts_a_drop_and_the_canonical_host() -> None:
    stats = Stats()
    for dropped in (
        "https://Ads.Example.net/a?b",
        "http://ads.example.net.:8080/c",
        "ads.example.net",
        "http://bücher.de/",
        "xn--bcher-kva.de:443",
        "http:///no-host",
    ):
        stats.offsite(dropped)
    stats.drop("duplicate")

    assert stats.dropped == {"offsite": 6, "duplicate": 1}
    assert stats.offsite_hosts == {"ads.example.net": 3, "xn--bcher-kva.de": 2, "(none)": 1}


def test_hosts_past_the_cap_are_counted_under_other() -> None:
    stats = Stats()
    for i in range(OFFSITE_HOSTS_CAP + 5):
        stats.offsite(f"http://h{i}.test/")
    stats.offsite("http://h0.test/again")  # a host counted already still counts as itself

    assert len(stats.offsite_hosts) == OFFSITE_HOSTS_CAP + 1
    assert stats.offsite_hosts[OTHER_HOSTS] == 5
    assert stats.offsite_hosts["h0.test"] == 2
    assert stats.dropped["offsite"] == OFFSITE_HOSTS_CAP + 6


def test_a_snapshot_shows_the_top_ten_hosts_and_sums_the_rest() -> None:
    stats = Stats()
    for i in range(15):
        for _ in range(i + 1):
            stats.offsite(f"http://h{i}.test/")

    shown = stats.snapshot().offsite_hosts

    assert list(shown)[:10] == [f"h{i}.test" for i in range(14, 4, -1)]
    assert shown[OTHER_HOSTS] == 1 + 2 + 3 + 4 + 5
    assert sum(shown.values()) == stats.snapshot().dropped["offsite"] == 120


def test_a_snapshot_without_offsite_drops_has_no_hosts() -> None:
    stats = Stats()
    stats.drop("robots")
    assert stats.snapshot().offsite_hosts == {}


def test_the_job_s_hosts_add_the_earlier_runs_to_this_one() -> None:
    stats = Stats()
    earlier = StatsSnapshot(dropped={"offsite": 7}, offsite_hosts={"a.test": 4, OTHER_HOSTS: 3}, runs=1)
    stats.resume(earlier)
    stats.offsite("http://a.test/")
    stats.offsite("http://b.test/")

    job = stats.job_snapshot()

    assert job.dropped == {"offsite": 9}
    assert job.offsite_hosts == {"a.test": 5, OTHER_HOSTS: 3, "b.test": 1}
    assert sum(job.offsite_hosts.values()) == job.dropped["offsite"]
    assert stats.job_snapshot(domains=False).offsite_hosts == {}  # the per-ack save leaves hosts out


def test_other_stays_last_when_it_is_the_largest() -> None:
    stats = Stats()
    stats.resume(StatsSnapshot(offsite_hosts={OTHER_HOSTS: 100, "a.test": 1}, runs=1))
    stats.offsite("http://b.test/")

    assert list(stats.job_snapshot().offsite_hosts.items()) == [
        ("a.test", 1),
        ("b.test", 1),
        (OTHER_HOSTS, 100),
    ]


def test_a_snapshot_saved_before_offsite_hosts_existed_still_decodes() -> None:
    old = msgspec.msgpack.encode({"responses": 3, "dropped": {"offsite": 2}, "runs": 1})
    snapshot = msgspec.msgpack.decode(old, type=StatsSnapshot)
    assert (snapshot.offsite_hosts, snapshot.dropped) == ({}, {"offsite": 2})
    again = msgspec.msgpack.decode(msgspec.msgpack.encode(Stats().snapshot()), type=StatsSnapshot)
    assert again.offsite_hosts == {}
    assert "offsite_hosts" in again.to_dict()
