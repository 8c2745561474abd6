"""The per-model HNSW index. A partial index `WHERE model = '<id>'` serves only queries that
repeat that predicate, which every policy query does (the model is a literal in the SQL, so
even a generic plan matches it)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from memory.infrastructure.policy.model_objects import ModelObjects

# pgvector's defaults, named: graph degree and build-time candidate list. Higher values buy
# recall with build time and memory; the defaults reach >0.95 recall at ef_search 100 here.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
# Memory for building an index over existing rows: an HNSW graph that fits is built several
# times faster (100k rows of halfvec(384) need ~200 MB). Local to the building transaction.
INDEX_BUILD_MEMORY = "512MB"


def has_hnsw_index(conn: psycopg.Connection[Any], model_id: str) -> bool:
    row = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL AS present", (ModelObjects(model_id).hnsw_index,)
    ).fetchone()
    return bool(row and row["present"])


def ensure_hnsw_index(conn: psycopg.Connection[Any], model_id: str) -> None:
    """Create the model's index if it is missing (in the caller's transaction)."""
    name = ModelObjects(model_id).hnsw_index
    conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (INDEX_BUILD_MEMORY,))
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON policy_embeddings "
            "USING hnsw (embedding halfvec_cosine_ops) "
            "WITH (m = {m}, ef_construction = {ef}) WHERE model = {model}"
        ).format(
            name=sql.Identifier(name),
            m=sql.Literal(HNSW_M),
            ef=sql.Literal(HNSW_EF_CONSTRUCTION),
            model=sql.Literal(model_id),
        )
    )


def drop_hnsw_index(conn: psycopg.Connection[Any], model_id: str) -> None:
    name = ModelObjects(model_id).hnsw_index
    conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))
