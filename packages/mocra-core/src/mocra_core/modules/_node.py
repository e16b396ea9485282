"""`Node`, `Account` and `Login`: the parts a multi-node module is made of."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import msgspec

if TYPE_CHECKING:
    from ..http import Response
    from ._context import Ctx, TaskCtx

__all__ = ("Account", "Login", "Node")

T = TypeVar("T")

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


class Account(msgspec.Struct, frozen=True, kw_only=True):
    """Credentials a module logs in with; each account gets its own run, session and cookie jar.

    Attributes:
        name: Unique name of the account within the module (used in logs, run ids and session keys).
        username: What the login form wants, if anything.
        password: Never logged.
        extra: Anything else the login step needs.

    Example:
        >>> Account(name="alice", username="alice", password="secret")
        Account(name='alice', username='alice', password='***', extra={})
    """

    name: str
    username: str = ""
    password: str = ""
    extra: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (
            f"Account(name={self.name!r}, username={self.username!r}, password='***', extra={self.extra!r})"
        )


class Login(msgspec.Struct, kw_only=True):
    """What a login step returns: cookies and headers added to every request of the account, and data.

    Cookies set by the server during login are kept in the account's session without being listed here.
    """

    cookies: dict[str, str] = {}
    headers: dict[str, str] = {}
    extra: dict[str, Any] = {}


class Node(Generic[T]):
    """One step of a module.

    `generate` turns a task into requests; `parse` turns responses into items, follow-ups and tasks for
    other nodes.

    Attributes:
        id: Stable id within the module; defaults to the class name in snake case.
        fan_in: Wait until every upstream node of the run is done, then run once; tasks sent to this node
            are gathered into `ctx.inputs` instead of running one by one (a merge).
        advance: Use the advance gate: when a parse of this node yields no task and no follow-up, each
            successor is started once per run with the current task's meta.

    Example:
        >>> class ListBooks(Node[dict]):
        ...     async def generate(self, ctx):
        ...         ctx.get("https://example.com/books")
        >>> ListBooks().id
        'list_books'
    """

    id: ClassVar[str] = ""
    fan_in: ClassVar[bool] = False
    advance: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("id"):
            cls.id = _CAMEL.sub("_", cls.__name__).lower()

    async def generate(self, ctx: TaskCtx[T]) -> None:
        """Make the requests for `ctx.task` (`ctx.get(url)`, `ctx.add(request)`); may also emit and route."""

    async def parse(self, response: Response, ctx: Ctx[T]) -> None:
        """Turn a response into items (`ctx.emit`), follow-ups (`ctx.follow`) and tasks (`ctx.next`, ...)."""
