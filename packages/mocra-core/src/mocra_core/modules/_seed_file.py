"""`read_seed_urls`: the start URLs of a crawl, read from a column of a CSV file or an Excel workbook."""

from __future__ import annotations

import csv
import os
import pathlib
import zipfile
from typing import TYPE_CHECKING

from .._errors import ConfigError
from .._lazy import require_extra

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

__all__ = ("read_seed_urls",)

_CSV = {".csv": ",", ".tsv": "\t"}
_XLSX = (".xlsx", ".xlsm")


def read_seed_urls(
    path: str | os.PathLike[str], *, column: str | int = "url", sheet: str | None = None
) -> list[str]:
    r"""The values of one column of a `.csv` / `.tsv` file (UTF-8) or an `.xlsx` workbook, in order.

    Args:
        path: The file (relative paths are to the working directory).
        column: A name: the first row is the header, and the column whose header is `column` (or, if
            none is, the one that matches without regard to case and surrounding spaces) is read. An
            index (0 for the first column): every row is data, a header too.
        sheet: The workbook's sheet; `None` for its first. Ignored for CSV.

    Empty cells are skipped; other values are given as text, stripped, URLs or not: `Seeds.get` sets
    aside what is not an absolute http(s) URL (in `seeds.invalid`, counted as dropped `invalid_url`).
    A workbook is read with openpyxl in read-only mode (the `excel` extra), cell values as saved (a
    formula's last computed value); a hyperlink's text is read, not its target.

    Raises:
        ConfigError: the file is missing or unreadable, not UTF-8, of another extension, or has no such
            column or sheet (naming the file and the columns or sheets it has).
        MissingExtra: a workbook without the `excel` extra.

    Example:
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     shops = pathlib.Path(tmp, "shops.csv")
        ...     _ = shops.write_text("name,URL\nA,https://a.example/\nB,\nC,c.example\n")
        ...     read_seed_urls(shops)
        ['https://a.example/', 'c.example']
    """
    name = os.fspath(path)
    suffix = pathlib.Path(name).suffix.lower()
    if suffix in _CSV:
        rows: Iterable[Sequence[object]] = _csv_rows(name, _CSV[suffix])
    elif suffix in _XLSX:
        require_extra("openpyxl", "excel", f"reading seeds from {name!r}")
        rows = _xlsx_rows(name, sheet)
    else:
        raise ConfigError(
            "start_urls_file", f"{suffix or 'no extension'}: use .csv, .tsv or .xlsx", source=name
        )
    try:
        return list(_column(rows, column, name))
    except OSError as exc:
        raise ConfigError("start_urls_file", f"cannot read it: {exc.strerror or exc}", source=name) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError("start_urls_file", f"not UTF-8 text: {exc}", source=name) from exc


def _column(rows: Iterable[Sequence[object]], column: str | int, source: str) -> Iterator[str]:
    iterator = iter(rows)
    if isinstance(column, str):
        header = [str(cell).strip() if cell is not None else "" for cell in next(iterator, ())]
        index = _header_index(header, column, source)
    else:
        index = column
    for row in iterator:
        value = row[index] if index < len(row) else None
        if value is None:
            continue
        text = str(value).strip()
        if text:
            yield text


def _header_index(header: list[str], column: str, source: str) -> int:
    if column in header:
        return header.index(column)
    folded = [name.casefold() for name in header]
    wanted = column.strip().casefold()
    if wanted in folded:
        return folded.index(wanted)
    raise ConfigError("start_urls_column", f"no column {column!r}; the header is {header}", source=source)


def _csv_rows(path: str, delimiter: str) -> Iterator[list[str]]:
    try:
        file = open(path, newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError("start_urls_file", f"cannot read it: {exc.strerror or exc}", source=path) from exc
    with file:
        yield from csv.reader(file, delimiter=delimiter)


def _xlsx_rows(path: str, sheet: str | None) -> Iterator[tuple[object, ...]]:
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, InvalidFileException) as exc:
        raise ConfigError("start_urls_file", f"cannot read the workbook: {exc}", source=path) from exc
    try:
        if sheet is not None and sheet not in book.sheetnames:
            raise ConfigError(
                "start_urls_sheet", f"no sheet {sheet!r}; it has {book.sheetnames}", source=path
            )
        worksheet = book[sheet] if sheet is not None else book.worksheets[0]
        yield from worksheet.iter_rows(values_only=True)
    finally:
        book.close()
