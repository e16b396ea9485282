"""RetryPolicy and parse_retry_after as tables."""

from __future__ import annotations

import pytest

from mocra_core import (
    BodyTooLarge,
    DownloadError,
    DownloadTimeout,
    InvalidURL,
    TooManyRedirects,
    UnfetchableURL,
)
from mocra_core.download import RetryPolicy, RetrySettings, parse_retry_after
from mocra_core.http import Request

NOW = 1_445_412_470.0  # Wed, 21 Oct 2015 07:27:50 GMT
REQUEST = Request("https://example.com/")


def policy(**settings: object) -> RetryPolicy:
    return RetryPolicy(RetrySettings(**settings), random=lambda: 1.0, clock=lambda: NOW)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("attempt", "kwargs", "expected"),
    [
        # retryable statuses, exponential backoff 0.5 * 2^(n-1) (random() = 1.0: the ceiling itself)
        (1, {"status": 503}, 0.5),
        (2, {"status": 500}, 1.0),
        (3, {"status": 429}, 2.0),
        (4, {"status": 503}, None),  # max_retries = 3 exhausted
        (1, {"status": 408}, 0.5),
        (1, {"status": 502}, 0.5),
        (1, {"status": 504}, 0.5),
        # not retryable statuses
        (1, {"status": 200}, None),
        (1, {"status": 404}, None),
        (1, {"status": 403}, None),
        (1, {"status": 501}, None),
        # errors
        (1, {"error": DownloadTimeout("t")}, 0.5),
        (2, {"error": DownloadError("reset")}, 1.0),
        (1, {"error": ConnectionResetError()}, 0.5),
        (1, {"error": TimeoutError()}, 0.5),
        (1, {"error": BodyTooLarge("big")}, None),
        (1, {"error": TooManyRedirects("loop")}, None),
        (1, {"error": UnfetchableURL("file:///etc/passwd", "redirected to file://")}, None),
        (1, {"error": InvalidURL("x", "bad")}, None),
        (1, {"error": ValueError("a bug")}, None),
        (1, {}, None),
        # Retry-After wins, capped at max_retry_after
        (1, {"status": 503, "retry_after": "7"}, 7.0),
        (3, {"status": 429, "retry_after": "0"}, 0.0),
        (1, {"status": 503, "retry_after": "9999"}, 300.0),
        (1, {"status": 503, "retry_after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 10.0),
        (1, {"status": 503, "retry_after": "soon"}, 0.5),  # unparseable: the backoff
        (4, {"status": 503, "retry_after": "1"}, None),  # exhausted whatever the server says
        (1, {"status": 404, "retry_after": "1"}, None),  # not retryable whatever the server says
    ],
)
def test_decide(attempt: int, kwargs: dict[str, object], expected: float | None) -> None:
    assert policy().decide(REQUEST, attempt, **kwargs) == expected  # type: ignore[arg-type]


def test_backoff_is_capped_by_max_delay() -> None:
    assert policy(max_retries=100).decide(REQUEST, 50, status=503) == 60.0
    assert policy(max_retries=10_000).decide(REQUEST, 5000, status=503) == 60.0  # no overflow


def test_full_jitter_draws_below_the_ceiling() -> None:
    draws = iter([0.0, 0.25, 0.999])
    jittered = RetryPolicy(random=lambda: next(draws))
    assert [jittered.decide(REQUEST, 3, status=503) for _ in range(3)] == [0.0, 0.5, 1.998]


def test_request_max_retries_overrides_the_settings() -> None:
    assert policy().decide(Request("https://example.com/", max_retries=0), 1, status=503) is None
    assert policy().decide(Request("https://example.com/", max_retries=6), 6, status=503) == 16.0
    assert policy().decide(Request("https://example.com/", max_retries=6), 7, status=503) is None


def test_custom_statuses_and_zero_retries() -> None:
    custom = policy(statuses=frozenset({404}))
    assert custom.statuses == frozenset({404})
    assert custom.decide(REQUEST, 1, status=404) == 0.5
    assert custom.decide(REQUEST, 1, status=503) is None
    assert policy(max_retries=0).decide(REQUEST, 1, status=503) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        (" 3 ", 3.0),
        ("0", 0.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 10.0),
        ("Wed, 21 Oct 2015 07:00:00 GMT", 0.0),  # in the past
        ("Wednesday, 21-Oct-15 07:28:00 GMT", 10.0),  # RFC 850, obsolete but allowed
        ("Wed Oct 21 07:28:00 2015", None),  # asctime has no zone: refused rather than guessed
        ("-5", None),
        ("1.5", None),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, NOW) == expected


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_retries": -1}, "max_retries"),
        ({"base": -0.1}, "base"),
        ({"max_delay": float("nan")}, "max_delay"),
        ({"max_retry_after": -1.0}, "max_retry_after"),
        ({"statuses": frozenset({999})}, "statuses"),
    ],
)
def test_settings_reject_nonsense(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        RetrySettings(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [-1.0, float("inf"), float("nan")])
def test_max_domain_backoff_must_be_finite_and_not_negative(value: float) -> None:
    with pytest.raises(ValueError, match="max_domain_backoff: must be a finite number of seconds >= 0"):
        RetrySettings(max_domain_backoff=value)
