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
    parts: list[sql.Composable] = []
    if query.provider is not None:
        parts.append(sql.SQL("provider = %(provider)s"))
        params["provider"] = query.provider
    if query.channel_id is not None:
        parts.append(sql.SQL("external_channel_id = %(channel_id)s"))
        params["channel_id"] = query.channel_id
    if query.since is not None:
        parts.append(sql.SQL("occurred_at >= %(since)s"))
        params["since"] = query.since
    if query.until is not None:
        parts.append(sql.SQL("occurred_at < %(until)s"))
        params["until"] = query.until
    return sql.SQL("").join(sql.SQL(" AND ") + p for p in parts)


def window_filters(query: HistoryQuery, params: dict[str, Any]) -> sql.Composable:
    """The same filters over dw_message_embeddings: a window qualifies if its time span
    overlaps the range (its messages are filtered one by one afterwards)."""
    parts: list[sql.Composable] = []
    if query.provider is not None:
        parts.append(sql.SQL("provider = %(provider)s"))
        params["provider"] = query.provider
    if query.channel_id is not None:
        parts.append(sql.SQL("external_channel_id = %(channel_id)s"))
        params["channel_id"] = query.channel_id
    if query.since is not None:
        parts.append(sql.SQL("last_occurred_at >= %(since)s"))
        params["since"] = query.since
    if query.until is not None:
        parts.append(sql.SQL("first_occurred_at < %(until)s"))
        params["until"] = query.until
    return sql.SQL("").join(sql.SQL(" AND ") + p for p in parts)
