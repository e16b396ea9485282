"""The README quick start: scrape the demo bookshop (`uv run mocra demo --serve` serves it on port 8000)."""

import msgspec

from mocra import Ctx, Mocra, Response, Spider, on_item


class Book(msgspec.Struct):
    title: str
    price: str


class Books(Spider[Book]):
    name = "books"
    start_urls = ["http://127.0.0.1:8000/catalogue/page-1.html"]
    scope = "same-domain"  # the default: links to other sites are not followed

    async def parse(self, response: Response, ctx: Ctx[Book]) -> None:
        for href in response.links("article.product_pod h3 a"):
            ctx.follow(href, callback=self.parse_book)
        for href in response.links("li.next a"):
            ctx.follow(href)

    async def parse_book(self, response: Response, ctx: Ctx[Book]) -> None:
        title, price = response.css_first("h1"), response.css_first("p.price_color")
        if response.status == 200 and title and price:
            ctx.emit(Book(title=title.text(), price=price.text()))


if __name__ == "__main__":
    result = Mocra.builder().spider(Books(), on_item(print)).run()
    print(f"{result.stats.items} books, {result.stats.responses} pages")
