"""`dw_chat_events` in PostgreSQL: ingest, full-text search, and the sweep's reads.

Every read that returns rows (search, the sweep, sweep status) sees only rows inside
`AcceptedTimeRange.for_stored_rows` (docs/adr/0041): a row an older version stored with an
instant psycopg cannot even load (year 10000, 1 BC) is never fetched, so it cannot make an
org's search or anyone's sweep fail. `out_of_range` finds such rows for the sweep to record.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from psycopg import sql

from memory.application.history.ports import (
    Clock,
    OutOfRangeEvent,
    ReindexedBatch,
    RowKey,
    StoredEvents,
)
from memory.domain.history.chat_event import EMBEDDABLE_DECISIONS, EVENT_TYPE_MESSAGE, ChatEvent
from memory.domain.history.conversation import ChatMessage
from memory.domain.history.full_text import (
    CURRENT_SEGMENTATION,
    FullTextQuery,
    Segmentation,
    WordSplitter,
)
from memory.domain.history.partition import Partition
from memory.domain.history.search import HistoryHit, HistoryQuery, MatchedBy
from memory.domain.history.sweep_plan import LateCatchUp, MainRead, PartitionRead, WatermarkMark
from memory.domain.time_range import AcceptedTimeRange
from memory.infrastructure.history.any_org_plan import plan_for_any_org
from memory.infrastructure.history.clock import system_clock
from memory.infrastructure.history.locks import INGEST_LOCK_CLASS
from memory.infrastructure.history.sql_filters import EMBEDDABLE, event_filters
from memory.infrastructure.history.watermark_sql import (
    LATE_OF_MARKS,
    MAIN_STREAM_OF_MARKS,
    WatermarkPredicates,
)
from memory.infrastructure.postgres.database import Database

_INSERT = sql.SQL(
    """
    INSERT INTO dw_chat_events (
        org_id, event_id, provider, external_channel_id, external_thread_id, sender,
        event_type, decision, message_text, occurred_at, search_tsv, search_segmentation)
    SELECT %(org_id)s, e.event_id, e.provider, e.channel, e.thread, e.sender, e.event_type,
           e.decision, e.text, e.occurred_at,
           to_tsvector('simple', coalesce(e.search_text, e.text)), %(segmentation)s
    FROM unnest(
        %(event_id)s::text[], %(provider)s::text[], %(channel)s::text[], %(thread)s::text[],
        %(sender)s::text[], %(event_type)s::text[], %(decision)s::text[], %(text)s::text[],
        %(occurred_at)s::timestamptz[], %(search_text)s::text[])
        AS e(event_id, provider, channel, thread, sender, event_type, decision, text,
             occurred_at, search_text)
    ON CONFLICT (org_id, event_id) DO NOTHING
    RETURNING provider, external_channel_id, event_type, decision
    """
)
# Ingest marks work for the sweep in its own transaction (docs/adr/0089): each partition
# that got an embeddable message is due now for every model sweepers sweep with, and its
# ingest count moves on, so a visit that raced with this ingest does not clear it.
_MARK_WORK = sql.SQL(
    """
    WITH inserted AS ({insert}), work AS (
        INSERT INTO dw_sweep_work AS w (
            org_id, provider, external_channel_id, model, changes, due_at, waiting_since,
            pending_windows)
        SELECT DISTINCT %(org_id)s, i.provider, i.external_channel_id, m.model, 1,
               '-infinity'::timestamptz, %(now)s::timestamptz, 1
        FROM inserted i CROSS JOIN dw_sweep_models m
        WHERE {embeddable}
        ORDER BY 2, 3, 4
        ON CONFLICT (org_id, provider, external_channel_id, model) DO UPDATE SET
            changes = w.changes + 1,
            due_at = least(w.due_at, excluded.due_at),
            waiting_since = least(w.waiting_since, excluded.waiting_since),
            pending_windows = greatest(w.pending_windows, 1)
        RETURNING 1)
    SELECT (SELECT count(*) FROM inserted) AS inserted
    """
)
_INSERT_PARTITIONS = sql.SQL(
    """
    INSERT INTO dw_chat_partitions (org_id, provider, external_channel_id)
    SELECT DISTINCT %(org_id)s, p.provider, p.channel
    FROM unnest(%(provider)s::text[], %(channel)s::text[]) AS p(provider, channel)
    ON CONFLICT DO NOTHING
    """
)
_PARTITION = sql.SQL(
    "org_id = %(org_id)s AND provider = %(provider)s AND external_channel_id = %(channel_id)s"
)
# For the rest of the transaction, a partition's reads take their order from its indexes: with
# no sort to fall back on, a stream ordered by (occurred_at, event_id) can come only from the
# timeline index and one ordered by ingest_seq only from the ingest index, whatever the
# statistics estimate for the org (a new org, not yet analysed, is estimated at one row, and
# a one-row estimate made the narrower (org_id, occurred_at) index look cheapest: it then
# scanned the org's every row per partition). JIT would compile for the penalised cost.
_PARTITION_ORDER = (
    "SELECT set_config('enable_sort', 'off', true), set_config('enable_incremental_sort',"
    " 'off', true), set_config('jit', 'off', true)"
)
# A partition named by the `marks` row of `read_main_many`.
_PARTITION_OF_MARKS = sql.SQL(
    "org_id = m_org AND provider = m_provider AND external_channel_id = m_channel"
)
_IN_RANGE = sql.SQL("occurred_at >= %(earliest)s AND occurred_at <= %(latest)s")
_OUT_OF_RANGE = sql.SQL("(occurred_at < %(earliest)s OR occurred_at > %(latest)s)")
# Whether a partition `p` has rows out of range, from its first and last instants: one entry
# at each end of its timeline index whatever the plan. Asked as `EXISTS (... AND
# {_OUT_OF_RANGE})`, a generic plan (psycopg prepares a statement on its fifth run, and the
# server may then keep a generic plan) guesses a third of the partition's rows out of range
# and scans the table for the first: 40 ms per partition, 2.9-4.5 s per slice of 128
# (docs/adr/0136).
_HAS_OUT_OF_RANGE = sql.SQL(
    "coalesce((SELECT occurred_at FROM dw_chat_events WHERE {p}"
    " ORDER BY occurred_at, event_id LIMIT 1) < %(earliest)s"
    " OR (SELECT occurred_at FROM dw_chat_events WHERE {p}"
    " ORDER BY occurred_at DESC, event_id DESC LIMIT 1) > %(latest)s, false)"
)
# A partition's state for its main read (docs/adr/0030): its horizon (the last ingest_seq),
# whether late messages wait and whether it holds rows outside the accepted range, each
# ordered so that only the partition's own indexes serve it (`_PARTITION_ORDER`).
_PARTITION_STATE = sql.SQL(
    "coalesce((SELECT ingest_seq FROM dw_chat_events WHERE {p}"
    " ORDER BY ingest_seq DESC LIMIT 1), 0) AS horizon,"
    " coalesce((SELECT TRUE FROM dw_chat_events WHERE {p} AND {e} AND {r} AND {late}"
    " ORDER BY ingest_seq LIMIT 1), FALSE) AS late,"
    " {out} AS out_of_range"
)


def _partition_state(partition: sql.Composable, late: sql.Composable) -> sql.Composed:
    """`_PARTITION_STATE` for the partition `partition` names, late messages being `late`."""
    return _PARTITION_STATE.format(
        p=partition,
        e=EMBEDDABLE,
        r=_IN_RANGE,
        late=late,
        out=_HAS_OUT_OF_RANGE.format(p=partition),
    )


# Rows left to re-index, in key order after a cursor (docs/adr/0051).
_STALE = sql.SQL(
    """
    SELECT org_id, event_id, message_text FROM dw_chat_events
    WHERE search_segmentation <> %(segmentation)s{after}
    ORDER BY org_id, event_id LIMIT %(limit)s
    """
)
_REINDEX = sql.SQL(
    """
    UPDATE dw_chat_events AS d
    SET search_tsv = to_tsvector('simple', u.search_text),
        search_segmentation = %(segmentation)s
    FROM unnest(%(org_id)s::text[], %(event_id)s::text[], %(search_text)s::text[])
        AS u(org_id, event_id, search_text)
    WHERE d.org_id = u.org_id AND d.event_id = u.event_id
    """
)
_INGEST = _MARK_WORK.format(
    insert=_INSERT,
    embeddable=sql.SQL("i.event_type = {} AND i.decision IN ({})").format(
        sql.Literal(EVENT_TYPE_MESSAGE),
        sql.SQL(", ").join(sql.Literal(d) for d in EMBEDDABLE_DECISIONS),
    ),
)
_MESSAGE_COLUMNS = sql.SQL("event_id, sender, message_text, occurred_at")
_HIT_COLUMNS = sql.SQL("event_id, provider, external_channel_id, sender, message_text, occurred_at")


def messages_of(
    event_ids: sql.Composable,
    org_id: str,
    query: HistoryQuery,
    params: dict[str, Any],
    now: datetime,
) -> sql.Composed:
    """A subquery for another adapter's statement: the messages `event_ids` (an SQL text
    array, e.g. a column of the outer row) name in the org, within the range of stored rows
    and the query's filters, with the columns `semantic_hit` reads; adds its parameters to
    `params`. Each id is one probe of the primary key whatever the plan, the range and the
    filters tested on the row found, so the statement may be prepared: a generic plan of
    `event_id = ANY(ids)` walked the org's every row in range (docs/adr/0117), and one of
    a join with the filters beside the key walked the channel's rows in range for each
    window (its guess for a range of unknown bounds is a narrow one; docs/adr/0155). The
    `LIMIT` keeps the filters out of the probe (the key is unique: it drops nothing)."""
    params |= _stored_range(now)
    return sql.SQL(
        "SELECT e.* FROM unnest({ids}) AS m(id), LATERAL ("
        "SELECT {columns} FROM dw_chat_events WHERE org_id = {org} AND event_id = m.id"
        " LIMIT 1) AS e WHERE {in_range}{filters}"
    ).format(
        columns=_HIT_COLUMNS,
        ids=event_ids,
        org=sql.Literal(org_id),
        in_range=_IN_RANGE,
        filters=event_filters(query, params),
    )


def _stored_range(now: datetime) -> dict[str, datetime]:
    """The parameters `_IN_RANGE` reads: the range of stored rows at `now`."""
    accepted = AcceptedTimeRange.for_stored_rows(now)
    return {"earliest": accepted.earliest, "latest": accepted.latest}


def semantic_hit(row: dict[str, Any]) -> HistoryHit:
    """A row of `messages_of` as a semantic hit (its window's figures not set yet)."""
    return _hit(row, MatchedBy.SEMANTIC)


class PostgresChatEventLog:
    """`segmentation` cuts texts for full-text search at ingest and for queries (only
    benchmarks pass another one); `split_words` cuts the CJK runs of queries into dictionary
    words (without it, each run is one phrase)."""

    def __init__(
        self,
        database: Database,
        segmentation: Segmentation = CURRENT_SEGMENTATION,
        *,
        clock: Clock = system_clock,
        split_words: WordSplitter | None = None,
    ) -> None:
        self._db = database
        self._clock = clock
        self._segmentation = segmentation
        self._split_words = split_words

    def _range(self, params: dict[str, Any]) -> dict[str, Any]:
        return params | _stored_range(self._clock())

    # Ingest ---------------------------------------------------------------------------

    def append(self, org_id: str, events: Sequence[ChatEvent]) -> StoredEvents:
        ids = [e.event_id for e in events]
        if any(i is None for i in ids):
            raise ValueError("events must have ids before they are stored")
        params: dict[str, Any] = {
            "org_id": org_id,
            "event_id": ids,
            "provider": [e.provider for e in events],
            "channel": [e.channel_id for e in events],
            "thread": [e.thread_id for e in events],
            "sender": [e.sender for e in events],
            "event_type": [e.event_type for e in events],
            "decision": [e.decision for e in events],
            "text": [e.text for e in events],
            "occurred_at": [e.occurred_at for e in events],
            # NULL where segmenting changes nothing (no CJK): the text is not sent twice.
            "search_text": [self._search_text(e.text) for e in events],
            "segmentation": self._segmentation.version,
        }
        with self._db.connection() as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (INGEST_LOCK_CLASS, org_id)
            )
            # Partitions first: the work rows reference them.
            conn.execute(_INSERT_PARTITIONS, params)
            row = conn.execute(_INGEST, params | {"now": self._clock()}).fetchone()
        assert row is not None
        return StoredEvents([str(i) for i in ids], int(cast(int, row["inserted"])))

    def _search_text(self, text: str) -> str | None:
        indexed = self._segmentation.index_text(text)
        return None if indexed == text else indexed

    # Search ---------------------------------------------------------------------------

    def full_text(self, org_id: str, query: HistoryQuery) -> list[HistoryHit]:
        """Every word outside CJK runs and every CJK word's phrase of bigrams must match
        (docs/adr/0050); cover density ranks messages holding the query's terms more often
        and closer together first, then the newest, then by id."""
        params = self._range({"org_id": org_id, "limit": query.limit})
        statement = sql.SQL(
            """
            SELECT {columns} FROM dw_chat_events, (SELECT {tsquery} AS q) AS query
            WHERE org_id = %(org_id)s AND search_tsv @@ query.q AND {in_range}{filters}
            ORDER BY ts_rank_cd(search_tsv, query.q) DESC, occurred_at DESC, event_id
            LIMIT %(limit)s
            """
        ).format(
            columns=_HIT_COLUMNS,
            tsquery=tsquery(self._segmentation.query(query.text, self._split_words), params),
            in_range=_IN_RANGE,
            filters=event_filters(query, params),
        )
        # Never a prepared statement: its generic plan (after psycopg's fifth run) knows
        # neither the terms nor the time range, and walked all of the org's rows by
        # (org_id, occurred_at) instead of the GIN index: 20+ ms instead of 2-3 ms at 10k
        # windows (bench/full_text.py).
        rows = self._db.read(lambda conn: conn.execute(statement, params, prepare=False).fetchall())
        return [_hit(row, MatchedBy.FTS) for row in rows]

    def messages(
        self, org_id: str, event_ids: Sequence[str], query: HistoryQuery
    ) -> list[HistoryHit]:
        # The subquery search's KNN statement reads its windows' messages with (one key
        # probe per id, so any plan of it is cheap; docs/adr/0117, 0155), each id once.
        params: dict[str, Any] = {"ids": list(dict.fromkeys(event_ids))}
        statement = messages_of(sql.SQL("%(ids)s::text[]"), org_id, query, params, self._clock())
        rows = self._db.read(lambda conn: conn.execute(statement, params).fetchall())
        return [semantic_hit(row) for row in rows]

    # Re-indexing ----------------------------------------------------------------------

    def count_stale(self, org_id: str | None = None) -> int:
        """Rows (of one org, or of all) indexed by another segmentation than this log's."""
        org = sql.SQL(" AND org_id = %(org_id)s") if org_id is not None else sql.SQL("")
        statement = sql.SQL(
            "SELECT count(*) AS n FROM dw_chat_events"
            " WHERE search_segmentation <> %(segmentation)s{org}"
        ).format(org=org)
        params = {"segmentation": self._segmentation.version, "org_id": org_id}
        with self._db.connection() as conn:
            row = conn.execute(statement, params).fetchone()
        assert row is not None
        return int(cast(int, row["n"]))

    def reindex_batch(self, after: RowKey | None, limit: int) -> ReindexedBatch:
        """Re-index up to `limit` stale rows after `after` (key order), in one transaction.
        Each row is written with this log's segmentation, so a batch repeated after a crash
        finds nothing left to do, and ingest running meanwhile is not disturbed."""
        params: dict[str, Any] = {"segmentation": self._segmentation.version, "limit": limit}
        after_sql = sql.SQL("")
        if after is not None:
            params |= {"a_org": after.org_id, "a_id": after.event_id}
            after_sql = sql.SQL(" AND (org_id, event_id) > (%(a_org)s, %(a_id)s)")
        with self._db.connection() as conn:
            rows = conn.execute(_STALE.format(after=after_sql), params).fetchall()
            if rows:
                conn.execute(
                    _REINDEX,
                    {
                        "segmentation": self._segmentation.version,
                        "org_id": [r["org_id"] for r in rows],
                        "event_id": [r["event_id"] for r in rows],
                        "search_text": [
                            self._segmentation.index_text(str(r["message_text"])) for r in rows
                        ],
                    },
                )
        last = RowKey(str(rows[-1]["org_id"]), str(rows[-1]["event_id"])) if rows else None
        return ReindexedBatch(len(rows), last if len(rows) == limit else None)

    # The sweep ------------------------------------------------------------------------

    def org_known(self, org_id: str) -> bool:
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM dw_chat_partitions WHERE org_id = %s) AS known",
                (org_id,),
            ).fetchone()
        return bool(row and row["known"])

    def partitions(self, org_id: str | None = None) -> list[Partition]:
        where = sql.SQL(" WHERE org_id = %(org_id)s") if org_id is not None else sql.SQL("")
        statement = sql.SQL(
            "SELECT org_id, provider, external_channel_id FROM dw_chat_partitions{where}"
            " ORDER BY org_id, provider, external_channel_id"
        ).format(where=where)
        with self._db.connection() as conn:
            rows = conn.execute(statement, {"org_id": org_id}).fetchall()
        return [
            Partition(str(r["org_id"]), str(r["provider"]), str(r["external_channel_id"]))
            for r in rows
        ]

    def read_main(self, partition: Partition, mark: WatermarkMark, limit: int) -> MainRead:
        """One statement, so one snapshot, for the horizon, the late check and the read
        (docs/adr/0030); the read is empty when late messages wait."""
        params = self._range(_partition_params(partition) | {"limit": limit + 1})
        streams = WatermarkPredicates(mark, params)
        statement = sql.SQL(
            """
            WITH state AS (
                SELECT {state}),
                 stream AS (
                SELECT {columns} FROM dw_chat_events
                WHERE {p} AND {e} AND {r} AND {main} AND NOT (SELECT late FROM state)
                ORDER BY occurred_at, event_id LIMIT %(limit)s)
            SELECT state.horizon, state.late, state.out_of_range, stream.*
            FROM state LEFT JOIN stream ON TRUE
            ORDER BY stream.occurred_at, stream.event_id
            """
        ).format(
            state=_partition_state(_PARTITION, streams.late()),
            p=_PARTITION,
            e=EMBEDDABLE,
            r=_IN_RANGE,
            main=streams.main_stream(),
            columns=_MESSAGE_COLUMNS,
        )
        with self._db.connection() as conn:
            # Each part of the read is ordered so that only the partition's own indexes
            # serve it (`_PARTITION_ORDER`): planned for a new org's value before it was
            # analysed, the horizon and the first and last instants scanned the org's every
            # row through (org_id, occurred_at), 77-98 ms per read of one partition among
            # 30,000 rows; planned for any org, the stream did, among 1,000 small orgs
            # (docs/adr/0136).
            conn.execute(_PARTITION_ORDER)
            rows = conn.execute(statement, params).fetchall()
        return _main_read(rows, limit)

    def read_main_many(
        self, marks: Sequence[tuple[Partition, WatermarkMark]], limit: int
    ) -> dict[Partition, MainRead]:
        """`read_main` for a slice's partitions in one statement (docs/adr/0115): per
        partition, from the statement's one snapshot, its horizon, late check and read. Only
        for marks with no late catch-up in progress (those read their late stream)."""
        if any(mark.late is not None for _, mark in marks):
            raise ValueError("a mark with a late catch-up reads its late stream")
        if not marks:
            return {}
        params = self._range(
            {
                "orgs": [p.org_id for p, _ in marks],
                "providers": [p.provider for p, _ in marks],
                "channels": [p.channel_id for p, _ in marks],
                "at": [None if m.position is None else m.position.occurred_at for _, m in marks],
                "ids": [None if m.position is None else m.position.event_id for _, m in marks],
                "seen": [m.seen_seq for _, m in marks],
                "limit": limit + 1,
            }
        )
        statement = sql.SQL(
            """
            WITH marks AS (
                SELECT * FROM unnest(%(orgs)s::text[], %(providers)s::text[],
                                     %(channels)s::text[], %(at)s::timestamptz[],
                                     %(ids)s::text[], %(seen)s::bigint[])
                    WITH ORDINALITY AS m(m_org, m_provider, m_channel, m_at, m_id, m_seen, m_i)
            ), state AS MATERIALIZED (  -- once per partition, not once per message
                SELECT marks.*, {state} FROM marks)
            SELECT state.m_i, state.horizon, state.late, state.out_of_range, stream.*
            FROM state LEFT JOIN LATERAL (
                SELECT {columns} FROM dw_chat_events
                WHERE {p} AND {e} AND {r} AND {main} AND NOT state.late
                ORDER BY occurred_at, event_id LIMIT %(limit)s) AS stream ON TRUE
            ORDER BY state.m_i, stream.occurred_at, stream.event_id
            """
        ).format(
            state=_partition_state(_PARTITION_OF_MARKS, LATE_OF_MARKS),
            p=_PARTITION_OF_MARKS,
            e=EMBEDDABLE,
            r=_IN_RANGE,
            main=MAIN_STREAM_OF_MARKS,
            columns=_MESSAGE_COLUMNS,
        )
        with self._db.connection() as conn:
            # Without statistics (a bulk ingest of a new org, not yet analysed) the planner
            # serves each partition's stream from the (org_id, occurred_at) index plus a
            # sort, scanning the org's rows per partition (700 ms per slice of 128 at
            # 10,000 partitions, 1.3 ms once analysed): no sort leaves it the timeline
            # index's order; JIT would compile for the penalised cost (docs/adr/0115).
            conn.execute(_PARTITION_ORDER)
            rows = conn.execute(statement, params).fetchall()
        by_mark: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            by_mark[int(cast(int, row["m_i"]))].append(row)
        return {
            partition: _main_read(by_mark[i], limit)
            for i, (partition, _) in enumerate(marks, start=1)
        }

    def read_late(
        self, partition: Partition, mark: WatermarkMark, late: LateCatchUp, limit: int
    ) -> PartitionRead:
        params = self._range(_partition_params(partition)) | {"limit": limit + 1}
        stream = WatermarkPredicates(mark, params).late_stream(late)
        statement = sql.SQL(
            "SELECT {columns} FROM dw_chat_events WHERE {p} AND {e} AND {r} AND {stream}"
            " ORDER BY occurred_at, event_id LIMIT %(limit)s"
        ).format(columns=_MESSAGE_COLUMNS, p=_PARTITION, e=EMBEDDABLE, r=_IN_RANGE, stream=stream)
        with self._db.connection() as conn:
            conn.execute(_PARTITION_ORDER)  # as `read_main`: the timeline, whatever the org
            rows = conn.execute(statement, params).fetchall()
        return _read(rows, limit)

    def count_unconsumed(self, partition: Partition, mark: WatermarkMark) -> int:
        params = self._range(_partition_params(partition))
        unconsumed = WatermarkPredicates(mark, params).unconsumed()
        statement = sql.SQL(
            "SELECT count(*) AS n FROM dw_chat_events WHERE {p} AND {e} AND {r} AND {c}"
        ).format(p=_PARTITION, e=EMBEDDABLE, r=_IN_RANGE, c=unconsumed)
        with self._db.connection() as conn:
            plan_for_any_org(conn)
            row = conn.execute(statement, params).fetchone()
        assert row is not None
        return int(cast(int, row["n"]))

    def out_of_range(
        self, partition: Partition, known: Sequence[str], limit: int
    ) -> list[OutOfRangeEvent]:
        """Up to `limit` of the partition's rows outside the stored range, except `known`.
        The instant is formatted by PostgreSQL: psycopg could not load it as a datetime."""
        params = self._range(_partition_params(partition)) | {
            "known": list(known),
            "limit": limit,
        }
        statement = sql.SQL(
            "SELECT event_id, occurred_at::text AS occurred_at FROM dw_chat_events"
            " WHERE {p} AND {out} AND event_id <> ALL(%(known)s::text[])"
            " ORDER BY event_id LIMIT %(limit)s"
        ).format(p=_PARTITION, out=_OUT_OF_RANGE)
        with self._db.connection() as conn:
            rows = conn.execute(statement, params).fetchall()
        return [OutOfRangeEvent(str(r["event_id"]), str(r["occurred_at"])) for r in rows]


