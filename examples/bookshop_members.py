"""A multi-node module: log in → walk a cursor-paginated JSON list → fetch every book → merge.

Serve the demo shop in one terminal (`uv run mocra demo --serve`), then in another:

    uv run mocra run examples/bookshop_members.py -o members.jsonl
"""

import math

import msgspec

from mocra import Account, Ctx, Login, LoginSession, Module, Node, Response, TaskCtx

BASE = "http://127.0.0.1:8000"


class Book(msgspec.Struct):
    id: int
    title: str
    price: float
    upc: str
    in_stock: int
    rating: int


class Summary(msgspec.Struct):
    books: int
    in_stock_total: int
    mean_price: float


class Listing(Node[Book]):
    """The JSON list: one `detail` task per book, then the next page (same node) until the last cursor."""

    id = "list"
    advance = False  # the detail tasks carry the run on; no gate needed

    async def generate(self, ctx: TaskCtx[Book]) -> None:
        ctx.get(f"{BASE}/api/books?limit=20")

    async def parse(self, response: Response, ctx: Ctx[Book]) -> None:
        page = response.json()
        for book in page["items"]:
            ctx.next({"id": book["id"]})  # fan-out: one task per book for the successor
        if page["next_cursor"]:
            ctx.follow(f"?cursor={page['next_cursor']}&limit=20")  # stay on this node


class Detail(Node[Book]):
    """One book: emit it, and hand its figures to the merge."""

    id = "detail"

    async def generate(self, ctx: TaskCtx[Book]) -> None:
        ctx.get(f"{BASE}/api/books/{ctx.meta['id']}")

    async def parse(self, response: Response, ctx: Ctx[Book]) -> None:
        book = response.json(Book)
        ctx.emit(book)
        ctx.next({"price": book.price, "in_stock": book.in_stock})


class Merge(Node[Summary]):
    """Runs once per run, after every detail is done, with what each detail sent (fan-in)."""

    id = "merge"
    fan_in = True

    async def generate(self, ctx: TaskCtx[Summary]) -> None:
        prices = [entry["price"] for entry in ctx.inputs]
        ctx.emit(
            Summary(
                books=len(prices),
                in_stock_total=sum(entry["in_stock"] for entry in ctx.inputs),
                mean_price=round(math.fsum(prices) / len(prices), 2) if prices else 0.0,
            )
        )


class Members(Module[Book | Summary]):
    name = "members"
    accounts = (Account(name="alice", username="alice", password="wonderland"),)
    relogin_on = frozenset({401})

    def nodes(self) -> list[Node[Book | Summary]]:
        return [Listing(), Detail(), Merge()]  # type: ignore[list-item]

    async def login(self, session: LoginSession) -> Login | None:
        assert session.account is not None
        form = await session.get(f"{BASE}/login")
        csrf = form.css_first("input[name=csrf_token]")
        response = await session.post(
            f"{BASE}/login",
            form={
                "username": session.account.username,
                "password": session.account.password,
                "csrf_token": csrf.attrs.get("value") or "" if csrf else "",
            },
        )
        if response.status != 200:
            raise session.fail(f"HTTP {response.status} from the login form")
        return None  # the session cookie set by the site is kept in the account's jar
