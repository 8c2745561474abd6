"""Operator actions on a model's rows: list the models the read model holds, and drop or
reset one model's rows together with its tracking table (and, for drop, its index)."""

from __future__ import annotations

from psycopg import sql

from memory.application.policy.ports import ProjectionBusy
from memory.infrastructure.policy.indexes import drop_hnsw_index
from memory.infrastructure.policy.lease import ProjectionLease
from memory.infrastructure.policy.model_objects import ModelObjects
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

    def drop(self, model_id: str) -> int:
        """Delete the model's rows, index and projection position. Returns rows deleted."""
        return self._clear(model_id, drop_index=True)

    def reset(self, model_id: str) -> int:
        """Delete the model's rows and position, keeping its index: a rebuild replays the
        whole log into it."""
        return self._clear(model_id, drop_index=False)

    def _clear(self, model_id: str, *, drop_index: bool) -> int:
        lease = ProjectionLease(self._database.url, model_id)
        if not lease.try_acquire():
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
