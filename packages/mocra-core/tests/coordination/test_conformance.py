"""One conformance suite for every `Coordination` backend: the same assertions on each (see `conftest.py`).

A new backend (Redis, NATS KV, Raft) is done when it passes this file unchanged, with a clock it controls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core import MocraError
from mocra_core.coordination import MAX_KEY_BYTES, CoordinationError, LockInfo

if TYPE_CHECKING:
    from conftest import FakeClock
    from mocra_core.coordination import Coordination

pytestmark = pytest.mark.anyio


# ---------------------------------------------------------------------- values


async def test_get_set_delete(coordination: Coordination) -> None:
    assert await coordination.get("a") is None
    await coordination.set("a", b"1")
    await coordination.set("b", b"")
    assert (await coordination.get("a"), await coordination.get("b")) == (b"1", b"")
    await coordination.set("a", b"2")  # replaces
    assert await coordination.get("a") == b"2"
    await coordination.delete("a")
    await coordination.delete("a")  # absent: nothing happens
    await coordination.delete("never-set")
    assert (await coordination.get("a"), await coordination.get("b")) == (None, b"")
    await coordination.set("é/ключ", b"\x00\xff")  # any text key, any bytes
    assert await coordination.get("é/ключ") == b"\x00\xff"


async def test_values_expire_after_their_ttl(coordination: Coordination, clock: FakeClock) -> None:
    await coordination.set("short", b"x", ttl=10)
    await coordination.set("forever", b"y")
    await coordination.set("cleared", b"z", ttl=5)
    await coordination.set("cleared", b"z")  # a set without ttl removes the expiry
    clock.advance(9.5)
    assert await coordination.get("short") == b"x"
    clock.advance(0.5)  # written + ttl reached: expired
    assert await coordination.get("short") is None
    assert await coordination.set_if_absent("short", b"again", ttl=10)  # expired counts as absent
    assert await coordination.compare_and_set("short", b"again", b"more")  # no ttl: never expires
    clock.advance(1_000)
    assert await coordination.get("short") == b"more"
    assert (await coordination.get("forever"), await coordination.get("cleared")) == (b"y", b"z")


async def test_set_if_absent_sets_only_once(coordination: Coordination, clock: FakeClock) -> None:
    assert await coordination.set_if_absent("gate") is True
    assert await coordination.set_if_absent("gate", b"other") is False
    assert await coordination.get("gate") == b"1"  # the default value, unchanged
    assert await coordination.set_if_absent("gate-2", b"v", ttl=3)
    assert not await coordination.set_if_absent("gate-2", b"w", ttl=3)
    clock.advance(3)
    assert await coordination.set_if_absent("gate-2", b"w")
    assert await coordination.get("gate-2") == b"w"


async def test_set_if_absent_has_one_winner_among_concurrent_tasks(coordination: Coordination) -> None:
    start = anyio.Event()
    winners: list[int] = []

    async def contender(i: int) -> None:
        await start.wait()
        if await coordination.set_if_absent("seed-once", str(i).encode()):
            winners.append(i)

    async with anyio.create_task_group() as tg:
        for i in range(50):
            tg.start_soon(contender, i)
        await anyio.wait_all_tasks_blocked()
        start.set()
    assert len(winners) == 1
    assert await coordination.get("seed-once") == str(winners[0]).encode()


async def test_compare_and_set(coordination: Coordination, clock: FakeClock) -> None:
    assert await coordination.compare_and_set("k", None, b"1")  # None expected: must be absent
    assert not await coordination.compare_and_set("k", None, b"2")
    assert not await coordination.compare_and_set("k", b"0", b"2")  # wrong expectation: unchanged
    assert await coordination.get("k") == b"1"
    assert await coordination.compare_and_set("k", b"1", b"2")
    assert await coordination.get("k") == b"2"
    assert not await coordination.compare_and_set("k", b"1", None)
    assert await coordination.compare_and_set("k", b"2", None)  # None value: delete
    assert await coordination.get("k") is None
    assert not await coordination.compare_and_set("k", b"2", b"3")  # absent is not b"2"
    assert await coordination.compare_and_set("k", None, None)  # absent stays absent
    assert await coordination.get("k") is None

    assert await coordination.compare_and_set("t", None, b"1", ttl=5)
    clock.advance(5)
    assert not await coordination.compare_and_set("t", b"1", b"2")  # expired: absent
    assert await coordination.compare_and_set("t", None, b"2")


async def test_counters(coordination: Coordination, clock: FakeClock) -> None:
    assert await coordination.incr("pages") == 1  # missing = 0
    assert await coordination.incr("pages", 10) == 11
    assert await coordination.incr("pages", -12) == -1
    assert await coordination.get("pages") == b"-1"  # a counter is a value in ASCII decimal
    await coordination.set("answer", b"41")
    assert await coordination.incr("answer") == 42
    assert await coordination.incr("zero", 0) == 0

    await coordination.set("window", b"5", ttl=10)
    clock.advance(6)
    assert await coordination.incr("window") == 6  # keeps the expiry
    clock.advance(4)
    assert await coordination.get("window") is None
    assert await coordination.incr("window") == 1  # expired = missing; now never expires
    clock.advance(1_000)
    assert await coordination.get("window") == b"1"

    for bad in (b"x", b"1.5", b"", b" 1", b"+1", b"01", b"1_0"):
        await coordination.set("bad", bad)
        with pytest.raises(CoordinationError, match="not a counter") as caught:
            await coordination.incr("bad")
        assert caught.value.key == "bad" and isinstance(caught.value, MocraError)
        assert await coordination.get("bad") == bad  # unchanged

    await coordination.set("big", str(2**63 - 1).encode())
    with pytest.raises(CoordinationError, match="overflow"):
        await coordination.incr("big")
    assert await coordination.incr("big", -(2**64 - 1)) == -(2**63)


async def test_lists(coordination: Coordination) -> None:
    assert await coordination.items("log") == []
    assert await coordination.append("log", b"a") == 1
    assert await coordination.append("log", b"") == 2
    assert await coordination.append("log", b"c") == 3
    assert await coordination.append("log-2", b"other list") == 1
    assert await coordination.items("log") == [b"a", b"", b"c"]
    assert await coordination.items("log-2") == [b"other list"]
    await coordination.delete("log")
    assert await coordination.items("log") == []
    assert await coordination.append("log", b"fresh") == 1
    assert await coordination.items("log") == [b"fresh"]


async def test_a_key_holds_a_value_or_a_list(coordination: Coordination) -> None:
    await coordination.append("list", b"a")
    await coordination.set("value", b"v")
    for call in (
        coordination.get("list"),
        coordination.incr("list"),
        coordination.compare_and_set("list", None, b"x"),
        coordination.append("value", b"x"),
        coordination.items("value"),
    ):
        with pytest.raises(CoordinationError, match="holds a"):
            await call
    assert not await coordination.set_if_absent("list")  # present
    assert await coordination.items("list") == [b"a"] and await coordination.get("value") == b"v"
    await coordination.set("list", b"now a value")  # set replaces either kind
    assert await coordination.get("list") == b"now a value"
    await coordination.delete("list")
    assert await coordination.append("list", b"b") == 1  # the old elements are gone
    assert await coordination.items("list") == [b"b"]


async def test_bad_keys_and_ttls_are_refused(coordination: Coordination) -> None:
    longest = "k" * MAX_KEY_BYTES
    await coordination.set(longest, b"ok")
    assert await coordination.get(longest) == b"ok"
    for key in ("", "a\x00b", "k" * (MAX_KEY_BYTES + 1), "é" * (MAX_KEY_BYTES // 2 + 1)):
        with pytest.raises(ValueError, match="keys"):
            await coordination.get(key)
        with pytest.raises(ValueError, match="keys"):
            await coordination.acquire_lock(key, "h", ttl=1)
    for ttl in (0, -1.0):
        with pytest.raises(ValueError, match="ttl"):
            await coordination.set("k", b"v", ttl=ttl)
        with pytest.raises(ValueError, match="ttl"):
            await coordination.set_if_absent("k", ttl=ttl)
        with pytest.raises(ValueError, match="ttl"):
            await coordination.acquire_lock("lock", "h", ttl=ttl)
    with pytest.raises(ValueError, match="reserved"):
        await coordination.acquire_lock("__leader__", "h", ttl=1)
    assert await coordination.get("k") is None


# ---------------------------------------------------------------------- locks


async def test_locks_exclude_until_they_expire(coordination: Coordination, clock: FakeClock) -> None:
    first = await coordination.acquire_lock("login/alice", "a", ttl=10)
    assert first is not None and first >= 1
    assert await coordination.acquire_lock("login/alice", "b", ttl=10) is None
    assert await coordination.lock_holder("login/alice") == LockInfo(
        holder="a", token=first, expires=clock.now() + 10
    )
    clock.advance(9.9)
    assert await coordination.acquire_lock("login/alice", "b", ttl=10) is None
    clock.advance(0.1)  # expired
    assert await coordination.lock_holder("login/alice") is None
    second = await coordination.acquire_lock("login/alice", "b", ttl=10)
    assert second is not None and second > first
    holder = await coordination.lock_holder("login/alice")
    assert holder is not None and (holder.holder, holder.token) == ("b", second)


async def test_locks_and_values_are_separate(coordination: Coordination) -> None:
    assert await coordination.acquire_lock("x", "a", ttl=10) is not None
    assert await coordination.get("x") is None
    await coordination.set("x", b"value")
    assert await coordination.acquire_lock("x", "b", ttl=10) is None
    assert await coordination.lock_holder("never") is None


async def test_the_same_holder_acquires_again_with_a_new_token(coordination: Coordination) -> None:
    old = await coordination.acquire_lock("cron", "a", ttl=10)
    new = await coordination.acquire_lock("cron", "a", ttl=10)
    assert old is not None and new is not None and new > old
    assert not await coordination.renew_lock("cron", "a", old, ttl=10)  # replaced
    assert not await coordination.release_lock("cron", "a", old)
    assert await coordination.renew_lock("cron", "a", new, ttl=10)


async def test_only_the_holder_renews(coordination: Coordination, clock: FakeClock) -> None:
    token = await coordination.acquire_lock("job", "a", ttl=10)
    assert token is not None
    assert not await coordination.renew_lock("job", "b", token, ttl=10)  # wrong holder
    assert not await coordination.renew_lock("job", "a", token + 1, ttl=10)  # wrong token
    assert not await coordination.renew_lock("other", "a", token, ttl=10)  # wrong lock
    clock.advance(8)
    assert await coordination.renew_lock("job", "a", token, ttl=10)
    clock.advance(8)  # 16 s after acquiring: kept alive by the renewal
    assert await coordination.acquire_lock("job", "b", ttl=10) is None
    info = await coordination.lock_holder("job")
    assert info is not None and (info.token, info.expires) == (token, clock.now() + 2)

    clock.advance(5)  # expired, but nobody took it over: the holder may still renew
    assert await coordination.lock_holder("job") is None
    assert await coordination.renew_lock("job", "a", token, ttl=10)
    assert await coordination.lock_holder("job") == LockInfo(
        holder="a", token=token, expires=clock.now() + 10
    )

    clock.advance(11)
    taken = await coordination.acquire_lock("job", "b", ttl=10)
    assert taken is not None and taken > token
    assert not await coordination.renew_lock("job", "a", token, ttl=10)  # taken over
    assert await coordination.lock_holder("job") == LockInfo(
        holder="b", token=taken, expires=clock.now() + 10
    )


async def test_release_checks_holder_and_token(coordination: Coordination, clock: FakeClock) -> None:
    token = await coordination.acquire_lock("job", "a", ttl=10)
    assert token is not None
    assert not await coordination.release_lock("job", "b", token)
    assert not await coordination.release_lock("job", "a", token - 1)
    assert await coordination.acquire_lock("job", "b", ttl=10) is None  # still held
    assert await coordination.release_lock("job", "a", token)
    assert not await coordination.release_lock("job", "a", token)  # already free
    assert await coordination.lock_holder("job") is None
    again = await coordination.acquire_lock("job", "b", ttl=10)
    assert again is not None and again > token

    clock.advance(11)
    late = await coordination.acquire_lock("job", "c", ttl=10)
    assert late is not None
    assert not await coordination.release_lock("job", "b", again)  # expired and taken over
    assert not await coordination.renew_lock("job", "b", again, ttl=10)
    holder = await coordination.lock_holder("job")
    assert holder is not None and holder.holder == "c"


async def test_tokens_increase_strictly_across_locks(coordination: Coordination) -> None:
    tokens = []
    for i in range(20):
        token = await coordination.acquire_lock(f"lock-{i % 7}", f"holder-{i}", ttl=100)
        if token is None:  # held by an earlier holder: release it, then take it
            info = await coordination.lock_holder(f"lock-{i % 7}")
            assert info is not None
            assert await coordination.release_lock(f"lock-{i % 7}", info.holder, info.token)
            token = await coordination.acquire_lock(f"lock-{i % 7}", f"holder-{i}", ttl=100)
        assert token is not None
        tokens.append(token)
    assert tokens == sorted(set(tokens)) and len(tokens) == 20


async def test_a_single_node_is_the_leader(coordination: Coordination, clock: FakeClock) -> None:
    assert await coordination.is_leader()
    clock.advance(3_600)
    assert await coordination.is_leader()
