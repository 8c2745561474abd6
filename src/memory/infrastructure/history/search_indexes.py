"""Per-org partial HNSW indexes over `dw_message_embeddings` (docs/adr/0134).

An org whose search saw it pass the threshold (memory.domain.history.search_path) is asked
for in `dw_window_indexes`; a builder creates its indexes with CREATE INDEX CONCURRENTLY, so
the sweep keeps writing while they build, and marks them ready. One index per script group
(docs/adr/0112: relevance ranks each group against its own distribution, so search takes
each group's nearest windows) of one org's rows of one model, on the cast to the model's
size:

    USING hnsw ((embedding::halfvec(<dims>)) halfvec_cosine_ops)
    WHERE org_id = '<org>' AND model = '<model>' AND script_group = '<group>'
      AND NOT index_pending

A query uses one when it repeats the cast and names org, model and group as literals (a
generic plan could not prove the predicate). The sweep writes a ready org's new windows
outside them (`index_pending`, up to `TAIL_WINDOWS` per org and model: the org's tail,
which search scans exactly), and `merge_pending` merges them in batches off the sweep's
path (docs/adr/0153). A builder holds a session advisory lock on the
request while it builds: a process that dies mid-build leaves an invalid index and an
unlocked 'building' row, which the next builder drops and builds again. A build that fails
with the database up is recorded ('failed', with its error's class) and tried again after
`FAILED_RETRY_SECONDS`. A purge or an erasure that leaves an org below the drop line
(memory.domain.history.search_path.keeps_index) marks its index 'dropping' in its own
transaction; the builder drops it concurrently and forgets the request (docs/adr/0141).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from memory.application.history.search_indexes import SearchIndexStatus, SearchIndexSummary
from memory.domain.history.search_path import (
    HistorySearchMode,
    SearchIndexState,
    drop_line,
    keeps_index,
)
from memory.domain.relevance import ScriptGroup
from memory.infrastructure.postgres.database import Database

log = logging.getLogger(__name__)

# pgvector's defaults (as policy's index, docs/adr/0023); recall at these is measured in
# bench/large_orgs.py.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
# Memory for one build: a 100k-window graph of halfvec(1024) fits (~450 MB), and a graph
# that fits builds several times faster. Set for the builder's session only.
INDEX_BUILD_MEMORY = "1GB"
# How often a running build's progress is copied into dw_window_indexes.
PROGRESS_INTERVAL_SECONDS = 2.0
# Advisory lock class of index builds (the key is hashtext(index name)).
BUILD_LOCK_CLASS = 1134
# How long a process trusts what it read about an org's index: search keeps its four
# statements (docs/adr/0117) and looks again at most this often per org and model. An index
# built by another replica serves this one's searches at most this late (they stay exact
# meanwhile); one dropped by another replica is asked for by its statement at most this long
# (the planner then scans the org's rows instead: same answer, slower).
READY_CACHE_SECONDS = 30.0
# How long the builder waits for its own session to the database.
CONNECT_SECONDS = 10
# Orgs and models remembered; beyond, the oldest are forgotten (and read again).
READY_CACHE_SIZE = 10_000
# A failed build is tried again this long after it failed (a full disk or a statement
# timeout would otherwise fail the same build in a loop).
FAILED_RETRY_SECONDS = 600

# The tail (docs/adr/0153): an org with a ready index gets its new windows written outside
# it, each scanned exactly by every search of the org until merged, up to this many per org
# and model; past it the sweep writes into the graph as before ADR 0153. A full tail costs a
# search the exact distances of this many windows (~1-2 ms at 1024 dimensions).
TAIL_WINDOWS = 1_000
# Windows merged per statement (one transaction: the graph insertions of a batch).
MERGE_BATCH = 100
# Clears the flag of up to a batch of pending windows of any orgs: each new row version
# enters its org's partial HNSW index (its predicate now holds), the old one leaves the tail.
# Rows being written or erased meanwhile are skipped, not waited for.
_MERGE = """
    UPDATE dw_message_embeddings SET index_pending = false
    WHERE id IN (SELECT id FROM dw_message_embeddings WHERE index_pending
                 LIMIT %s FOR UPDATE SKIP LOCKED)
