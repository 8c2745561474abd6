"""Operator actions on a model's rows: list the models the read model holds, and drop or
reset one model's rows together with its tracking table (and, for drop, its index)."""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import Connection, sql

from memory.application.policy.ports import ProjectionBusy, TrackingTable
from memory.infrastructure.policy.indexes import drop_hnsw_index
from memory.infrastructure.policy.lease import ProjectionLease
from memory.infrastructure.policy.model_objects import (
    TRACKING_TABLE_LIKE,
    TRACKING_TABLE_PATTERN,
    ModelObjects,
)
from memory.infrastructure.postgres.database import Database


class PolicyModelAdmin:
    def __init__(self, database: Database) -> None:
        self._database = database

    def stored_models(self) -> dict[str, int]:
        """Row count per model in `policy_embeddings`."""
        with self._database.connection() as conn:
            rows = conn.execute(
                "SELECT model, count(*) AS n FROM policy_embeddings GROUP BY model ORDER BY model"
            ).fetchall()
        return {str(row["model"]): int(row["n"]) for row in rows}  # type: ignore[call-overload]

    def tracking_tables(self, known_models: Sequence[str]) -> list[TrackingTable]:
        """Every projection tracking table, tied to its model by the label a projector
        puts on it, or by name for the known models (tables labelled before: none)."""
        by_name = {ModelObjects(m).tracking_table: m for m in known_models}
        with self._database.connection() as conn:
            rows = conn.execute(
                "SELECT c.relname AS table_name, obj_description(c.oid, 'pg_class') AS model"
                " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE c.relkind = 'r' AND n.nspname = current_schema()"
                " AND c.relname LIKE %s ORDER BY c.relname",
                (TRACKING_TABLE_LIKE,),
            ).fetchall()
        tables = []
        for row in rows:
            name = str(row["table_name"])
            label = row["model"]
            model = str(label) if label is not None else by_name.get(name)
            tables.append(TrackingTable(name, model))
        return tables

    def drop_tracking_table(self, table: str) -> None:
        if not TRACKING_TABLE_PATTERN.fullmatch(table):
            raise ValueError(f"{table!r} is not a projection tracking table")
        with self._database.connection() as conn:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))

    def drop(self, model_id: str) -> int:
        """Delete the model's rows, index and projection position. Returns rows deleted."""
        return self._clear(model_id, drop_index=True)

    def reset(self, model_id: str) -> int:
        """Delete the model's rows and position, keeping its index: a rebuild replays the
        whole log into it."""
        return self._clear(model_id, drop_index=False)

    def _clear(self, model_id: str, *, drop_index: bool) -> int:
        lease = ProjectionLease(self._database.direct_url, model_id)
        if not lease.try_acquire():
            lease.release()
            raise ProjectionBusy(f"the projector for model {model_id} is running; stop it first")
        try:
            with self._database.connection() as conn:
                if drop_index:
                    drop_hnsw_index(conn, model_id)
                deleted = conn.execute(
                    "DELETE FROM policy_embeddings WHERE model = %s", (model_id,)
                ).rowcount
                conn.execute(
                    sql.SQL("DROP TABLE IF EXISTS {}").format(
                        sql.Identifier(ModelObjects(model_id).tracking_table)
                    )
                )
            return deleted
        finally:
            lease.release()


def label_tracking_table(conn: Connection[dict[str, object]], model_id: str) -> None:
    """Record the model a tracking table belongs to (its name only has a digest of it), so
    a table left behind by a failed re-embed can be listed and dropped by model."""
    conn.execute(
        sql.SQL("COMMENT ON TABLE {} IS {}").format(
            sql.Identifier(ModelObjects(model_id).tracking_table), sql.Literal(model_id)
        )
    )
