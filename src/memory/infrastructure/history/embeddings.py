"""`dw_message_embeddings` in PostgreSQL: the sweep's upserts and KNN for search.

Every statement names `(org_id, model)` (or, for cleanup, the model): vectors of two models
are never compared. The column has no fixed dimension, so a query that forgot the model
filter would fail loudly on mixed sizes rather than compare silently.

Search takes one of two paths per org (memory.domain.history.search_path, docs/adr/0134):
the exact scan (ADR 0034), or, once the org has a ready partial HNSW index of its own
(memory.infrastructure.history.search_indexes), a walk of that index beside an exact scan
of the org's few windows not merged into it yet (its tail: the sweep writes a large org's
new windows outside the graph, docs/adr/0153); a filter the planner
expects to keep few windows is scanned exactly on either (docs/adr/0139). On both, each
script group's relevance distribution comes from a fixed sample of the windows the query
selects, the whole group when it is small (docs/adr/0138).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, cast

from pgvector import HalfVector
from psycopg import sql

from memory.application.history.ports import Clock, EmbeddedWindow, WindowMatch
from memory.domain.embedding import EmbeddingVector
from memory.domain.history import search_path
from memory.domain.history.search import HistoryHit, HistoryQuery
from memory.domain.history.search_path import HistorySearchMode, uses_index, wants_index
from memory.domain.relevance import MIN_DISTRIBUTION, ScriptGroup, script_group
from memory.infrastructure.history.any_org_plan import plan_for_any_org
from memory.infrastructure.history.chat_events import messages_of, semantic_hit
from memory.infrastructure.history.clock import system_clock
from memory.infrastructure.history.locks import RETENTION_LOCK_CLASS
from memory.infrastructure.history.search_indexes import (
    READY_CACHE_SECONDS,
    READY_CACHE_SIZE,
    TAIL_WINDOWS,
    PostgresWindowIndexes,
)
from memory.infrastructure.history.sql_filters import window_filters
from memory.infrastructure.postgres.database import Database

# A window is written only if every event it covers still exists: a purge that ran while
# the window was being embedded wins (the shared retention lock orders the two).
_UPSERT = sql.SQL(
    """
    INSERT INTO dw_message_embeddings (
        id, org_id, provider, external_channel_id, model, embedding, content,
        source_event_ids, first_occurred_at, last_occurred_at, script_group, index_pending)
    SELECT %(id)s, %(org_id)s, %(provider)s, %(channel_id)s, %(model)s, %(embedding)s,
           %(content)s, %(event_ids)s::text[], %(first)s, %(last)s, %(script_group)s,
           %(pending)s
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
        index_pending = excluded.index_pending,
        created_at = now()
    RETURNING id
    """
)
# The batch's orgs that have a ready index (their new windows may go into their tails,
# docs/adr/0153), each with its tail counted (up to TAIL_WINDOWS, on the tail's partial
# btree) when it is among %(recount)s: a count reads up to TAIL_WINDOWS rows, so a process
# counts an org's tail only when the room it counted last is used up (see _TailRoom).
_TAIL_ROOM = sql.SQL(
    """
    SELECT i.org_id,
           CASE WHEN i.org_id = ANY(%(recount)s) THEN
             (SELECT count(*) FROM (SELECT 1 FROM dw_message_embeddings w
                                    WHERE w.org_id = i.org_id AND w.model = i.model
                                      AND w.index_pending LIMIT %(tail)s) AS t)
           END AS tail
    FROM dw_window_indexes i
    WHERE i.org_id = ANY(%(orgs)s) AND i.model = %(model)s AND i.state = 'ready'
    """
)
# When an org's tail was found full, a process counts it again at most this often (the
# merger empties it meanwhile); until then its windows go into the graph.
TAIL_RECOUNT_SECONDS = 1.0
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


# A query's similarity distribution per script group comes from a sample of what it searches:
# each group's first windows in id order among those the query's filters select
# (deterministic uuids: effectively random, and the same for every search; docs/adr/0138).
# A group with at most this many such windows is its own sample, so its relevance is exact:
# small orgs and selective filters keep ADR 0112's figures. 500 puts the mean within ~0.05
# spreads and the spread within ~3% (a relevance of 2.75 within ~0.1). The sample's rows
# are read in id order, at random heap positions: at 10,000 windows 1,000 of them cost a
# third of the whole scan's time in heap order, 500 half that.
DISTRIBUTION_SAMPLE = 500
# HNSW candidate list per group scan (pgvector `hnsw.ef_search`); recall@10 against the
# exact scan at this value is measured in bench/large_orgs.py (docs/adr/0134, 0139: at
# 100,000 windows 40 gave 0.970-0.996 and 60 0.987-0.998 across builds and query sets).
HISTORY_EF_SEARCH = 100
# The index path's settings, local to its transaction. Iterative scan: a filter (channel,
# time range) that rejects candidates makes the walk go on instead of returning fewer
# windows (pgvector >= 0.8).
INDEX_PATH_SETTINGS = {"hnsw.iterative_scan": "relaxed_order"}
# How many index tuples a group's iterative scan may visit before it gives up (pgvector's
# default): the bound that makes a walk past a selective filter return fewer windows.
HISTORY_MAX_SCAN_TUPLES = 20_000
# Each group's scan takes this many times k candidates: with `relaxed_order` the index
# yields nearly but not strictly nearest first, and the final order is by relevance.
CANDIDATE_FACTOR = 2
# On the index path, filters that the planner expects to keep at most this many windows
# are scanned exactly (as policy search's EXACT_FILTERED_ROWS, docs/adr/0135, 0139): a
# graph walk past the windows a selective filter rejects may stop before it finds k.
EXACT_FILTERED_WINDOWS = 5_000

# Both paths' statements name the org, the model, k and the sample's size as literals, and
# only the query's vector and filters as parameters: a statement psycopg prepares (from its
# fifth run on a connection) is then one org's, and PostgreSQL plans it once for that org
# (a generic plan) instead of at every search (1.5 ms at load 5 on the tenants bench's
# org, 0.1x the bare top-k). A generic plan for every org could scan a large org's rows
# for a small one (docs/adr/0117, 0150).
#
# Both paths end alike: the k chosen windows, best relevance first, with their event ids
# and, one row each, their messages within the query's filters (a window none of whose
# messages pass has one row without a message): a search reads its windows' messages in
# the KNN statement's round trip, not in one of their own (docs/adr/0155).
_CHOSEN = """
    SELECT b.id, w.source_event_ids, b.similarity, b.relevance, b.windows, b.sampled, m.*
    FROM best b JOIN dw_message_embeddings w ON w.id = b.id AND w.org_id = {org}
    LEFT JOIN LATERAL ({messages}) AS m ON true
    ORDER BY b.relevance DESC NULLS LAST, b.similarity DESC, b.id