"""

# What the builder may claim: wanted, left 'building' by a builder that died (its lock is
# free), or failed long enough ago.
_CLAIMABLE = """
    SELECT org_id, model, index_name FROM dw_window_indexes
    WHERE state IN ('wanted', 'building')
       OR (state = 'failed' AND failed_at < now() - make_interval(secs => %s))
    ORDER BY requested_at
"""
_STATUS_COLUMNS = """
    org_id, model, state, dimensions, windows_seen, requested_at, started_at, ready_at,
    phase, tuples_done, tuples_total, progress, failures, last_error, failed_at
"""
# The queue as operators read it: running builds first, then failures, then the rest.
_QUEUE_ORDER = """
    ORDER BY CASE state WHEN 'building' THEN 0 WHEN 'failed' THEN 1 WHEN 'wanted' THEN 2
             ELSE 3 END, requested_at
"""


def index_name(org_id: str, model: str) -> str:
    """The request's name; each group's index adds the group (`group_index_name`)."""
    digest = hashlib.sha256(f"{org_id}\x00{model}".encode()).hexdigest()[:20]
    return f"dw_window_hnsw_{digest}"


def group_index_name(name: str, group: ScriptGroup) -> str:
    return f"{name}_{group.value}"


@dataclass(frozen=True, slots=True)
class IndexProgress:
    org_id: str
    model: str
    state: str
    phase: str | None
    tuples_done: int | None
    tuples_total: int | None


@dataclass(frozen=True, slots=True)
class BuiltIndex:
    org_id: str
    model: str
    index_name: str
    dimensions: int
    seconds: float


class PostgresWindowIndexes:
    def __init__(
        self,
        database: Database,
        *,
        mode: HistorySearchMode = HistorySearchMode.AUTO,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`mode`: the search mode the drop line follows (`keeps_index`)."""
        self._db = database
        self._mode = mode
        self._clock = clock
        self._ready: OrderedDict[tuple[str, str], tuple[int | None, float]] = OrderedDict()
        self._requested: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._ready_lock = threading.Lock()

    def ready_dimensions(self, org_id: str, model: str) -> int | None:
        """The vector size of the org's ready index for the model, or None (read at most
        every READY_CACHE_SECONDS per org and model)."""
        key = (org_id, model)
        now = self._clock()
        with self._ready_lock:
            cached = self._ready.get(key)
        if cached is not None and now - cached[1] < READY_CACHE_SECONDS:
            return cached[0]
        row = self._db.read(
            lambda conn: conn.execute(
                "SELECT dimensions FROM dw_window_indexes"
                " WHERE org_id = %s AND model = %s AND state = 'ready'",
                key,
            ).fetchone()
        )
        dims = None if row is None else int(cast(int, row["dimensions"]))
        with self._ready_lock:
            self._ready[key] = (dims, now)
            self._ready.move_to_end(key)
            while len(self._ready) > READY_CACHE_SIZE:
                self._ready.popitem(last=False)
        return dims

    def _forget(self, org_id: str | None = None, model: str | None = None) -> None:
        with self._ready_lock:
            for cache in (self._ready, self._requested):
                for key in [k for k in cache if org_id in (None, k[0]) and model in (None, k[1])]:
                    del cache[key]

    def request(self, org_id: str, model: str, windows_seen: int) -> None:
        """Ask for the org's index (a no-op when asked before; asked at most once per
        READY_CACHE_SECONDS by this process, so searches waiting for it stay at four
        statements)."""
        key = (org_id, model)
        now = self._clock()
        with self._ready_lock:
            asked = self._requested.get(key)
            if asked is not None and now - asked < READY_CACHE_SECONDS:
                return
            self._requested[key] = now
            while len(self._requested) > READY_CACHE_SIZE:
                self._requested.popitem(last=False)
        with self._db.connection() as conn:
            conn.execute(
                "INSERT INTO dw_window_indexes (org_id, model, index_name, windows_seen)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (org_id, model) DO NOTHING",
                (org_id, model, index_name(org_id, model), windows_seen),
            )

    def merge_pending(self, batch: int = MERGE_BATCH) -> int:
        """Merges up to `batch` windows of the orgs' tails into their indexes, in one
        transaction (docs/adr/0153); how many. A window pending for an org whose index is
        gone (dropped since) just leaves the tail."""
        with self._db.connection() as conn:
            return conn.execute(_MERGE, (batch,)).rowcount

    def pending(self) -> int:
        """How many windows wait to be merged, every org's (bounded: TAIL_WINDOWS per org
        with a ready index)."""
        row = self._db.read(
            lambda conn: conn.execute(
                "SELECT count(*) AS n FROM dw_message_embeddings WHERE index_pending"
            ).fetchone()
        )
        return 0 if row is None else int(cast(int, row["n"]))

    def progress(self) -> list[IndexProgress]:
        """Indexes not yet ready, oldest request first (the builder's queue)."""
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT org_id, model, state, phase, tuples_done, tuples_total"
                " FROM dw_window_indexes WHERE state <> 'ready' ORDER BY requested_at"
            ).fetchall()
        return [
            IndexProgress(
                org_id=str(r["org_id"]),
                model=str(r["model"]),
                state=str(r["state"]),
                phase=None if r["phase"] is None else str(r["phase"]),
                tuples_done=_count(r["tuples_done"]),
                tuples_total=_count(r["tuples_total"]),
            )
            for r in rows
        ]

    def of_org(self, org_id: str) -> list[SearchIndexStatus]:
        rows = self._db.read(
            lambda conn: conn.execute(
                f"SELECT {_STATUS_COLUMNS} FROM dw_window_indexes WHERE org_id = %s ORDER BY model",
                (org_id,),
            ).fetchall()
        )
        return [_status(r) for r in rows]

    def summary(self, queue_limit: int) -> SearchIndexSummary:
        def read(conn: psycopg.Connection[Any]) -> tuple[list[Any], list[Any]]:
            counts = conn.execute(
                "SELECT state, count(*) AS n FROM dw_window_indexes GROUP BY state"
            ).fetchall()
            # The pending partial index holds exactly the rows not ready.
            queue = conn.execute(
                f"SELECT {_STATUS_COLUMNS} FROM dw_window_indexes WHERE state <> 'ready'"
                f" {_QUEUE_ORDER} LIMIT %s",
                (queue_limit,),
            ).fetchall()
            return counts, queue

        counts, queue = self._db.read(read)
        return SearchIndexSummary(
            counts={SearchIndexState(str(r["state"])): int(r["n"]) for r in counts},
            queue=[_status(r) for r in queue],
        )

    def retire_shrunk(self, conn: psycopg.Connection[Any], org_id: str) -> int:
        """In the caller's transaction (which just deleted some of the org's windows): marks
        'dropping' each of the org's indexes whose model it no longer keeps an index for
        (`keeps_index`). Counts at most the drop line's windows per model the org has an
        index of, on the (org_id, model, id) btree: cost follows the org's indexes, not its
        size. How many were marked."""
        line = drop_line(self._mode)
        rows = conn.execute(
            "SELECT i.model, (SELECT count(*) FROM (SELECT 1 FROM dw_message_embeddings w"
            "   WHERE w.org_id = i.org_id AND w.model = i.model LIMIT %s) AS kept) AS windows"
            " FROM dw_window_indexes i WHERE i.org_id = %s AND i.state <> 'dropping'"
            " FOR UPDATE OF i",
            (line, org_id),
        ).fetchall()
        retired = [str(r["model"]) for r in rows if not keeps_index(self._mode, int(r["windows"]))]
        if retired:
            conn.execute(
                "UPDATE dw_window_indexes SET state = 'dropping', phase = NULL"
                " WHERE org_id = %s AND model = ANY(%s)",
                (org_id, retired),
            )
            self._forget(org_id=org_id)
            log.info(
                "history search index of org %s to be dropped (%d model(s)): below the drop line",
                org_id,
                len(retired),
            )
        return len(retired)

    def drop_model(self, conn: psycopg.Connection[Any], model: str) -> int:
        """Drops every org's index of the model, in the caller's transaction."""
        rows = conn.execute(
            "DELETE FROM dw_window_indexes WHERE model = %s RETURNING index_name", (model,)
        ).fetchall()
        self._forget(model=model)
        return self._drop(conn, rows)

    def drop_org(self, org_id: str) -> int:
        """Drops the org's indexes (its windows are gone: the org was erased), in a short
        transaction of its own (DROP INDEX locks the table)."""
        with self._db.connection() as conn:
            rows = conn.execute(
                "DELETE FROM dw_window_indexes WHERE org_id = %s RETURNING index_name", (org_id,)
            ).fetchall()
            self._forget(org_id=org_id)
            return self._drop(conn, rows)

    @staticmethod
    def _drop(conn: psycopg.Connection[Any], rows: list[Any]) -> int:
        for r in rows:
            for group in ScriptGroup:
                name = group_index_name(str(r["index_name"]), group)
                conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))
        return len(rows)

    def build_next(self, stop: threading.Event | None = None) -> BuiltIndex | None:
        """Builds the oldest wanted index nobody else is building; None when there is none.
        Runs on a session of its own (CREATE INDEX CONCURRENTLY cannot run in a
        transaction), opened only when something waits."""
        if not self.progress():
            return None
        with psycopg.connect(
            self._db.direct_url,
            autocommit=True,
            row_factory=dict_row,
            connect_timeout=CONNECT_SECONDS,
        ) as conn:
            self._drop_retired(conn)
            claimed = self._claim(conn, _CLAIMABLE, (FAILED_RETRY_SECONDS,))
            if claimed is None:
                return None
            org_id, model, name = claimed
            try:
                return self._build(conn, org_id, model, name, stop)
            except psycopg.Error as exc:
                self._failed(org_id, model, name, exc)
                return None
            finally:
                if not conn.closed and not conn.broken:
                    conn.execute(
                        "SELECT pg_advisory_unlock(%s, hashtext(%s))", (BUILD_LOCK_CLASS, name)
                    )

    def _claim(
        self, conn: psycopg.Connection[dict[str, Any]], statement: str, params: tuple[Any, ...]
    ) -> tuple[str, str, str] | None:
        for r in conn.execute(statement, params).fetchall():
            locked = conn.execute(
                "SELECT pg_try_advisory_lock(%s, hashtext(%s)) AS ok",
                (BUILD_LOCK_CLASS, r["index_name"]),
            ).fetchone()
            if locked and locked["ok"]:
                return str(r["org_id"]), str(r["model"]), str(r["index_name"])
        return None

    def _drop_retired(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        """Drops the indexes marked 'dropping' (their orgs shrank), each concurrently under
        its build lock, and forgets their requests."""
        statement = (
            "SELECT org_id, model, index_name FROM dw_window_indexes"
            " WHERE state = 'dropping' ORDER BY requested_at"
        )
        while (claimed := self._claim(conn, statement, ())) is not None:
            org_id, model, name = claimed
            try:
                self._drop_concurrently(conn, name)
                conn.execute(
                    "DELETE FROM dw_window_indexes"
                    " WHERE org_id = %s AND model = %s AND state = 'dropping'",
                    (org_id, model),
                )
            finally:
                conn.execute(
                    "SELECT pg_advisory_unlock(%s, hashtext(%s))", (BUILD_LOCK_CLASS, name)
                )
            self._forget(org_id, model)
            log.info("history search index dropped: org %s model %s (org shrank)", org_id, model)

    def _failed(self, org_id: str, model: str, name: str, error: psycopg.Error) -> None:
        """Records a failed build (class and SQLSTATE only: a message may quote data). When
        the database itself is gone, that fails too and the error goes to the worker's
        supervisor; the request stays 'building', unlocked, and is built again."""
        reason = type(error).__name__ + (f" ({error.sqlstate})" if error.sqlstate else "")
        log.warning("history search index for org %s model %s failed: %s", org_id, model, reason)
        with self._db.connection() as conn:
            conn.execute(
                "UPDATE dw_window_indexes SET state = 'failed', failures = failures + 1,"
                " last_error = %s, failed_at = now(), phase = NULL, progress = NULL"
                " WHERE org_id = %s AND model = %s AND index_name = %s AND state = 'building'",
                (reason, org_id, model, name),
            )

    def _build(
        self,
        conn: psycopg.Connection[dict[str, Any]],
        org_id: str,
        model: str,
        name: str,
        stop: threading.Event | None,
    ) -> BuiltIndex | None:
        dims_row = conn.execute(
            "SELECT vector_dims(embedding) AS dims FROM dw_message_embeddings"
            " WHERE org_id = %s AND model = %s LIMIT 1",
            (org_id, model),
        ).fetchone()
        if dims_row is None:
            # Nothing left to index (purged or dropped since): forget the request.
            conn.execute(
                "DELETE FROM dw_window_indexes WHERE org_id = %s AND model = %s", (org_id, model)
            )
            return None
        dims = int(dims_row["dims"])
        started = time.monotonic()
        started_row = conn.execute(
            "UPDATE dw_window_indexes SET state = 'building', dimensions = %s,"
            " started_at = now(), phase = NULL, tuples_done = NULL, tuples_total = NULL,"
            " progress = 0 WHERE org_id = %s AND model = %s AND state <> 'dropping' RETURNING 1",
            (dims, org_id, model),
        ).fetchone()
        if started_row is None:
            return None  # the org shrank since it was claimed: dropped next time round
        # An index left invalid by a builder that died half-way.
        self._drop_concurrently(conn, name)
        conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (INDEX_BUILD_MEMORY,))
        pid_row = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()
        pid = int(cast(int, pid_row["pid"])) if pid_row is not None else 0
        watcher = _ProgressWatcher(self._db, org_id, model, pid)
        watcher.start()
        try:
            for ordinal, group in enumerate(ScriptGroup):
                if stop is not None and stop.is_set():
                    return None
                watcher.building(group, ordinal)
                conn.execute(_create_statement(name, org_id, model, group, dims))
        finally:
            watcher.stop()
        seconds = time.monotonic() - started
        marked = conn.execute(
            "UPDATE dw_window_indexes SET state = 'ready', ready_at = now(), phase = NULL,"
            " progress = NULL,"
            " failures = 0, last_error = NULL, failed_at = NULL"
            " WHERE org_id = %s AND model = %s AND index_name = %s AND state = 'building'"
            " RETURNING 1",
            (org_id, model, name),
        ).fetchone()
        if marked is None:
            # The model was dropped while the index was built (drop_model deleted the row),
            # or the org shrank below the drop line ('dropping': dropped next time round).
            self._drop_concurrently(conn, name)
            return None
        self._forget(org_id, model)
        log.info(
            "history search index ready: org %s model %s (%d dims) in %.1f s",
            org_id,
            model,
            dims,
            seconds,
        )
        return BuiltIndex(org_id, model, name, dims, seconds)

    @staticmethod
    def _drop_concurrently(conn: psycopg.Connection[dict[str, Any]], name: str) -> None:
        for group in ScriptGroup:
            conn.execute(
                sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(
                    sql.Identifier(group_index_name(name, group))
                )
            )


