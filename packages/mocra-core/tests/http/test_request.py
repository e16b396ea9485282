import pytest

from mocra_core import InvalidURL
from mocra_core.http import Request


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.com/s", "https://example.com/s?q=a+b&page=2"),
        ("https://example.com/s?x=1", "https://example.com/s?x=1&q=a+b&page=2"),
        ("https://example.com/s?", "https://example.com/s?q=a+b&page=2"),
        ("https://example.com/s#frag", "https://example.com/s?q=a+b&page=2#frag"),
        ("https://example.com/s#a?b", "https://example.com/s?q=a+b&page=2#a?b"),
    ],
)
def test_params_go_into_the_query_before_the_fragment(url: str, expected: str) -> None:
    assert Request(url, params={"q": "a b", "page": 2}).url == expected


def test_replace_with_a_new_payload_drops_the_old_body() -> None:
    form = Request("https://example.com/api", method="POST", form={"a": "1"}, headers={"X-Key": "k"})
    as_json = form.replace(json={"a": 1})
    assert as_json.body == b'{"a":1}'
    assert as_json.headers == {"X-Key": "k", "Content-Type": "application/json"}
    assert form.replace(priority=3).body == b"a=1"


def test_invalid_urls() -> None:
    for url in ("ftp://example.com/", "https:///nohost", "https://example.com/a b", "/relative"):
        with pytest.raises(InvalidURL):
            Request(url)