"""
_RELEVANCE = """
    CASE WHEN g.n >= {min_n} AND g.sd > 0 THEN (s.similarity - g.mean) / g.sd
         WHEN o.n >= {min_n} AND o.sd > 0 THEN (s.similarity - o.mean) / o.sd
    END
"""
# Per group: the sample's statistics and its last id (where the rest of the group starts);
# overall: the population deviation of the groups' union, E[x^2] - E[x]^2 over the groups
# (`largest` says whether any group was larger than its sample).
_STATISTICS = """
    groups AS MATERIALIZED (
        SELECT script_group, avg(1 - distance) AS mean,
               stddev_pop(1 - distance) AS sd, count(*) AS n,
               max(id::text COLLATE "C")::uuid AS last
        FROM sample GROUP BY script_group
    ), overall AS (
        SELECT sum(n * mean) / sum(n) AS mean,
               sqrt(greatest(
                   sum(n * (sd * sd + mean * mean)) / sum(n)
                   - (sum(n * mean) / sum(n)) ^ 2, 0)) AS sd,
               sum(n) AS n, max(n) AS largest
        FROM groups
    )
"""


class _Throttle:
    """Whether a key is due: at most once every `seconds` per key (the oldest keys beyond
    `size` are forgotten, and are due again)."""

    def __init__(
        self, seconds: float, size: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._seconds = seconds
        self._size = size
        self._clock = clock
        self._last: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._lock = threading.Lock()

    def due(self, key: tuple[str, str]) -> bool:
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._seconds:
                return False
            self._last[key] = now
            self._last.move_to_end(key)
            while len(self._last) > self._size:
                self._last.popitem(last=False)
        return True


class _TailRoom:
    """How many more windows this process may write into each org's tail (docs/adr/0153):
    TAIL_WINDOWS less the tail it counted last, used up by the windows it writes there. It
    counts again when the room is used up (at most every TAIL_RECOUNT_SECONDS once a count
    found it full), so a count (up to TAIL_WINDOWS rows) is paid once per that many windows
    at most. Each sweeping process keeps its own room: the tail of an org swept by several
    processes at once is bounded by TAIL_WINDOWS per process."""

    def __init__(self, size: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._size = size
        self._clock = clock
        # (org, model) -> (room, when counted)
        self._room: OrderedDict[tuple[str, str], tuple[int, float]] = OrderedDict()
        self._lock = threading.Lock()

    def to_count(self, model: str, wanted: dict[str, int]) -> list[str]:
        """The orgs whose tail should be counted before writing `wanted` windows each."""
        now = self._clock()
        with self._lock:
            return [
                org
                for org, n in wanted.items()
                if (known := self._room.get((org, model))) is None
                or (known[0] < n and now - known[1] >= TAIL_RECOUNT_SECONDS)
            ]

    def counted(self, model: str, org: str, tail: int) -> None:
        with self._lock:
            self._room[(org, model)] = (TAIL_WINDOWS - tail, self._clock())
            self._room.move_to_end((org, model))
            while len(self._room) > self._size:
                self._room.popitem(last=False)

    def take(self, model: str, org: str, n: int) -> bool:
        """Whether `n` windows of the org go into its tail (its room is used by them)."""
        with self._lock:
            known = self._room.get((org, model))
            if known is None or known[0] < n:
                return False
            self._room[(org, model)] = (known[0] - n, known[1])
            return True


class PostgresWindowEmbeddings:
    def __init__(
        self,
        database: Database,
        *,
        mode: HistorySearchMode = HistorySearchMode.AUTO,
        indexes: PostgresWindowIndexes | None = None,
        clock: Clock = system_clock,
    ) -> None:
        self._db = database
        self._clock = clock
        self._mode = mode
        self._indexes = indexes if indexes is not None else PostgresWindowIndexes(database)
        # Orgs whose size was counted lately (docs/adr/0138: a sampled search does not
        # see it), so that a search counts at most every READY_CACHE_SECONDS per org.
        self._counted = _Throttle(READY_CACHE_SECONDS, READY_CACHE_SIZE)
        self._tail_room = _TailRoom(READY_CACHE_SIZE)

    def upsert(self, model: str, windows: Sequence[EmbeddedWindow]) -> set[uuid.UUID]:
        """Write `windows` (of any partitions: a slice's batch) in two round trips (which
        orgs' tails have room, then one pipeline); the ids of those written (a window that
        lost a message to an erasure is not). An org with a ready index gets them in its
        tail while it has room, outside the graph (docs/adr/0153)."""
        if not windows:
            return set()
        sources = [(w.partition, e) for w in windows for e in w.window.event_ids]
        wanted = Counter(w.partition.org_id for w in windows)
        orgs = sorted(wanted)
        # One round trip before the pipeline: which orgs write into their tails.
        with self._db.connection() as conn:
            rows = conn.execute(
                _TAIL_ROOM,
                {
                    "orgs": orgs,
                    "model": model,
                    "recount": self._tail_room.to_count(model, wanted),
                    "tail": TAIL_WINDOWS,
                },
            ).fetchall()
            tails: set[str] = set()
            for r in rows:
                org_id = str(r["org_id"])
                if r["tail"] is not None:
                    self._tail_room.counted(model, org_id, int(cast(int, r["tail"])))
                if self._tail_room.take(model, org_id, wanted[org_id]):
                    tails.add(org_id)
            with conn.pipeline(), conn.cursor() as cur:
                for org_id in orgs:
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
                cur.executemany(
                    _UPSERT,
                    [_row(model, w, w.partition.org_id in tails) for w in windows],
                    returning=True,
                )
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
            if not self._few_selected(org_id, model, query):
                # The index path sees a sample, not the org's size: no request to make.
                return self._nearest_indexed(org_id, model, vector, query, k, dims)
            return self._nearest_exact(org_id, model, vector, query, k)[0]
        matches, selected = self._nearest_exact(org_id, model, vector, query, k)
        self._ask_for_index(org_id, model, selected)
        return matches

    # Each script group's sample (its first DISTRIBUTION_SAMPLE windows in id order among
    # those the filters select) gives the group's similarity distribution, against which its
    # hits are standardised (docs/adr/0112, memory.domain.relevance: a group smaller than
    # MIN_DISTRIBUTION borrows the whole set's, a smaller set has none); the rest of the
    # group (past the sample's last id) yields its k nearest windows: read in heap order
    # through the (org, model, group) btree, whose equal keys are kept in heap order (the
    # id condition is written so that no index takes it: in id order every row would be a
    # random read, 2x the bare scan's cost; docs/adr/0138). A group that fits in its sample
    # is not read again. Within a group relevance grows with similarity, so the k most
    # relevant windows are among the sample and those. Every selected window's distance is
    # computed once, as in the bare top-k (docs/adr/0138); a group with no more windows than
    # its sample has exact statistics. When the selection is of one group, the rest is read
    # without testing the group on each row (docs/adr/0150). Also says how many windows the
    # filters selected when every group fit in its sample (None when one did not: the org
    # may need an index).
    def _nearest_exact(
        self, org_id: str, model: str, vector: EmbeddingVector, query: HistoryQuery, k: int
    ) -> tuple[list[WindowMatch], int | None]:
        statement, params = exact_statement(org_id, model, vector, query, k, now=self._clock())
        rows = self._db.read(lambda conn: conn.execute(statement, params).fetchall())
        if rows and rows[0]["sampled"]:
            return _matches(rows), None
        return _matches(rows), int(cast(int, rows[0]["windows"])) if rows else 0

    def _ask_for_index(self, org_id: str, model: str, selected: int | None) -> None:
        """Past the threshold the org gets an index (docs/adr/0134). When a group outgrew its
        sample the search does not know the org's size: it is counted (up to the
        threshold, from the btree alone) at most every READY_CACHE_SECONDS per org."""
        if self._mode is HistorySearchMode.EXACT:
            return
        windows = selected
        if windows is None:
            if not self._counted.due((org_id, model)):
                return
            windows = self._count(org_id, model)
        if wants_index(self._mode, windows):
            self._indexes.request(org_id, model, windows)

    def _count(self, org_id: str, model: str) -> int:
        row = self._db.read(
            lambda conn: conn.execute(
                "SELECT count(*) AS n FROM (SELECT 1 FROM dw_message_embeddings"
                " WHERE org_id = %s AND model = %s LIMIT %s) AS w",
                (org_id, model, search_path.INDEX_THRESHOLD_WINDOWS),
            ).fetchone()
        )
        return 0 if row is None else int(cast(int, row["n"]))

    def _few_selected(self, org_id: str, model: str, query: HistoryQuery) -> bool:
        """Whether the planner expects the query's filters to keep at most
        EXACT_FILTERED_WINDOWS windows (EXPLAIN, no execution: one planning): those are
        scanned exactly, as policy search does (docs/adr/0135, 0139). A graph walk past
        the windows a selective filter rejects stops before finding k that pass."""
        params: dict[str, Any] = {"org_id": org_id, "model": model}
        filters = window_filters(query, params)
        if not params.keys() - {"org_id", "model"}:
            return False
        statement = sql.SQL(
            "EXPLAIN (FORMAT JSON) SELECT 1 FROM dw_message_embeddings"
            " WHERE org_id = %(org_id)s AND model = %(model)s{}"
        ).format(filters)
        row = self._db.read(lambda conn: conn.execute(statement, params).fetchone())
        assert row is not None
        plan = cast(list[dict[str, Any]], row["QUERY PLAN"])[0]["Plan"]
        return bool(plan["Plan Rows"] <= EXACT_FILTERED_WINDOWS)

    # The index path: the sample as on the exact path; each group larger than its sample
    # is walked on the org's partial index for that group (cast to the model's size, org,
    # model and group as literals so the planner matches its predicate), its tail (the
    # windows not merged into the index yet, docs/adr/0153) is scanned exactly beside the
    # walk, and the k most relevant of the sample and those candidates are kept. A group
    # that fits in its sample is not walked: its sample holds all of it.
    def _nearest_indexed(
        self,
        org_id: str,
        model: str,
        vector: EmbeddingVector,
        query: HistoryQuery,
        k: int,
        dims: int,
    ) -> list[WindowMatch]:
        statement, params = indexed_statement(
            org_id, model, vector, query, k, dims, now=self._clock()
        )
        settings = index_path_settings(params["candidates"])
        with self._db.connection() as conn:
            conn.execute(
                sql.SQL("SELECT {}").format(
                    sql.SQL(", ").join(
                        sql.SQL("set_config({}, {}, true)").format(name, value)
                        for name, value in settings.items()
                    )
                )
            )
            rows = conn.execute(statement, params).fetchall()
        return _matches(rows)

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


def _row(model: str, w: EmbeddedWindow, pending: bool) -> dict[str, Any]:
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
        "pending": pending,
    }


def _constants(
    org_id: str, model: str, query: HistoryQuery, k: int, params: dict[str, Any], now: datetime
) -> dict[str, sql.Composable]:
    """The literals both paths' statements are formatted with (see _CHOSEN), and the
    chosen windows' messages (whose parameters it adds to `params`)."""
    return {
        "messages": messages_of(sql.SQL("w.source_event_ids"), org_id, query, params, now),
        "org": sql.Literal(org_id),
        "model": sql.Literal(model),
        "k": sql.Literal(k),
        "sample": sql.Literal(DISTRIBUTION_SAMPLE),
        "min_n": sql.Literal(MIN_DISTRIBUTION),
        "scope": sql.SQL("org_id = {org} AND model = {model}").format(
            org=sql.Literal(org_id), model=sql.Literal(model)
        ),
    }


