"""`dw_message_embeddings` in PostgreSQL: the sweep's upserts and KNN for search.

Every statement names `(org_id, model)` (or, for cleanup, the model): vectors of two models
are never compared. The column has no fixed dimension, so a query that forgot the model
filter would fail loudly on mixed sizes rather than compare silently.

Search takes one of two paths per org (memory.domain.history.search_path, docs/adr/0134):
the exact scan (ADR 0034), or, once the org has a ready partial HNSW index of its own
(memory.infrastructure.history.search_indexes), a walk of that index with the relevance
distribution estimated from a fixed sample of the org's windows.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, cast

from pgvector import HalfVector
from psycopg import sql

from memory.application.history.ports import EmbeddedWindow, WindowMatch
from memory.domain.embedding import EmbeddingVector
from memory.domain.history.search import HistoryQuery
from memory.domain.history.search_path import HistorySearchMode, uses_index, wants_index
from memory.domain.relevance import MIN_DISTRIBUTION, ScriptGroup, script_group
from memory.infrastructure.history.any_org_plan import plan_for_any_org
from memory.infrastructure.history.locks import RETENTION_LOCK_CLASS
from memory.infrastructure.history.search_indexes import PostgresWindowIndexes
from memory.infrastructure.history.sql_filters import window_filters
from memory.infrastructure.postgres.database import Database

# A window is written only if every event it covers still exists: a purge that ran while
# the window was being embedded wins (the shared retention lock orders the two).
_UPSERT = sql.SQL(
    """
    INSERT INTO dw_message_embeddings (
        id, org_id, provider, external_channel_id, model, embedding, content,
        source_event_ids, first_occurred_at, last_occurred_at, script_group)
    SELECT %(id)s, %(org_id)s, %(provider)s, %(channel_id)s, %(model)s, %(embedding)s,
           %(content)s, %(event_ids)s::text[], %(first)s, %(last)s, %(script_group)s
    WHERE NOT EXISTS (
        SELECT 1 FROM unnest(%(event_ids)s::text[]) AS s(event_id)
        WHERE NOT EXISTS (
            SELECT 1 FROM dw_chat_events e
            WHERE e.org_id = %(org_id)s AND e.event_id = s.event_id))
    ON CONFLICT (id) DO UPDATE SET
        embedding = excluded.embedding,
        content = excluded.content,
        source_event_ids = excluded.source_event_ids,
        first_occurred_at = excluded.first_occurred_at,
        last_occurred_at = excluded.last_occurred_at,
        script_group = excluded.script_group,
        created_at = now()
    RETURNING id
    """
)
# A window re-cut after a crash (e.g. a message arrived in between) replaces the rows of
# the same model and partition that covered any of its events, so no event is embedded
# twice. One statement for a batch of several partitions' windows. The candidates come from
# the index of source events alone (`OFFSET 0` keeps the other conditions out of that scan:
# with the org or the model in it, the planner may scan every row of the org or the model,
# once per batch), then each must be of the model and share an event with a window of its
# own partition.
_REPLACE_OVERLAPPING = sql.SQL(
    """
    DELETE FROM dw_message_embeddings d
    USING (SELECT id, org_id, provider, external_channel_id, model, source_event_ids
           FROM dw_message_embeddings WHERE source_event_ids && %(event_ids)s::text[]
           OFFSET 0) AS c
    WHERE d.id = c.id AND c.model = %(model)s AND c.id <> ALL(%(ids)s::uuid[])
      AND EXISTS (
        SELECT 1 FROM unnest(%(orgs)s::text[], %(providers)s::text[], %(channels)s::text[],
                             %(event_ids)s::text[]) AS s(org_id, provider, channel_id, event_id)
        WHERE s.org_id = c.org_id AND s.provider = c.provider
          AND s.channel_id = c.external_channel_id AND s.event_id = ANY(c.source_event_ids))
    """
)


# The index path's estimate of a query's similarity distribution: the org's first windows
# in id order (deterministic uuids: effectively random, and the same for every search), as
# policy search samples its view (docs/adr/0112, 0134). 1,000 puts the mean within ~0.03
# spreads and the spread within ~2% (a relevance of 2.75 within ~0.1); each window costs a
# 1024-dimension distance, the largest share of an index search.
DISTRIBUTION_SAMPLE = 1000
# HNSW candidate list per group scan (pgvector `hnsw.ef_search`); recall@10 against the
# exact scan at this value is measured in bench/large_orgs.py (docs/adr/0134).
HISTORY_EF_SEARCH = 40
# Each group's scan takes this many times k candidates: with `relaxed_order` the index
# yields nearly but not strictly nearest first, and the final order is by relevance.
CANDIDATE_FACTOR = 2

# Both paths end alike: the k chosen windows, best relevance first, with their event ids.
_CHOSEN = """
    SELECT b.id, w.source_event_ids, b.similarity, b.relevance, b.windows
    FROM best b JOIN dw_message_embeddings w ON w.id = b.id AND w.org_id = %(org_id)s
    ORDER BY b.relevance DESC NULLS LAST, b.similarity DESC, b.id
