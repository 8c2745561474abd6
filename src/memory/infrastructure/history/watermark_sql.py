"""A watermark as SQL: which of a partition's `dw_chat_events` rows are its main stream, its
late stream, and not yet consumed (docs/adr/0030). The one place these predicates are
written; `PostgresChatEventLog`'s sweep reads compose them."""

from __future__ import annotations

from typing import Any

from psycopg import sql

from memory.domain.history.sweep_plan import LateCatchUp, WatermarkMark

_AFTER_POSITION = sql.SQL("(occurred_at, event_id) > (%(p_at)s, %(p_id)s)")
_AT_OR_BEFORE_POSITION = sql.SQL("(occurred_at, event_id) <= (%(p_at)s, %(p_id)s)")


class WatermarkPredicates:
    """Predicates for one `WatermarkMark`; their parameters are bound into `params` (the
    statement's parameter dict) when the object is built."""

    def __init__(self, mark: WatermarkMark, params: dict[str, Any]) -> None:
        self._mark = mark
        self._params = params
        if mark.position is not None:
            params |= {
                "seen_seq": mark.seen_seq,
                "p_at": mark.position.occurred_at,
                "p_id": mark.position.event_id,
            }

    def main_stream(self) -> sql.Composable:
        """Rows after the position (every row before anything was consumed)."""
        return sql.SQL("TRUE") if self._mark.position is None else _AFTER_POSITION

    def late(self) -> sql.Composable:
        """Rows at or before the position that were ingested after `seen_seq`."""
        if self._mark.position is None:
            return sql.SQL("FALSE")
        return sql.SQL("(ingest_seq > %(seen_seq)s AND {})").format(_AT_OR_BEFORE_POSITION)

    def late_stream(self, late: LateCatchUp) -> sql.Composable:
        """The late rows a catch-up reads: ingested up to its horizon, after its cursor."""
        if self._mark.position is None:
            raise ValueError("nothing can be late before anything was consumed")
        self._params["horizon"] = late.horizon_seq
        after_cursor: sql.Composable = sql.SQL("TRUE")
        if late.cursor is not None:
            self._params |= {"c_at": late.cursor.occurred_at, "c_id": late.cursor.event_id}
            after_cursor = sql.SQL("(occurred_at, event_id) > (%(c_at)s, %(c_id)s)")
        return sql.SQL("({} AND ingest_seq <= %(horizon)s AND {})").format(
            self.late(), after_cursor
        )

    def unconsumed(self) -> sql.Composable:
        """Rows the sweep has still to consume: the main stream, and late rows a catch-up
        in progress has not passed yet."""
        late = self._mark.late
        if self._mark.position is None:
            return sql.SQL("TRUE")
        consumed_late: sql.Composable = sql.SQL("FALSE")
        if late is not None and late.cursor is not None:
            self._params |= {
                "horizon": late.horizon_seq,
                "c_at": late.cursor.occurred_at,
                "c_id": late.cursor.event_id,
            }
            consumed_late = sql.SQL(
                "(ingest_seq <= %(horizon)s AND (occurred_at, event_id) <= (%(c_at)s, %(c_id)s))"
            )
        return sql.SQL("({} OR ({} AND NOT {}))").format(
            self.main_stream(), self.late(), consumed_late
        )


# The same predicates for a slice's partitions read in one statement (`read_main_many`):
# each partition's mark is a row of the statement's `marks` (m_at, m_id: the position,
# NULL before anything was consumed; m_seen: seen_seq). Without a position every row is
# after it (every stored row is later than -infinity) and none is late.
MAIN_STREAM_OF_MARKS = sql.SQL(
    "(occurred_at, event_id) > (coalesce(m_at, '-infinity'::timestamptz), coalesce(m_id, ''))"
)
LATE_OF_MARKS = sql.SQL(
    "(m_at IS NOT NULL AND ingest_seq > m_seen AND (occurred_at, event_id) <= (m_at, m_id))"
)