def _matches(rows: Sequence[dict[str, Any]]) -> list[WindowMatch]:
    """The statement's rows (one per chosen window and message, see _CHOSEN) as matches, in
    their order, each with its messages."""
    windows: dict[object, tuple[dict[str, Any], list[HistoryHit]]] = {}
    for r in rows:
        _, hits = windows.setdefault(r["id"], (r, []))
        if r["event_id"] is not None:
            hits.append(semantic_hit(r))
    return [
        WindowMatch(
            window_id=_uuid(r["id"]),
            similarity=float(cast(float, r["similarity"])),
            event_ids=tuple(cast(list[str], r["source_event_ids"])),
            relevance=None if r["relevance"] is None else float(cast(float, r["relevance"])),
            messages=tuple(hits),
        )
        for r, hits in windows.values()
    ]


def _uuid(value: object) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _sample(c: dict[str, sql.Composable], filters: sql.Composable) -> sql.Composable:
    """Each script group's first DISTRIBUTION_SAMPLE selected windows in id order, with
    their distance to the query (docs/adr/0138)."""
    return sql.SQL(" UNION ALL ").join(
        sql.SQL(
            """(
            SELECT id, {group}::text AS script_group, embedding <=> %(vector)s AS distance
            FROM dw_message_embeddings WHERE {scope} AND script_group = {group}{filters}
            ORDER BY id LIMIT {sample})"""
        ).format(group=sql.Literal(g.value), filters=filters, **c)
        for g in ScriptGroup
    )


