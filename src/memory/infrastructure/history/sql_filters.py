"""SQL fragments shared by the history adapters: the embeddable-message predicate and the
search filters, composed with `psycopg.sql` from domain constants."""

from __future__ import annotations

from typing import Any

from psycopg import sql

from memory.domain.history.chat_event import EMBEDDABLE_DECISIONS, EVENT_TYPE_MESSAGE
from memory.domain.history.search import HistoryQuery

EMBEDDABLE = sql.SQL("event_type = {} AND decision IN ({})").format(
    sql.Literal(EVENT_TYPE_MESSAGE),
    sql.SQL(", ").join(sql.Literal(d) for d in EMBEDDABLE_DECISIONS),
)


def event_filters(query: HistoryQuery, params: dict[str, Any]) -> sql.Composable:
    """`AND ...` for the query's provider, channel and time range over dw_chat_events."""
    return _scope_filters(query, params, since_column="occurred_at", until_column="occurred_at")


def window_filters(query: HistoryQuery, params: dict[str, Any]) -> sql.Composable:
    """The same filters over dw_message_embeddings: a window qualifies if its time span
    overlaps the range (its messages are filtered one by one afterwards)."""
    return _scope_filters(
        query, params, since_column="last_occurred_at", until_column="first_occurred_at"
    )


def _scope_filters(
    query: HistoryQuery, params: dict[str, Any], *, since_column: str, until_column: str
) -> sql.Composable:
    parts: list[sql.Composable] = []
    if query.provider is not None:
        parts.append(sql.SQL("provider = %(provider)s"))
        params["provider"] = query.provider
    if query.channel_id is not None:
        parts.append(sql.SQL("external_channel_id = %(channel_id)s"))
        params["channel_id"] = query.channel_id
    if query.since is not None:
        parts.append(sql.SQL("{} >= %(since)s").format(sql.Identifier(since_column)))
        params["since"] = query.since
    if query.until is not None:
        parts.append(sql.SQL("{} < %(until)s").format(sql.Identifier(until_column)))
        params["until"] = query.until
    return sql.SQL("").join(sql.SQL(" AND ") + p for p in parts)
