"""Assignments: the triples the three relations join, merged config at every level, disabled rows."""

from __future__ import annotations

from typing import Any

import pytest

from mocra_store import Assignment, MiddlewareRef, NotFound, Store

pytestmark = pytest.mark.anyio

LEVELS = ("platform", "module", "account", "account×platform", "module×platform", "module×account")


def tenants(levels: tuple[str, ...] = LEVELS) -> dict[str, Any]:
    """alice on shop running prices; each level in ``levels`` sets ``who`` (and its own key) in config."""

    def config(level: str) -> dict[str, Any]:
        if level not in levels:
            return {}
        return {"who": level, "http": {level: True}, level: 1}

    return {
        "platforms": {"shop": {"config": config("platform")}, "forum": {}},
        "modules": {"prices": {"version": "2", "config": config("module")}},
        "accounts": {"alice": {"config": config("account")}, "bob": {}},
        "relations": [
            {"account": "alice", "platform": "shop", "config": config("account×platform")},
            {"module": "prices", "platform": "shop", "config": config("module×platform")},
            {"module": "prices", "account": "alice", "priority": 5, "config": config("module×account")},
        ],
    }


async def test_one_triple_when_all_three_relations_exist(url: str) -> None:
    async with Store.open(url) as store:
        await store.import_tenants(tenants())
        # bob and forum have no relations: no triple; a module x platform alone makes none either
        await store.import_tenants({"relations": [{"module": "prices", "platform": "forum"}]})

        found = await store.assignments()

    assert [(a.account, a.platform, a.module, a.version, a.priority) for a in found] == [
        ("alice", "shop", "prices", "2", 5)
    ]
    assert found[0].enabled and found[0].disabled_by is None


@pytest.mark.parametrize("top", range(len(LEVELS)))
async def test_each_level_overrides_the_ones_before(url: str, top: int) -> None:
    levels = LEVELS[: top + 1]
    async with Store.open(url) as store:
        await store.import_tenants(tenants(levels))

        (found,) = await store.assignments()

    assert found.config["who"] == LEVELS[top]
    assert found.config["http"] == {level: True for level in levels}  # nested dicts merge
    assert all(found.config[level] == 1 for level in levels)


async def test_a_later_level_replaces_a_list_and_a_scalar_with_a_dict(url: str) -> None:
    async with Store.open(url) as store:
        await store.import_tenants(tenants(()))
        await store.import_tenants(
            {
                "platforms": {"shop": {"config": {"tags": [1, 2], "proxy": "http://p"}}},
                "relations": [
                    {"module": "prices", "account": "alice", "config": {"tags": [3], "proxy": {"pool": "x"}}}
                ],
            }
        )

        (found,) = await store.assignments()

    assert found.config == {"tags": [3], "proxy": {"pool": "x"}}


SWITCHES = [
    ({"accounts": {"alice": {"enabled": False}}}, "account alice"),
    ({"platforms": {"shop": {"enabled": False}}}, "platform shop"),
    ({"modules": {"prices": {"enabled": False}}}, "module prices"),
    (
        {"relations": [{"account": "alice", "platform": "shop", "enabled": False}]},
        "account×platform alice/shop",
    ),
    (
        {"relations": [{"module": "prices", "platform": "shop", "enabled": False}]},
        "module×platform prices/shop",
    ),
    (
        {"relations": [{"module": "prices", "account": "alice", "enabled": False}]},
        "module×account prices/alice",
    ),
]


@pytest.mark.parametrize(("switch", "label"), SWITCHES, ids=[label for _, label in SWITCHES])
async def test_a_disabled_row_hides_the_triple_and_names_itself(
    url: str, switch: dict[str, Any], label: str
) -> None:
    async with Store.open(url) as store:
        await store.import_tenants(tenants())
        await store.import_tenants(switch)

        hidden = await store.assignments()
        shown = await store.assignments(include_disabled=True)

    assert hidden == []
    assert [(a.enabled, a.disabled_by) for a in shown] == [(False, label)]


async def test_disabled_by_names_the_first_disabled_thing(url: str) -> None:
    async with Store.open(url) as store:
        await store.import_tenants(tenants())
        await store.set_enabled("module", "prices", False)
        await store.set_enabled("account", "alice", False)

        (found,) = await store.assignments(include_disabled=True)
        await store.set_enabled("account", "alice", True)
        (again,) = await store.assignments(include_disabled=True)

    assert found.disabled_by == "account alice"
    assert again.disabled_by == "module prices"


async def test_set_enabled_names_what_is_missing(url: str) -> None:
    async with Store.open(url) as store:
        with pytest.raises(NotFound, match="no account named 'carol'"):
            await store.set_enabled("account", "carol", False)
        with pytest.raises(ValueError, match="kind must be one of"):
            await store.set_enabled("tenant", "carol", False)


async def test_sorted_by_priority_then_names(url: str) -> None:
    async with Store.open(url) as store:
        await store.import_tenants(
            {
                "platforms": {"shop": {}},
                "modules": {"prices": {}, "reviews": {}},
                "accounts": {"alice": {}, "bob": {}},
                "relations": [
                    {"account": "alice", "platform": "shop"},
                    {"account": "bob", "platform": "shop"},
                    {"module": "prices", "platform": "shop"},
                    {"module": "reviews", "platform": "shop"},
                    {"module": "prices", "account": "alice", "priority": 1},
                    {"module": "prices", "account": "bob", "priority": 1},
                    {"module": "reviews", "account": "bob", "priority": 9},
                    {"module": "reviews", "account": "alice"},
                ],
            }
        )

        found = await store.assignments()

    assert [(a.priority, a.account, a.module) for a in found] == [
        (9, "bob", "reviews"),
        (1, "alice", "prices"),
        (1, "bob", "prices"),
        (0, "alice", "reviews"),
    ]


async def test_middlewares_in_position_order_enabled_only_with_merged_config(url: str) -> None:
    async with Store.open(url) as store:
        await store.import_tenants(
            {
                **tenants(()),
                "middlewares": {
                    "retry": {"kind": "download", "config": {"tries": 3, "backoff": 1}},
                    "dedupe": {"kind": "data"},
                    "off": {"kind": "data", "enabled": False},
                    "unused": {"kind": "download"},
                },
            }
        )
        await store.import_tenants(
            {
                "modules": {
                    "prices": {
                        "middlewares": [
                            {"name": "dedupe", "position": 2},
                            {"name": "retry", "position": 1, "config": {"tries": 5}},
                            {"name": "off", "position": 0},
                            {"name": "unused", "position": 3, "enabled": False},
                        ]
                    }
                }
            }
        )

        (found,) = await store.assignments()

    assert found.middlewares == (
        MiddlewareRef("retry", "download", {"tries": 5, "backoff": 1}),
        MiddlewareRef("dedupe", "data", {}),
    )


async def test_an_assignment_is_a_frozen_value(url: str) -> None:
    async with Store.open(url) as store:
        await store.import_tenants(tenants())
        (found,) = await store.assignments()

    assert isinstance(found, Assignment)
    with pytest.raises(AttributeError):
        found.priority = 1  # type: ignore[misc]


async def test_deleting_a_platform_removes_its_triples(url: str) -> None:
    async with Store.open(url) as store:
        await store.import_tenants(tenants())
        await store.delete("platform", "shop")

        assert await store.assignments(include_disabled=True) == []
        assert [p.name for p in await store.platforms()] == ["forum"]