def _create_statement(
    name: str, org_id: str, model: str, group: ScriptGroup, dims: int
) -> sql.Composed:
    return sql.SQL(
        "CREATE INDEX CONCURRENTLY {name} ON dw_message_embeddings"
        " USING hnsw ((embedding::halfvec({dims})) halfvec_cosine_ops)"
        " WITH (m = {m}, ef_construction = {ef})"
        " WHERE org_id = {org} AND model = {model} AND script_group = {group}"
        " AND NOT index_pending"
    ).format(
        name=sql.Identifier(group_index_name(name, group)),
        dims=sql.Literal(dims),
        m=sql.Literal(HNSW_M),
        ef=sql.Literal(HNSW_EF_CONSTRUCTION),
        org=sql.Literal(org_id),
        model=sql.Literal(model),
        group=sql.Literal(group.value),
    )


class _ProgressWatcher:
    """Copies a build's pg_stat_progress_create_index row into dw_window_indexes every
    PROGRESS_INTERVAL_SECONDS (and logs it), so an operator sees how far it got: the phase
    (with the group index being built, e.g. `... (han, 1 of 3)`), the tuples done, and the
    share of the whole build done. pgvector's HNSW build scans the table for its tuples and
    reports the blocks scanned (`blocks_done`/`blocks_total`), not a tuple total: the share
    is (groups built + the current group's share) / groups, the current group's share being
    the blocks scanned while it loads its graph, none before and all after."""

    def __init__(self, database: Database, org_id: str, model: str, pid: int) -> None:
        self._db = database
        self._org_id = org_id
        self._model = model
        self._pid = pid
        self._group = ScriptGroup.HAN.value
        self._ordinal = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="window-index-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def building(self, group: ScriptGroup, ordinal: int) -> None:
        """The build moved on to `group`'s index, the `ordinal`-th (from 0)."""
        self._group = group.value
        self._ordinal = ordinal

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._done.wait(PROGRESS_INTERVAL_SECONDS):
            try:
                self._copy()
            except psycopg.Error as exc:  # progress is best effort; the build goes on
                log.warning("history search index progress unavailable: %s", exc)

    def _copy(self) -> None:
        groups = len(ScriptGroup)
        with self._db.connection() as conn:
            row = conn.execute(
                "UPDATE dw_window_indexes i SET"
                " phase = p.phase || format(' (%%s, %%s of %%s)', %(group)s::text,"
                "   %(ordinal)s + 1, %(groups)s),"
                " tuples_done = p.tuples_done, tuples_total = nullif(p.tuples_total, 0),"
                " progress = (%(ordinal)s + CASE"
                "   WHEN p.phase IN ('initializing', 'waiting for writers before build') THEN 0"
                "   WHEN p.phase LIKE 'building index%%' THEN"
                "     CASE WHEN p.blocks_total > 0"
                "          THEN least(1.0, p.blocks_done::float8 / p.blocks_total) ELSE 0 END"
                "   ELSE 1 END) / %(groups)s"
                " FROM pg_stat_progress_create_index p"
                " WHERE p.pid = %(pid)s AND i.org_id = %(org)s AND i.model = %(model)s"
                " RETURNING i.phase, i.tuples_done, i.progress",
                {
                    "group": self._group,
                    "ordinal": self._ordinal,
                    "groups": groups,
                    "pid": self._pid,
                    "org": self._org_id,
                    "model": self._model,
                },
            ).fetchone()
        if row is not None:
            log.info(
                "history search index for org %s model %s: %s, %s windows, %.0f%% done",
                self._org_id,
                self._model,
                row["phase"],
                row["tuples_done"],
                100 * float(cast(float, row["progress"] or 0)),
            )


def _status(r: dict[str, Any]) -> SearchIndexStatus:
    return SearchIndexStatus(
        org_id=str(r["org_id"]),
        model=str(r["model"]),
        state=SearchIndexState(str(r["state"])),
        dimensions=_count(r["dimensions"]),
        windows_seen=int(r["windows_seen"]),
        requested_at=r["requested_at"],
        started_at=r["started_at"],
        ready_at=r["ready_at"],
        phase=None if r["phase"] is None else str(r["phase"]),
        tuples_done=_count(r["tuples_done"]),
        tuples_total=_count(r["tuples_total"]),
        share_done=None if r["progress"] is None else float(r["progress"]),
        failures=int(r["failures"]),
        last_error=None if r["last_error"] is None else str(r["last_error"]),
        failed_at=r["failed_at"],
    )


def _count(value: object) -> int | None:
    return None if value is None else int(cast(int, value))
