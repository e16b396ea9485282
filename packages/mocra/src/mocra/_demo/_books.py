"""The demo site's catalogue: books generated from a seed, with no files and no network."""

from __future__ import annotations

import random
import re
import unicodedata
from dataclasses import dataclass

__all__ = ("RATINGS", "Book", "make_books")

RATINGS = ("One", "Two", "Three", "Four", "Five")

_ADJECTIVES = (
    "Silent", "Crimson", "Hidden", "Last", "Broken", "Golden", "Quiet", "Wild", "Forgotten", "Distant",
    "Burning", "Frozen", "Secret", "Endless", "Little", "Restless", "Hollow", "Bright", "Salt", "Paper",
)  # fmt: skip
_NOUNS = (
    "River", "Garden", "Lighthouse", "Orchard", "Harbour", "Bookshop", "Winter", "Empire", "Mirror", "Forest",
    "Kingdom", "Island", "Summer", "Kite", "Lantern", "Meadow", "Tower", "Voyage", "Letter", "Machine",
)  # fmt: skip
_PEOPLE = ("Astronomer", "Gardener", "Cartographer", "Clockmaker", "Stranger", "Widow", "Keeper", "Baker")
_PATTERNS = (
    "The {adj} {noun}",
    "A {noun} of {noun2}s",
    "The {person}'s {noun}",
    "{adj} {noun}s",
    "Notes from the {adj} {noun}",
    "The {noun} & the {noun2}",
    "How to Build a {adj} {noun}: A Field Guide for the {adj2} {person}",
)
_FILLER = (
    "a", "story", "of", "the", "sea", "and", "those", "who", "wait", "for", "it", "quietly", "told", "with",
    "wit", "patience", "grief", "letters", "an", "old", "house", "by", "river", "where", "nothing", "ever",
    "changes", "until", "everything", "does", "across", "three", "summers", "between", "two", "families",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Book:
    """One book of the demo catalogue; `in_stock` ≥ 1, `price` in pence."""

    book_id: int
    title: str
    slug: str
    price_pence: int
    upc: str
    in_stock: int
    rating: str
    description: str

    @property
    def price(self) -> str:
        """The price as shown on the site, e.g. ``£51.77``."""
        return f"£{self.price_pence // 100}.{self.price_pence % 100:02d}"

    @property
    def dirname(self) -> str:
        """The detail page's folder under ``/catalogue/``: ``<slug>_<id>``."""
        return f"{self.slug}_{self.book_id}"

    @property
    def path(self) -> str:
        """The detail page's absolute path."""
        return f"/catalogue/{self.dirname}/index.html"


def slugify(title: str) -> str:
    """ASCII, lower-case, hyphen-separated: ``Café & Co`` → ``cafe-co``."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-") or "book"


def _title(rng: random.Random) -> str:
    adj, adj2 = rng.sample(_ADJECTIVES, 2)
    noun, noun2 = rng.sample(_NOUNS, 2)
    return rng.choice(_PATTERNS).format(
        adj=adj, adj2=adj2, noun=noun, noun2=noun2, person=rng.choice(_PEOPLE)
    )


def _description(rng: random.Random) -> str:
    words = [rng.choice(_FILLER) for _ in range(rng.randint(25, 60))]
    return " ".join(words).capitalize() + "."


def make_books(seed: int, count: int, *, cafe_index: int) -> tuple[Book, ...]:
    """Generate `count` books with unique titles; the book at `cafe_index` is titled ``Café Stories: …``.

    The same `seed` and `count` always give the same books (`random.Random(seed)` only).

    Example:
        >>> books = make_books(7, 3, cafe_index=1)
        >>> books == make_books(7, 3, cafe_index=1), books[1].title.startswith("Café ")
        (True, True)
    """
    rng = random.Random(seed)
    seen: set[str] = set()
    books: list[Book] = []
    for index in range(count):
        title = _title(rng)
        if index == cafe_index:
            title = f"Café Stories: {title}"
        while title in seen:  # the word lists give thousands of titles; number the rare repeat
            title = f"{title} ({len(seen)})"
        seen.add(title)
        books.append(
            Book(
                book_id=index + 1,
                title=title,
                slug=slugify(title),
                price_pence=rng.randint(1000, 5999),
                upc=f"{rng.getrandbits(64):016x}",
                in_stock=rng.randint(1, 22),
                rating=rng.choice(RATINGS),
                description=_description(rng),
            )
        )
    return tuple(books)
