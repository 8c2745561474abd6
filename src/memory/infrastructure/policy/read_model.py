"""Searching `policy_embeddings` for one model (`PolicyReadModel`).

Every statement names the model as a SQL literal, so the model's partial HNSW index matches
even under a generic plan, and rows of other models are never read. The time budget is
enforced by the database (`statement_timeout`, local to the transaction).

HNSW mode: the index yields the nearest candidates (iterative scan keeps going when filters
reject rows), the threshold and the stable order (distance, embedding_ref) apply on top. A
filter the planner expects to keep at most `EXACT_FILTERED_ROWS` rows is searched exactly
instead: walking the graph past the rows it rejects costs more than scanning the few it
keeps, and the exact answer has perfect recall (docs/adr/0135).
Exact mode: a full scan of the model's rows sorted by (distance, embedding_ref): perfect
recall, for benchmarks and small installations.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

import psycopg
from pgvector import HalfVector
from psycopg import sql
from psycopg.types.json import Jsonb

from memory.application.errors import DeadlineExceeded
from memory.application.policy.ports import PolicyRows, ResultRows
from memory.domain.embedding import EmbeddingVector
from memory.domain.policy.cursor import SearchCursor
from memory.domain.policy.filters import SearchFilter, TagMode
from memory.domain.policy.listing import ListPosition, ListRequest, StoredPolicy
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import PolicyNamespace
from memory.domain.policy.search import PolicyDocument, SearchRequest, SimilarityResult
from memory.domain.relevance import ScriptGroup
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.keyset import NewestFirst

SearchMode = Literal["hnsw", "exact"]
# At most this share of a search's remaining budget goes to waiting for a connection, so
# that while the database is down the search answers 503 `database_unavailable` inside its
# budget instead of running into the request's 504.
CONNECTION_WAIT_SHARE = 0.5
# PostgreSQL rounds statement_timeout to milliseconds; 0 would mean "no timeout".
MIN_STATEMENT_TIMEOUT_MS = 1
# pgvector's upper bound for hnsw.ef_search.
HNSW_MAX_EF_SEARCH = 1000
# When equal distances straddle a page boundary, the candidate list grows up to this size
# to take the whole tie group (pgvector's hnsw.max_scan_tuples default is 20,000).
MAX_CANDIDATES = 20_000

# A filtered search the planner expects to keep at most this many rows scans them exactly
# (through the filter's own index) instead of walking the graph: at 100k policies a filter
# keeping 1% took ~150-200 ms through HNSW and ~10-20 ms exactly, with recall 1.0
# (bench/large_orgs.py, docs/adr/0135).
EXACT_FILTERED_ROWS = 5_000

_COLUMNS = sql.SQL(
    "embedding_ref, namespace, policy_id, version, metadata, updated_at, script_group,"
    " embedding <=> %(q)s AS distance"
)
_LISTED = sql.SQL(
    "SELECT embedding_ref, namespace, policy_id, version, content, metadata, model,"
    " created_at, updated_at FROM policy_embeddings"
)
# Only the namespaces the reader sees (docs/adr/0102); a list parameter, so one plan serves
# every org.
_IN_VIEW = sql.SQL("namespace = ANY(%(namespaces)s::text[])")


class PostgresPolicyReadModel:
    def __init__(
        self,
        database: Database,
        model_id: str,
        *,
        mode: SearchMode = "hnsw",
        ef_search: int = 150,
    ) -> None:
        self._database = database
        self._model_id = model_id
        self._model = sql.Literal(model_id)
        self.mode: SearchMode = mode
        self._ef_search = ef_search

    @property
    def model_id(self) -> str:
        return self._model_id

    def search(
        self,
        vector: EmbeddingVector,
        request: SearchRequest,
        after: SearchCursor | None,
        timeout: float,
    ) -> ResultRows:
        params: dict[str, Any] = {
            "q": HalfVector(list(vector.values)),
            "max_distance": request.threshold.max_distance,
            "offset": 0 if after is not None else request.page.offset,
            "take": request.page.size + 1,
            "namespaces": [n.text for n in request.view],
        }
        conditions: list[sql.Composable] = [sql.SQL("model = {}").format(self._model), _IN_VIEW]
        conditions += _filter_conditions(request.filter, params)
        conditions += _relevance_conditions(request, params)
        if after is not None:
            conditions.append(
                sql.SQL("(embedding <=> %(q)s, embedding_ref) > (%(after_d)s, %(after_r)s)")
            )
            params["after_d"], params["after_r"] = after.distance, after.embedding_ref
        where = sql.SQL(" AND ").join(conditions)
        if self.mode == "exact" or (
            request.filter != SearchFilter() and self._few_rows(where, params, timeout)
        ):
            statement = sql.SQL(
                "SELECT {columns} FROM policy_embeddings WHERE {where}"
                " AND (embedding <=> %(q)s) <= %(max_distance)s"
                " ORDER BY distance, embedding_ref OFFSET %(offset)s LIMIT %(take)s"
            ).format(columns=_COLUMNS, where=where)
            rows = self._run(statement, params, {"enable_indexscan": "off"}, timeout)
        else:
            rows = self._nearest(where, params, timeout)
        results = [_result(row) for row in rows]
        has_more = len(results) > request.page.size
        return ResultRows(results[: request.page.size], has_more)

    def _few_rows(self, where: sql.Composable, params: dict[str, Any], timeout: float) -> bool:
        """Whether the planner expects the filtered rows to be few enough to scan exactly:
        its estimate (EXPLAIN, no execution), so the choice costs one planning."""
        statement = sql.SQL(
            "EXPLAIN (FORMAT JSON) SELECT 1 FROM policy_embeddings WHERE {}"
        ).format(where)
        rows = self._run(statement, params, {}, timeout)
        plan = rows[0]["QUERY PLAN"][0]["Plan"]
        return bool(plan["Plan Rows"] <= EXACT_FILTERED_ROWS)

    def _nearest(
        self, where: sql.Composable, params: dict[str, Any], timeout: float
    ) -> list[dict[str, Any]]:
        """HNSW search. The index orders candidates by distance only, so a LIMIT can cut a
        group of equal distances anywhere; when the last candidate ties with the page's last
        row, candidates are fetched again, twice as many, until the tie group is whole."""
        statement = sql.SQL(
            "WITH candidates AS MATERIALIZED ("
            " SELECT {columns} FROM policy_embeddings WHERE {where}"
            " ORDER BY embedding <=> %(q)s LIMIT %(candidates)s),"
            " extent AS (SELECT count(*) AS fetched, max(distance) AS farthest FROM candidates)"
            " SELECT candidates.*, extent.* FROM candidates, extent"
            " WHERE distance <= %(max_distance)s"
            " ORDER BY distance, embedding_ref OFFSET %(offset)s LIMIT %(take)s"
        ).format(columns=_COLUMNS, where=where)
        # One candidate beyond the page: if it ties with the page's last row, the LIMIT may
        # have cut that tie group.
        candidates = params["offset"] + params["take"] + 1
        limit = max(candidates, MAX_CANDIDATES)
        ends = time.monotonic() + timeout
        while True:
            settings = {
                "hnsw.ef_search": str(min(max(self._ef_search, candidates), HNSW_MAX_EF_SEARCH)),
                # Keeps walking the graph when filters or the cursor reject candidates,
                # instead of returning fewer rows than exist (pgvector >= 0.8).
                "hnsw.iterative_scan": "relaxed_order",
            }
            rows = self._run(
                statement,
                {**params, "candidates": candidates},
                settings,
                ends - time.monotonic(),
            )
            if not rows or candidates >= limit:
                return rows
            last = rows[-1]
            if last["fetched"] < candidates or last["farthest"] > last["distance"]:
                return rows
            # The farthest candidate ties with the page's last row: get the whole group.
            candidates = min(candidates * 2, limit)

    def get(
        self,
        embedding_ref: UUID,
        query: EmbeddingVector | None,
        timeout: float,
        view: Sequence[PolicyNamespace],
    ) -> PolicyDocument | None:
        params: dict[str, Any] = {"ref": embedding_ref, "namespaces": [n.text for n in view]}
        similarity = sql.SQL("NULL::float8")
        if query is not None:
            params["q"] = HalfVector(list(query.values))
            similarity = sql.SQL("1 - (embedding <=> %(q)s)")
        statement = sql.SQL(
            "SELECT embedding_ref, namespace, policy_id, version, content, metadata, updated_at,"
            " {similarity} AS similarity FROM policy_embeddings"
            " WHERE embedding_ref = %(ref)s AND model = {model} AND {in_view}"
        ).format(similarity=similarity, model=self._model, in_view=_IN_VIEW)
        rows = self._run(statement, params, {}, timeout)
        if not rows:
            return None
        row = rows[0]
        return PolicyDocument(
            embedding_ref=row["embedding_ref"],
            policy_id=row["policy_id"],
            version=row["version"],
            content=row["content"],
            metadata=PolicyMetadata.from_json(row["metadata"]),
            timestamp=row["updated_at"],
            similarity=None if row["similarity"] is None else float(row["similarity"]),
            namespace=PolicyNamespace.parse(row["namespace"]),
        )

    def list_policies(
        self, request: ListRequest, after: ListPosition | None, timeout: float
    ) -> PolicyRows:
        # One keyset page per namespace, each an index range of
        # (model, namespace, updated_at, embedding_ref) read newest first, merged: a page
        # costs the same however many policies the namespaces hold.
        pages = [self._listing_page(request, after, i, n) for i, n in enumerate(request.view)]
        params = {k: v for page in pages for k, v in page.params.items()}
        statement = sql.SQL(
            "SELECT * FROM ({pages}) AS listed"
            " ORDER BY updated_at DESC, embedding_ref DESC LIMIT %(page_take)s"
        ).format(
            pages=sql.SQL(" UNION ALL ").join(
                sql.SQL("({})").format(page.statement(_LISTED)) for page in pages
            )
        )
        rows, more = pages[0].page(self._run(statement, params, {}, timeout))
        policies = [
            StoredPolicy(
                policy_id=row["policy_id"],
                embedding_ref=row["embedding_ref"],
                version=row["version"],
                content=row["content"],
                metadata=PolicyMetadata.from_json(row["metadata"]),
                model=row["model"],
                stored_at=row["created_at"],
                updated_at=row["updated_at"],
                namespace=PolicyNamespace.parse(row["namespace"]),
            )
            for row in rows
        ]
        return PolicyRows(policies, more)

    def _listing_page(
        self,
        request: ListRequest,
        after: ListPosition | None,
        index: int,
        namespace: PolicyNamespace,
    ) -> NewestFirst:
        keyset = NewestFirst(["updated_at", "embedding_ref"], request.limit)
        keyset.where(sql.SQL("model = {}").format(self._model))
        keyset.where(f"namespace = %(namespace_{index})s", **{f"namespace_{index}": namespace.text})
        keyset.where("source = %(source)s", source=request.source)
        keyset.where("tags @> ARRAY[%(tag)s]::text[]", tag=request.tag)
        keyset.where("updated_at >= %(since)s", since=request.updated_since)
        keyset.after(None if after is None else [after.updated_at, after.embedding_ref])
        return keyset

    def _run(
        self,
        statement: sql.Composed,
        params: Mapping[str, Any],
        settings: Mapping[str, str],
        timeout: float,
    ) -> list[dict[str, Any]]:
        if timeout <= 0:
            raise DeadlineExceeded(
                "search timed out before its database query",
                details={"timeout_seconds": 0, "stage": "database"},
            )
        timeout_ms = max(MIN_STATEMENT_TIMEOUT_MS, math.ceil(timeout * 1000))
        try:
            configured = {"statement_timeout": f"{timeout_ms}ms", **settings}
            with self._database.connection(timeout=timeout * CONNECTION_WAIT_SHARE) as conn:
                # One round trip for all transaction-local settings.
                conn.execute(
                    sql.SQL("SELECT {}").format(
                        sql.SQL(", ").join(
                            sql.SQL("set_config({}, {}, true)").format(
                                sql.Literal(name), sql.Literal(value)
                            )
                            for name, value in configured.items()
                        )
                    )
                )
                rows: list[dict[str, Any]] = conn.execute(statement, params).fetchall()
                return rows
        except psycopg.errors.QueryCanceled as exc:
            raise DeadlineExceeded(
                f"search timed out after {timeout:.3g}s in the database",
                details={"timeout_seconds": round(timeout, 3), "stage": "database"},
            ) from exc


def _filter_conditions(search_filter: SearchFilter, params: dict[str, Any]) -> list[sql.Composable]:
    conditions: list[sql.Composable] = []
    if search_filter.source is not None:
        conditions.append(sql.SQL("source = %(f_source)s"))
        params["f_source"] = search_filter.source
    if search_filter.title is not None:
        conditions.append(sql.SQL("title = %(f_title)s"))
        params["f_title"] = search_filter.title
    if search_filter.tags is not None:
        operator = "&&" if search_filter.tags.mode is TagMode.ANY else "@>"
        conditions.append(sql.SQL(f"tags {operator} %(f_tags)s::text[]"))
        params["f_tags"] = list(search_filter.tags.tags)
    if search_filter.metadata:
        conditions.append(sql.SQL("metadata @> %(f_metadata)s"))
        params["f_metadata"] = Jsonb(dict(search_filter.metadata))
    if search_filter.timestamp is not None:
        bounds: dict[str, tuple[str, datetime | None]] = {
            "gte": (">=", search_filter.timestamp.gte),
            "gt": (">", search_filter.timestamp.gt),
            "lte": ("<=", search_filter.timestamp.lte),
            "lt": ("<", search_filter.timestamp.lt),
        }
        for name, (operator, value) in bounds.items():
            if value is not None:
                conditions.append(sql.SQL(f"updated_at {operator} %(f_{name})s"))
                params[f"f_{name}"] = value
    return conditions


def _result(row: Mapping[str, Any]) -> SimilarityResult:
    distance = float(row["distance"])
    return SimilarityResult(
        embedding_ref=row["embedding_ref"],
        policy_id=row["policy_id"],
        version=row["version"],
        similarity=1.0 - distance,
        distance=distance,
        metadata=PolicyMetadata.from_json(row["metadata"]),
        timestamp=row["updated_at"],
        namespace=PolicyNamespace.parse(row["namespace"]),
        script_group=ScriptGroup(row["script_group"]),
    )


def _relevance_conditions(request: SearchRequest, params: dict[str, Any]) -> list[sql.Composable]:
    """`min_relevance` as the least similarity of each script group (docs/adr/0112)."""
    conditions: list[sql.Composable] = []
    for n, (group, floor) in enumerate(request.group_floors):
        params[f"floor_group_{n}"] = group.value
        params[f"floor_distance_{n}"] = 1.0 - floor
        conditions.append(
            sql.SQL("(script_group <> {g} OR (embedding <=> %(q)s) <= {d})").format(
                g=sql.Placeholder(f"floor_group_{n}"), d=sql.Placeholder(f"floor_distance_{n}")
            )
        )
    return conditions
