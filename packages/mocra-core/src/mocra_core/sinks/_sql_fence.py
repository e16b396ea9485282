"""Fenced rows of the keyed `SqlSink`: each row keeps the claim that wrote it, and a stale claim loses.

A row written under a `Fence` carries two columns, `_mocra_claim` (the message claimed) and
`_mocra_fence` (the claim's token: the delivery attempt). The upsert replaces a row unless the row was
written under the same claim with a higher token — the write of a worker whose lease expired and was
handed to another. Rows without a claim (written without a fence, or before the columns existed) are
replaced as before, and so are rows of another message with the same key (the last write wins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..queue._fence import Fence

__all__ = ("CLAIM", "TOKEN", "fence_condition", "fenced_rows")

CLAIM = "_mocra_claim"
TOKEN = "_mocra_fence"


def fenced_rows(
    rows: Sequence[dict[str, Any]], fences: Sequence[Fence | None], key: Sequence[str]
) -> tuple[list[dict[str, Any]], int]:
    """`rows` with their fence columns, one per key, and how many lost to a newer claim in the batch.

    Of several rows with one key, the last wins, as one write after another would leave it, except that
    a row under a stale claim loses to one of the same message under a newer lease.

    Example:
        >>> from mocra_core.queue import Fence
        >>> rows = [{"id": 1, "v": "new"}, {"id": 1, "v": "old"}, {"id": 2, "v": "x"}]
        >>> kept, lost = fenced_rows(rows, [Fence("q/7", 2), Fence("q/7", 1), None], ["id"])
        >>> [(r["id"], r["v"], r["_mocra_fence"]) for r in kept], lost
        ([(1, 'new', 2), (2, 'x', None)], 1)
    """
    kept: dict[tuple[Any, ...], tuple[dict[str, Any], Fence | None]] = {}
    lost = 0
    for row, fence in zip(rows, fences, strict=True):
        ident = tuple(row[name] for name in key)
        before = kept.get(ident)
        if before is not None:
            older = before[1]
            if fence is not None and older is not None:
                if fence.stale_against(older):
                    lost += 1
                    continue
                lost += older.stale_against(fence)
        claim, token = (None, None) if fence is None else (fence.claim, fence.token)
        kept[ident] = ({**row, CLAIM: claim, TOKEN: token}, fence)
    return [row for row, _ in kept.values()], lost


def fence_condition(table: sa.Table, excluded: Any) -> sa.ColumnElement[bool]:
    """The upsert's WHERE: the row has no claim, another message's, or an older lease of this one's."""
    return sa.or_(
        table.c[CLAIM].is_(None),
        excluded[CLAIM].is_(None),
        excluded[CLAIM].is_distinct_from(table.c[CLAIM]),
        excluded[TOKEN] >= table.c[TOKEN],
    )
