"""Item shapes and recorded responses: what a deploy's verify runs `parse` over and compares."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import msgspec

from ..http import Request, Response

if TYPE_CHECKING:
    import pathlib
    from collections.abc import Iterable, Iterator

__all__ = ("RecordedResponse", "item_shape", "read_responses", "shape_changes")

_JSON_NAME = ".json"


class RecordedResponse(msgspec.Struct, kw_only=True):
    """A response recorded for a deploy's verify: a `.json` file of a responses dir.

    Attributes:
        url: The response's URL.
        body: Its body, as text.
        status: Its HTTP status.
        headers: Its headers.
        callback: The spider callback that parses it (None: `parse`).
        meta: The request's `meta`.
    """

    url: str
    body: str
    status: int = 200
    headers: dict[str, str] = {}
    callback: str | None = None
    meta: dict[str, Any] = {}

    def response(self) -> Response:
        """The `Response` a spider's callback gets."""
        request = Request(self.url, meta=self.meta, callback=self.callback)
        headers = self.headers or {"content-type": "text/html; charset=utf-8"}
        return Response(self.url, self.status, list(headers.items()), self.body.encode(), request)


def read_responses(folder: pathlib.Path, module: str) -> Iterator[tuple[str, RecordedResponse]]:
    """The recorded responses for `module`: the files of `folder` and of `folder/<module>`, by name.

    A `.json` file is a `RecordedResponse`; any other file is an HTML body at `https://verify.invalid/<name>`.
    """
    files = [path for base in (folder, folder / module) if base.is_dir() for path in sorted(base.iterdir())]
    for path in files:
        if not path.is_file():
            continue
        if path.suffix == _JSON_NAME:
            yield path.name, msgspec.json.decode(path.read_bytes(), type=RecordedResponse)
        else:
            text = path.read_bytes().decode("utf-8", "replace")
            yield path.name, RecordedResponse(url=f"https://verify.invalid/{path.name}", body=text)


def item_shape(items: Iterable[object]) -> tuple[str, ...]:
    """The shape of items: each field with the type of its values (`field:type`), sorted.

    Example:
        >>> item_shape([{"title": "a", "price": 1.5}, {"title": "b", "price": None}])
        ('price:NoneType', 'price:float', 'title:str')
    """
    found: set[str] = set()
    for item in items:
        for field, value in _fields(item).items():
            found.add(f"{field}:{type(value).__name__}")
    return tuple(sorted(found))


def _fields(item: object) -> dict[str, Any]:
    if isinstance(item, dict):
        return {str(key): value for key, value in item.items()}
    if isinstance(item, msgspec.Struct):
        return msgspec.structs.asdict(item)
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return {field.name: getattr(item, field.name) for field in dataclasses.fields(item)}
    return {"": item}


def shape_changes(before: tuple[str, ...], after: tuple[str, ...]) -> list[str]:
    """What changed from shape `before` to `after`, for people; [] when they are equal.

    Example:
        >>> shape_changes(("price:float", "title:str"), ("price:str", "title:str"))
        ['price:float is gone', 'price:str is new']
    """
    gone = [f"{field} is gone" for field in before if field not in after]
    new = [f"{field} is new" for field in after if field not in before]
    return gone + new