"""
_RELEVANCE = """
    CASE WHEN g.n >= %(min_n)s AND g.sd > 0 THEN (s.similarity - g.mean) / g.sd
         WHEN o.n >= %(min_n)s AND o.sd > 0 THEN (s.similarity - o.mean) / o.sd
    END
"""
_STATISTICS = """
    groups AS (
        SELECT script_group, avg(similarity) AS mean,
               stddev_pop(similarity) AS sd, count(*) AS n
        FROM {source} GROUP BY script_group
    ), overall AS (
        SELECT avg(similarity) AS mean, stddev_pop(similarity) AS sd, count(*) AS n
        FROM {source}
    )
"""


class PostgresWindowEmbeddings:
    def __init__(
        self,
        database: Database,
        *,
        mode: HistorySearchMode = HistorySearchMode.AUTO,
        indexes: PostgresWindowIndexes | None = None,
    ) -> None:
        self._db = database
        self._mode = mode
        self._indexes = indexes if indexes is not None else PostgresWindowIndexes(database)

    def upsert(self, model: str, windows: Sequence[EmbeddedWindow]) -> set[uuid.UUID]:
        """Write `windows` (of any partitions: a slice's batch) in one pipelined round trip;
        the ids of those written (a window that lost a message to an erasure is not)."""
        if not windows:
            return set()
        sources = [(w.partition, e) for w in windows for e in w.window.event_ids]
        with self._db.connection() as conn, conn.pipeline(), conn.cursor() as cur:
            for org_id in sorted({w.partition.org_id for w in windows}):
                conn.execute(
                    "SELECT pg_advisory_xact_lock_shared(%s, hashtext(%s))",
                    (RETENTION_LOCK_CLASS, org_id),
                )
            conn.execute(
                _REPLACE_OVERLAPPING,
                {
                    "model": model,
                    "ids": [w.id for w in windows],
                    "orgs": [p.org_id for p, _ in sources],
                    "providers": [p.provider for p, _ in sources],
                    "channels": [p.channel_id for p, _ in sources],
                    "event_ids": [e for _, e in sources],
                },
            )
            # Each statement returns its id if it wrote the window; its check that the
            # window's events exist probes the primary key, for a new org's rows too.
            plan_for_any_org(conn)
            cur.executemany(_UPSERT, [_row(model, w) for w in windows], returning=True)
            written: set[uuid.UUID] = set()
            while True:
                written.update(cast(uuid.UUID, r["id"]) for r in cur.fetchall())
                if not cur.nextset():
                    return written

    def nearest(
        self, org_id: str, model: str, vector: EmbeddingVector, query: HistoryQuery, k: int
    ) -> list[WindowMatch]:
        dims = None
        if self._mode is not HistorySearchMode.EXACT:
            dims = self._indexes.ready_dimensions(org_id, model)
        if dims is not None and uses_index(self._mode, index_ready=True):
            # The index path sees a sample, not the org's size: no request to make.
            return self._nearest_indexed(org_id, model, vector, query, k, dims)
        matches, windows = self._nearest_exact(org_id, model, vector, query, k)
        if wants_index(self._mode, windows):
            self._indexes.request(org_id, model, windows)
        return matches

    # Every window's similarity is computed once (the exact scan, ADR 0034) into `scored`;
    # the same pass gives the query's similarity distribution per script group, against
    # which each hit's relevance is standardised (docs/adr/0112, memory.domain.relevance:
    # a group smaller than MIN_DISTRIBUTION borrows the whole set's, a smaller set has
    # none). Hits come best relevance first. The scan keeps only (id, group, similarity) per
    # window; the k chosen rows' event ids are read after (carrying every row's id array
    # through the statistics cost 10-30% more, measured; ADR 0112). Within a group relevance
    # grows with similarity, so the k most relevant are among each group's k most similar:
    # only those few candidates are standardised and ordered, and the whole set's statistics
    # come from the groups' (their counts, means and deviations), not from another pass over
    # every window (nearest 1.81-1.86x -> 1.53-1.58x the plain top-k at 10,000 windows; ADR
    # 0117). It also says how many windows the query's filters selected: past the threshold
    # the org gets an index (docs/adr/0134).
    def _nearest_exact(
        self, org_id: str, model: str, vector: EmbeddingVector, query: HistoryQuery, k: int
    ) -> tuple[list[WindowMatch], int]:
        params = _params(org_id, model, vector, k)
        statement = sql.SQL(
            """
            WITH scored AS MATERIALIZED (
                SELECT id, script_group, 1 - (embedding <=> %(vector)s) AS similarity
                FROM dw_message_embeddings
                WHERE org_id = %(org_id)s AND model = %(model)s{filters}
            ), groups AS (
                SELECT script_group, avg(similarity) AS mean,
                       stddev_pop(similarity) AS sd, count(*) AS n
                FROM scored GROUP BY script_group
            ), overall AS (
                -- The population deviation of the union: E[x^2] - E[x]^2 over the groups.
                SELECT sum(n * mean) / sum(n) AS mean,
                       sqrt(greatest(
                           sum(n * (sd * sd + mean * mean)) / sum(n)
                           - (sum(n * mean) / sum(n)) ^ 2, 0)) AS sd,
                       sum(n) AS n
                FROM groups
            ), candidates AS (
                SELECT c.* FROM groups, LATERAL (
                    SELECT s.id, s.script_group, s.similarity FROM scored s
                    WHERE s.script_group = groups.script_group
                    ORDER BY s.similarity DESC, s.id LIMIT %(k)s) AS c
            ), best AS (
                SELECT s.id, s.similarity, {relevance} AS relevance, o.n AS windows
                FROM candidates s JOIN groups g USING (script_group) CROSS JOIN overall o
                ORDER BY relevance DESC NULLS LAST, s.similarity DESC, s.id
                LIMIT %(k)s
            )
            {chosen}
            """
        ).format(
            filters=window_filters(query, params),
            relevance=sql.SQL(_RELEVANCE),
            chosen=sql.SQL(_CHOSEN),
        )
        rows = self._db.read(lambda conn: conn.execute(statement, params).fetchall())
        windows = int(cast(int, rows[0]["windows"])) if rows else 0
        return [_match(r) for r in rows], windows

    # The index path: the org's partial index (cast to the model's size, org and model as
    # literals so the planner matches its predicate) yields each script group's nearest
    # windows; the distribution comes from the fixed sample; the k most relevant of the
    # candidates are kept. A group absent from the sample is not scanned (an iterative
    # scan for rows that do not exist would walk hnsw.max_scan_tuples in vain).
    def _nearest_indexed(
        self,
        org_id: str,
        model: str,
        vector: EmbeddingVector,
        query: HistoryQuery,
        k: int,
        dims: int,
    ) -> list[WindowMatch]:
        statement, params = indexed_statement(org_id, model, vector, query, k, dims)
        ef_search = max(HISTORY_EF_SEARCH, params["candidates"])
        with self._db.connection() as conn:
            # Iterative scan: a filter (channel, time range) that rejects candidates makes
            # the walk go on instead of returning fewer windows (pgvector >= 0.8).
            conn.execute(
                "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
                " set_config('hnsw.ef_search', %s, true)",
                (str(ef_search),),
            )
            rows = conn.execute(statement, params).fetchall()
        return [_match(r) for r in rows]

    def drop_model(self, model: str) -> int:
        # The model's indexes go first, in a short transaction of their own: DROP INDEX
        # locks the table, which must not last as long as deleting the rows.
        with self._db.connection() as conn:
            self._indexes.drop_model(conn, model)
        with self._db.connection() as conn:
            return conn.execute(
                "DELETE FROM dw_message_embeddings WHERE model = %s", (model,)
            ).rowcount

    def models(self) -> dict[str, int]:
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT model, count(*) AS n FROM dw_message_embeddings GROUP BY model"
            ).fetchall()
        return {str(r["model"]): int(cast(int, r["n"])) for r in rows}


def _row(model: str, w: EmbeddedWindow) -> dict[str, Any]:
    return {
        "id": w.id,
        "org_id": w.partition.org_id,
        "provider": w.partition.provider,
        "channel_id": w.partition.channel_id,
        "model": model,
        "embedding": HalfVector(list(w.vector.values)),
        "content": w.window.content,
        "event_ids": list(w.window.event_ids),
        "first": w.window.first.occurred_at,
        "last": w.window.last.occurred_at,
        "script_group": script_group(w.window.content).value,
    }


def _params(org_id: str, model: str, vector: EmbeddingVector, k: int) -> dict[str, Any]:
    return {
        "org_id": org_id,
        "model": model,
        "vector": HalfVector(list(vector.values)),
        "k": k,
        "min_n": MIN_DISTRIBUTION,
    }


def _match(r: dict[str, Any]) -> WindowMatch:
    return WindowMatch(
        window_id=_uuid(r["id"]),
        similarity=float(cast(float, r["similarity"])),
        event_ids=tuple(cast(list[str], r["source_event_ids"])),
        relevance=None if r["relevance"] is None else float(cast(float, r["relevance"])),
    )


def _uuid(value: object) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def indexed_statement(
    org_id: str, model: str, vector: EmbeddingVector, query: HistoryQuery, k: int, dims: int
) -> tuple[sql.Composed, dict[str, Any]]:
    """The index path's statement and its parameters (its own function: the benchmark
    explains it)."""
    params = _params(org_id, model, vector, k)
    params["sample"] = DISTRIBUTION_SAMPLE
    params["candidates"] = k * CANDIDATE_FACTOR
    filters = window_filters(query, params)
    distance = sql.SQL("embedding::halfvec({d}) <=> %(vector)s::halfvec({d})").format(
        d=sql.Literal(dims)
    )
    scope = sql.SQL("org_id = {org} AND model = {model}").format(
        org=sql.Literal(org_id), model=sql.Literal(model)
    )
    # One scan per script group, each on its group's index (the group is a literal, so the
    # planner matches the index's predicate).
    scans = sql.SQL(" UNION ALL ").join(
        sql.SQL(
            """(
            SELECT id, script_group, {distance} AS distance FROM dw_message_embeddings
            WHERE {scope} AND script_group = {group}{filters}
              AND EXISTS (SELECT 1 FROM groups WHERE script_group = {group})
            ORDER BY {distance} LIMIT %(candidates)s)"""
        ).format(distance=distance, scope=scope, group=sql.Literal(g.value), filters=filters)
        for g in ScriptGroup
    )
    statement = sql.SQL(
        """
        WITH sample AS MATERIALIZED (
            SELECT script_group, 1 - (embedding <=> %(vector)s) AS similarity
            FROM dw_message_embeddings WHERE {scope}
            ORDER BY id LIMIT %(sample)s
        ), {statistics}, candidates AS MATERIALIZED (
            {scans}
        ), best AS (
            SELECT s.id, s.similarity, {relevance} AS relevance, 0 AS windows
            FROM (SELECT id, script_group, 1 - distance AS similarity FROM candidates) s
            JOIN groups g USING (script_group) CROSS JOIN overall o
            ORDER BY relevance DESC NULLS LAST, s.similarity DESC, s.id
            LIMIT %(k)s
        )
        {chosen}
        """
    ).format(
        scope=scope,
        statistics=sql.SQL(_STATISTICS).format(source=sql.SQL("sample")),
        scans=scans,
        relevance=sql.SQL(_RELEVANCE),
        chosen=sql.SQL(_CHOSEN),
    )
    return statement, params
