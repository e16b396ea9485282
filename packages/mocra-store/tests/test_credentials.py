"""Credentials: encrypted at rest with a key, the platform's login before the any-platform one, and no
secret in a repr, a log line or an error."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from sqlalchemy import text

from mocra_store import Credentials, SecretKeyError, Store, generate_key
from mocra_store._engine import make_engine

pytestmark = pytest.mark.anyio

SECRET = "s3cret-Pa55"


def logins() -> dict[str, Any]:
    return {
        "platforms": {"shop": {}, "forum": {}},
        "accounts": {
            "alice": {
                "credentials": {
                    "shop": {"username": "alice@shop", "password": SECRET, "extra": {"otp": "base32"}},
                    "*": {"username": "alice", "password": "any-" + SECRET},
                }
            },
            "bob": {"credentials": {"shop": {"username": "bob", "password": "b"}}},
        },
    }


async def _raw_secrets(url: str) -> list[str]:
    engine = make_engine(url)
    try:
        async with engine.connect() as connection:
            return list((await connection.execute(text("SELECT secret FROM credentials"))).scalars())
    finally:
        await engine.dispose()


async def test_the_platform_login_wins_over_the_any_platform_one(url: str) -> None:
    async with Store.open(url) as store:
        await store.import_tenants(logins())

        shop = await store.credentials("alice", "shop")
        forum = await store.credentials("alice", "forum")
        anywhere = await store.credentials("alice")
        bob_forum = await store.credentials("bob", "forum")
        nobody = await store.credentials("carol", "shop")

    assert shop == Credentials("alice@shop", SECRET, {"otp": "base32"})
    assert forum == anywhere == Credentials("alice", "any-" + SECRET, {})
    assert bob_forum is None and nobody is None


async def test_with_a_key_the_column_holds_no_plaintext(url: str) -> None:
    key = generate_key()
    async with Store.open(url, key=key) as store:
        await store.import_tenants(logins())
        found = await store.credentials("alice", "shop")

    raw = await _raw_secrets(url)
    assert found is not None and found.password == SECRET
    assert len(raw) == 3
    assert all(value.startswith("fernet:") for value in raw)
    assert not any(SECRET in value or "any-" in value for value in raw)


async def test_the_key_can_come_from_the_environment(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOCRA_STORE_KEY", generate_key())
    async with Store.open(url) as store:
        await store.import_tenants(logins())
        assert (await store.credentials("bob", "shop")) == Credentials("bob", "b", {})

    assert all(value.startswith("fernet:") for value in await _raw_secrets(url))


async def test_without_a_key_secrets_are_stored_tagged_plain(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MOCRA_STORE_KEY", raising=False)
    async with Store.open(url) as store:
        await store.import_tenants(logins())

    assert sorted(await _raw_secrets(url)) == sorted(["plain:" + SECRET, "plain:any-" + SECRET, "plain:b"])


async def test_no_key_or_a_wrong_key_raise_secret_key_error_without_the_secret(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MOCRA_STORE_KEY", raising=False)
    async with Store.open(url, key=generate_key()) as store:
        await store.import_tenants(logins())

    async with Store.open(url) as store:
        with pytest.raises(SecretKeyError) as no_key:
            await store.credentials("alice", "shop")
    async with Store.open(url, key=generate_key()) as store:
        with pytest.raises(SecretKeyError) as wrong_key:
            await store.credentials("alice", "shop")

    assert "is encrypted but no key is set" in str(no_key.value)
    assert "MOCRA_STORE_KEY" in str(no_key.value)
    assert "wrong key?" in str(wrong_key.value)
    for error in (no_key.value, wrong_key.value):
        assert "alice" in str(error) and "shop" in str(error)
        assert SECRET not in str(error) and SECRET not in repr(error)
        assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


def test_a_malformed_key_is_refused_without_echoing_it() -> None:
    with pytest.raises(SecretKeyError, match="not a Fernet key") as raised:
        Store("sqlite:///:memory:", key="not-a-key-hunter2")

    assert "hunter2" not in str(raised.value)


async def test_rotating_keys_with_multifernet_and_resealing(url: str) -> None:
    old, new = generate_key(), generate_key()
    async with Store.open(url, key=old) as store:
        await store.import_tenants(logins())
    before = await _raw_secrets(url)

    async with Store.open(url, key=[new, old]) as store:
        assert (await store.credentials("alice", "shop")) is not None
        assert await store.reseal_secrets() == 3
    async with Store.open(url, key=new) as store:
        found = await store.credentials("alice", "shop")

    assert found is not None and found.password == SECRET
    assert set(await _raw_secrets(url)).isdisjoint(before)


async def test_set_credentials_replaces_a_login(url: str) -> None:
    async with Store.open(url, key=generate_key()) as store:
        await store.import_tenants(logins())
        await store.set_credentials("alice", "shop", username="new", password="n3w", extra={"k": 1})
        await store.set_credentials("bob", None, username="bob", password="any")

        assert await store.credentials("alice", "shop") == Credentials("new", "n3w", {"k": 1})
        assert await store.credentials("bob", "forum") == Credentials("bob", "any", {})


async def test_no_secret_in_reprs_logs_or_exports(url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with Store.open(url, key=generate_key()) as store:
        await store.import_tenants(logins())
        found = await store.credentials("alice", "shop")
        exported = await store.export_tenants()
        shown = repr(store) + repr(found) + str(found) + repr(await store.accounts())

    assert found is not None and found.password == SECRET
    assert SECRET not in shown and "base32" not in shown
    assert "password='***'" in repr(found)
    assert SECRET not in caplog.text
    assert SECRET not in repr(exported)
    assert all("credentials" not in account for account in exported["accounts"].values())