def _ranked(
    c: dict[str, sql.Composable],
    filters: sql.Composable,
    scans: sql.Composable,
    source: sql.Composable,
) -> sql.Composed:
    """Both paths' statement: the samples and their statistics, the path's own `scans`
    (the CTE `scans`), the k most relevant of the samples and `source` (`best`), and the
    chosen windows' event ids."""
    return sql.SQL(
        """
        WITH sample AS MATERIALIZED ({sample}), {statistics},
             scans AS MATERIALIZED ({scans}), {best}
        {chosen}
        """
    ).format(
        sample=_sample(c, filters),
        statistics=sql.SQL(_STATISTICS),
        scans=scans,
        best=_best(c, source),
        chosen=sql.SQL(_CHOSEN).format(**c),
    )


def _best(c: dict[str, sql.Composable], source: sql.Composable) -> sql.Composable:
    """The `best` CTE both paths share: the k most relevant of the sample's windows and the
    rows of `source` (id, script_group, distance: windows outside the sample), each
    standardised against its group's statistics (or the whole set's, memory.domain.relevance)."""
    return sql.SQL(
        """best AS (
            SELECT s.id, s.similarity, {relevance} AS relevance, o.n AS windows,
                   o.largest >= {sample} AS sampled
            FROM (SELECT id, script_group, 1 - distance AS similarity FROM sample
                  UNION ALL
                  SELECT id, script_group, 1 - distance FROM {source}) s
            JOIN groups g USING (script_group) CROSS JOIN overall o
            ORDER BY relevance DESC NULLS LAST, s.similarity DESC, s.id
            LIMIT {k}
        )"""
    ).format(relevance=sql.SQL(_RELEVANCE).format(**c), source=source, **c)