def tsquery(query: FullTextQuery, params: dict[str, Any]) -> sql.Composable:
    """The tsquery history search asks with; its values go into `params`."""
    parts: list[sql.Composable] = []
    if query.words or not query.phrases:
        params["q_words"] = query.words
        parts.append(sql.SQL("plainto_tsquery('simple', %(q_words)s)"))
    for i, phrase in enumerate(query.phrases):
        params[f"q_phrase_{i}"] = phrase
        parts.append(
            sql.SQL("phraseto_tsquery('simple', {})").format(sql.Placeholder(f"q_phrase_{i}"))
        )
    return sql.SQL(" && ").join(parts)


def _partition_params(partition: Partition) -> dict[str, Any]:
    return {
        "org_id": partition.org_id,
        "provider": partition.provider,
        "channel_id": partition.channel_id,
    }


def _main_read(rows: list[dict[str, Any]], limit: int) -> MainRead:
    """A main read from its statement's rows: the state columns on every row (always one
    row, with or without messages), a message on each row that has one."""
    first = rows[0]
    horizon = int(cast(int, first["horizon"]))
    out_of_range = bool(first["out_of_range"])
    if first["late"]:
        return MainRead(PartitionRead((), True), horizon, True, out_of_range)
    messages = [r for r in rows if r["event_id"] is not None]
    return MainRead(_read(messages, limit), horizon, False, out_of_range)


def _read(rows: list[dict[str, Any]], limit: int) -> PartitionRead:
    messages = tuple(
        ChatMessage(str(r["event_id"]), str(r["sender"]), str(r["message_text"]), r["occurred_at"])
        for r in rows[:limit]
    )
    return PartitionRead(messages, complete=len(rows) <= limit)


def _hit(row: dict[str, Any], matched_by: MatchedBy) -> HistoryHit:
    occurred_at: datetime = row["occurred_at"]
    return HistoryHit(
        event_id=str(row["event_id"]),
        provider=str(row["provider"]),
        channel_id=str(row["external_channel_id"]),
        sender=str(row["sender"]),
        text=str(row["message_text"]),
        occurred_at=occurred_at,
        matched_by=matched_by,
    )
