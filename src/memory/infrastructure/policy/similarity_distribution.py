"""A query's similarity distribution over the policies a search reads (docs/adr/0112).

Policy search walks an HNSW index, so it never sees every row; the distribution comes from
a fixed sample instead: the first `DISTRIBUTION_SAMPLE` rows of the view in embedding_ref
order. embedding_ref is a uuid5, so that order is effectively random, and the same for
every page of one search (a cursor's floors do not drift)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import psycopg
from pgvector import HalfVector
from psycopg import sql

from memory.application.errors import DeadlineExceeded
from memory.domain.embedding import EmbeddingVector
from memory.domain.policy.namespace import PolicyNamespace
from memory.domain.relevance import QueryDistribution, ScriptGroup, SimilarityDistribution
from memory.infrastructure.postgres.database import Database

# Enough rows for a stable mean and spread; a few milliseconds of distance computations.
DISTRIBUTION_SAMPLE = 2000

_STATEMENT = sql.SQL(
    """
    SELECT script_group, avg(similarity) AS mean, stddev_pop(similarity) AS sd, count(*) AS n
    FROM (
        SELECT script_group, 1 - (embedding <=> %(q)s) AS similarity
        FROM policy_embeddings
        WHERE model = {model} AND namespace = ANY(%(namespaces)s::text[])
        ORDER BY embedding_ref
        LIMIT %(sample)s
    ) AS sample
    GROUP BY script_group
    """
)


class PostgresPolicySimilarityDistribution:
    def __init__(self, database: Database, model_id: str) -> None:
        self._database = database
        self._statement = _STATEMENT.format(model=sql.Literal(model_id))

    def distribution(
        self, vector: EmbeddingVector, view: Sequence[PolicyNamespace], timeout: float
    ) -> QueryDistribution:
        if timeout <= 0:
            raise _timed_out()
        params: dict[str, Any] = {
            "q": HalfVector(list(vector.values)),
            "namespaces": [n.text for n in view],
            "sample": DISTRIBUTION_SAMPLE,
        }
        timeout_ms = max(1, math.ceil(timeout * 1000))
        try:
            with self._database.connection(timeout=timeout) as conn:
                conn.execute(
                    "SELECT set_config('statement_timeout', %s, true)", (f"{timeout_ms}ms",)
                )
                rows = conn.execute(self._statement, params).fetchall()
        except psycopg.errors.QueryCanceled as exc:
            raise _timed_out() from exc
        return QueryDistribution.of_groups(
            {
                ScriptGroup(str(r["script_group"])): SimilarityDistribution(
                    float(cast(float, r["mean"])),
                    float(cast(float, r["sd"] or 0.0)),
                    int(cast(int, r["n"])),
                )
                for r in rows
            }
        )


def _timed_out() -> DeadlineExceeded:
    return DeadlineExceeded(
        "search timed out measuring the query's similarity distribution",
        details={"stage": "database"},
    )
