"""A search's state in one statement (docs/adr/0117): whether the org is known, both
layers of its feature flags and the windows still waiting for the active model.

Before, a hybrid search read them in four statements over three pooled connections
(`org_known`, the two flag layers, `pending_windows`) before and after its own work; each
connection also costs a liveness check and the transaction's BEGIN and COMMIT."""

from __future__ import annotations

from typing import cast

from psycopg import sql

from memory.application.history.ports import SearchState
from memory.domain.history.feature_flags import FlagLayers
from memory.infrastructure.history.sweep_schedule import PENDING_WINDOWS
from memory.infrastructure.postgres.database import Database

_STATE = sql.SQL(
    """
    SELECT EXISTS (SELECT 1 FROM dw_chat_partitions WHERE org_id = %(org_id)s) AS known,
           (SELECT coalesce(jsonb_object_agg(flag, enabled), '{{}}'::jsonb)
            FROM admin_feature_flags) AS global_flags,
           (SELECT coalesce(array_agg(flag), '{{}}') FROM admin_feature_flags WHERE opt_in)
            AS opt_in,
           (SELECT coalesce(jsonb_object_agg(flag, enabled), '{{}}'::jsonb)
            FROM org_feature_flags WHERE org_id = %(org_id)s) AS org_flags,
           ({pending}) AS pending
    """
).format(pending=sql.SQL(PENDING_WINDOWS))


class PostgresSearchState:
    def __init__(self, database: Database) -> None:
        self._db = database

    def search_state(self, org_id: str, model: str) -> SearchState:
        params = {"org_id": org_id, "model": model}
        row = self._db.read(lambda conn: conn.execute(_STATE, params).fetchone())
        assert row is not None
        return SearchState(
            org_known=bool(row["known"]),
            layers=FlagLayers(
                _flags(row["global_flags"]),
                _flags(row["org_flags"]),
                # Flags in opt_in: an org without its own value does not have them (ADR 0131).
                frozenset(str(flag) for flag in cast(list[object], row["opt_in"])),
            ),
            pending_windows=int(cast(int, row["pending"])),
        )


def _flags(value: object) -> dict[str, bool]:
    return {str(flag): bool(on) for flag, on in cast(dict[str, object], value).items()}
