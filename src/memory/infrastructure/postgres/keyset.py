"""Keyset pages of a listing, newest first (the audit log, the policy listing): filters
added one optional condition at a time, the page starting after the last key the previous
page ended on, and one row more than the page fetched to know whether another follows.

Keyset rather than OFFSET: a page costs the same however deep it is, and rows written while
a client pages land in front of its cursor instead of shifting every later page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from psycopg import sql

T = TypeVar("T")


class NewestFirst:
    """One page's query: `SELECT ... WHERE <conditions> ORDER BY <key> DESC LIMIT page + 1`,
    with its named parameters in `params`."""

    def __init__(self, key: Sequence[str], limit: int) -> None:
        self._key = [sql.SQL(column) for column in key]
        self._limit = limit
        self._conditions: list[sql.Composable] = []
        self.params: dict[str, Any] = {"page_take": limit + 1}

    def where(self, condition: sql.Composable | str, **values: Any) -> None:
        """Add `condition` with its `%(name)s` values; a filter whose value is None is not
        given, and adds nothing."""
        if any(value is None for value in values.values()):
            return
        self._conditions.append(sql.SQL(condition) if isinstance(condition, str) else condition)
        self.params.update(values)

    def after(self, position: Sequence[Any] | None) -> None:
        """Start after `position` (the key of the previous page's last row), if any."""
        if position is None:
            return
        names = [f"page_after_{i}" for i in range(len(self._key))]
        self._conditions.append(
            sql.SQL("({}) < ({})").format(
                sql.SQL(", ").join(self._key),
                sql.SQL(", ").join(sql.Placeholder(n) for n in names),
            )
        )
        self.params.update(zip(names, position, strict=True))

    def statement(self, select: sql.Composable) -> sql.Composed:
        """`select` (columns and FROM) with the conditions, the order and the limit."""
        where = sql.SQL(" AND ").join(self._conditions) if self._conditions else sql.SQL("TRUE")
        order = sql.SQL(", ").join(column + sql.SQL(" DESC") for column in self._key)
        return sql.SQL("{select} WHERE {where} ORDER BY {order} LIMIT %(page_take)s").format(
            select=select, where=where, order=order
        )

    def page(self, rows: Sequence[T]) -> tuple[list[T], bool]:
        """The page's rows and whether more follow."""
        return list(rows[: self._limit]), len(rows) > self._limit
