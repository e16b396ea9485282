"""BodyDecoder on its own: encodings, chunk boundaries, caps."""

from __future__ import annotations

import gzip
import zlib

import pytest

from mocra_core import BodyTooLarge, DownloadError
from mocra_core.download import BodyDecoder
from mocra_core.http import Request

REQUEST = Request("https://example.com/page")
PAGE = b"".join(b"line %d of the page\n" % i for i in range(5000))


def decode(encoding: str, data: bytes, *, cap: int = 1 << 20, step: int = 0) -> bytes:
    decoder = BodyDecoder(encoding, cap, REQUEST)
    for i in range(0, len(data), step or len(data) or 1):
        decoder.feed(data[i : i + (step or len(data))])
    return decoder.finish()


@pytest.mark.parametrize("step", [0, 1, 2, 3, 1000])
@pytest.mark.parametrize(
    ("encoding", "packed"),
    [
        ("gzip", gzip.compress(PAGE)),
        ("x-gzip", gzip.compress(PAGE)),
        ("GZIP", gzip.compress(PAGE)),
        ("deflate", zlib.compress(PAGE)),
        ("deflate", zlib.compress(PAGE)[2:-4]),
        ("", PAGE),
        ("identity", PAGE),
        ("gzip, deflate", zlib.compress(gzip.compress(PAGE))),  # applied in order, undone in reverse
    ],
)
def test_decodes_whatever_the_chunk_boundaries(encoding: str, packed: bytes, step: int) -> None:
    assert decode(encoding, packed, step=step) == PAGE


def test_concatenated_gzip_members() -> None:
    assert decode("gzip", gzip.compress(b"one ") + gzip.compress(b"two")) == b"one two"


def test_unknown_encoding_is_kept_as_received() -> None:
    assert decode("zstd", b"\x28\xb5\x2f\xfd opaque") == b"\x28\xb5\x2f\xfd opaque"
    assert decode("gzip, zstd", b"opaque") == b"opaque"


def test_cap_is_exact() -> None:
    assert decode("gzip", gzip.compress(bytes(1000)), cap=1000) == bytes(1000)
    with pytest.raises(BodyTooLarge, match="https://example.com/page"):
        decode("gzip", gzip.compress(bytes(1001)), cap=1000)
    assert decode("", bytes(1000), cap=1000, step=7) == bytes(1000)
    with pytest.raises(BodyTooLarge):
        decode("", bytes(1001), cap=1000, step=7)


def test_cap_applies_to_each_stage() -> None:
    with pytest.raises(BodyTooLarge):
        decode("gzip, deflate", zlib.compress(gzip.compress(bytes(100_000))), cap=1000)


def test_truncated_stream_gives_what_it_has() -> None:
    packed = gzip.compress(PAGE)
    body = decode("gzip", packed[: len(packed) // 2])
    assert PAGE.startswith(body) and len(body) > 1000


def test_corrupt_data_names_the_url() -> None:
    with pytest.raises(DownloadError, match="cannot decode the body of https://example.com/page") as info:
        decode("gzip", b"\x1f\x8bgarbage-garbage")
    assert info.value.request is REQUEST
    assert not isinstance(info.value, BodyTooLarge)