def exact_statement(
    org_id: str,
    model: str,
    vector: EmbeddingVector,
    query: HistoryQuery,
    k: int,
    *,
    now: datetime | None = None,
) -> tuple[sql.Composed, dict[str, Any]]:
    """The exact path's statement and its parameters (its own function: the benchmarks
    and tests explain it); `now` bounds the range of stored messages (the system clock's
    when None)."""
    params: dict[str, Any] = {"vector": HalfVector(list(vector.values))}
    filters = window_filters(query, params)
    c = _constants(org_id, model, query, k, params, now or system_clock())
    # When the selection holds one script group and it outgrew its sample (a group's sample
    # is empty only if the filters select none of its windows), the rest is every selected
    # window past the sample: no group condition on each row (script_group is the row's
    # last column: testing it costs 0.2x the bare top-k's scan, docs/adr/0150), and the
    # group's name comes from the statistics.
    alone = sql.SQL(
        """(
        SELECT id, (SELECT script_group FROM groups LIMIT 1) AS script_group,
               embedding <=> %(vector)s AS distance
        FROM dw_message_embeddings WHERE {scope}{filters}
          AND (SELECT count(*) = 1 AND min(n) >= {sample} FROM groups)
          AND (id > (SELECT last FROM groups LIMIT 1)) IS TRUE
        ORDER BY distance LIMIT {k})"""
    ).format(filters=filters, **c)
    # Otherwise one scan per group larger than its sample, past its sample's last id.
    per_group = [
        sql.SQL(
            """(
            SELECT id, {group}::text AS script_group, embedding <=> %(vector)s AS distance
            FROM dw_message_embeddings WHERE {scope} AND script_group = {group}{filters}
              AND (SELECT count(*) > 1
                          AND count(*) FILTER (WHERE script_group = {group}
                                                 AND n >= {sample}) = 1
                   FROM groups)
              AND (id > (SELECT last FROM groups WHERE script_group = {group})) IS TRUE
            ORDER BY distance LIMIT {k})"""
        ).format(group=sql.Literal(g.value), filters=filters, **c)
        for g in ScriptGroup
    ]
    scans = sql.SQL(" UNION ALL ").join([alone, *per_group])
    return _ranked(c, filters, scans, sql.SQL("scans")), params


