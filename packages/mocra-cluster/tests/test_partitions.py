"""Rendezvous ownership: one owner per partition, a joiner takes only from others, few partitions move."""

from __future__ import annotations

import pytest

from mocra_cluster import PARTITIONS, assignment, owned_partitions, owner, partition_of


def test_partition_of_is_stable_and_in_range() -> None:
    assert partition_of("orders/42") == 44  # fixed across runs and hosts: no salted hash()
    assert partition_of(b"orders/42") == 44
    assert {partition_of(f"k{i}") for i in range(5_000)} == set(range(PARTITIONS))


def test_every_partition_has_exactly_one_owner() -> None:
    members = ["n1", "n2", "n3"]
    owned = [owned_partitions(member, members) for member in members]
    assert sorted(p for part in owned for p in part) == list(range(PARTITIONS))
    assert all(60 <= len(part) <= 110 for part in owned), [len(part) for part in owned]


def test_a_joining_member_takes_only_from_others_and_fewer_than_half_move() -> None:
    before = assignment(["n1", "n2", "n3"])
    after = assignment(["n1", "n2", "n3", "n4"])
    assert sorted(after) == list(range(PARTITIONS))
    moved = [p for p in range(PARTITIONS) if before[p] != after[p]]
    assert all(after[p] == "n4" for p in moved)  # nothing moves between the old members
    assert 0 < len(moved) < PARTITIONS // 2
    assert len(moved) == len(owned_partitions("n4", after.values()))


def test_a_leaving_member_gives_away_only_its_own() -> None:
    before = assignment(["n1", "n2", "n3", "n4"])
    after = assignment(["n1", "n2", "n4"])
    for partition in range(PARTITIONS):
        if before[partition] != "n3":
            assert after[partition] == before[partition]
        else:
            assert after[partition] in {"n1", "n2", "n4"}


def test_ownership_is_independent_of_member_order_and_duplicates() -> None:
    assert assignment(["c", "a", "b", "a"]) == assignment(["a", "b", "c"])
    assert owner(10, ["c", "a", "b"]) == owner(10, ["b", "c", "a"])
    assert assignment([]) == {}


@pytest.mark.parametrize("bad", [-1, PARTITIONS])
def test_owner_refuses_a_partition_out_of_range(bad: int) -> None:
    with pytest.raises(ValueError, match="partition must be 0 to 255"):
        owner(bad, ["a"])
