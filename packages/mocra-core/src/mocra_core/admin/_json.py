"""JSON in and out of the admin API: msgspec-encoded responses, `{"error": ...}`, and checked bodies."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from starlette.responses import Response

if TYPE_CHECKING:
    from collections.abc import Mapping

    from starlette.requests import Request

__all__ = ("ApiError", "error_response", "json_response", "read_body")

T = TypeVar("T")


class ApiError(Exception):
    """An answer other than success: its status and the message naming the problem (or the field)."""

    def __init__(self, status: int, message: str, *, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


def json_response(content: Any, status: int = 200) -> Response:
    """`content` (builtins or msgspec Structs) as a JSON response."""
    return Response(msgspec.json.encode(content), status_code=status, media_type="application/json")


def error_response(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    """The API's error shape: `{"error": "<message>"}` with `status`.

    Example:
        >>> error_response(404, "no job x").body
        b'{"error":"no job x"}'
    """
    body = msgspec.json.encode({"error": message})
    return Response(body, status_code=status, media_type="application/json", headers=dict(headers or {}))


async def read_body(request: Request, into: type[T]) -> T:
    """The request's JSON body decoded into `into` (an empty body is `{}`).

    Raises:
        ApiError: 400 naming the field (`Expected array, got str - at $.topics`) or the JSON error.
    """
    body = await request.body()
    try:
        return msgspec.json.decode(body.strip() or b"{}", type=into)
    except msgspec.ValidationError as exc:
        raise ApiError(400, f"invalid body: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ApiError(400, f"malformed JSON: {exc}") from None