def index_path_settings(candidates: int) -> dict[str, str]:
    """The index path's settings for a statement whose group scans take `candidates`
    windows (its own function: tests explain the statement under them; INDEX_PATH_SETTINGS
    come last, so a test can override the walk's bounds)."""
    return {
        "hnsw.ef_search": str(max(HISTORY_EF_SEARCH, candidates)),
        "hnsw.max_scan_tuples": str(HISTORY_MAX_SCAN_TUPLES),
    } | INDEX_PATH_SETTINGS


def indexed_statement(
    org_id: str,
    model: str,
    vector: EmbeddingVector,
    query: HistoryQuery,
    k: int,
    dims: int,
    *,
    now: datetime | None = None,
) -> tuple[sql.Composed, dict[str, Any]]:
    """The index path's statement and its parameters (its own function: the benchmark
    explains it); `now` as for exact_statement."""
    params: dict[str, Any] = {
        "vector": HalfVector(list(vector.values)),
        "candidates": k * CANDIDATE_FACTOR,
    }
    filters = window_filters(query, params)
    c = _constants(org_id, model, query, k, params, now or system_clock())
    distance = sql.SQL("embedding::halfvec({d}) <=> %(vector)s::halfvec({d})").format(
        d=sql.Literal(dims)
    )
    # One scan per script group larger than its sample, each on its group's index (the
    # group is a literal, so the planner matches the index's predicate), and beside it the
    # group's tail (windows not merged into the index yet, docs/adr/0153) scanned exactly
    # through the tail's btree: the walk never sees them, the exact scan sees each.
    scans = sql.SQL(" UNION ALL ").join(
        sql.SQL(
            """(
            SELECT id, script_group, {distance} AS distance FROM dw_message_embeddings
            WHERE {scope} AND script_group = {group} AND {pending}{filters}
              AND EXISTS (SELECT 1 FROM groups
                          WHERE script_group = {group} AND n >= {sample})
            ORDER BY {distance} LIMIT %(candidates)s)"""
        ).format(
            distance=distance,
            group=sql.Literal(g.value),
            pending=sql.SQL(pending),
            filters=filters,
            **c,
        )
        for g in ScriptGroup
        for pending in ("NOT index_pending", "index_pending")
    )
    # The walk finds the sample's windows too: each is kept once, from the sample.
    source = sql.SQL("scans c WHERE NOT EXISTS (SELECT 1 FROM sample x WHERE x.id = c.id)")
    return _ranked(c, filters, scans, source), params
