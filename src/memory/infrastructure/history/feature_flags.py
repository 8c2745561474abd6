"""Both layers of the feature flags in PostgreSQL."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from psycopg.rows import DictRow

from memory.domain.history.feature_flags import FlagLayers, GlobalState
from memory.infrastructure.postgres.database import Database

_GLOBAL = "SELECT flag, enabled, opt_in FROM admin_feature_flags"


def _states(rows: Sequence[DictRow]) -> dict[str, GlobalState]:
    return {
        str(r["flag"]): GlobalState.OPT_IN if r["opt_in"] else GlobalState.of(bool(r["enabled"]))
        for r in rows
    }


class PostgresFeatureFlags:
    def __init__(self, database: Database) -> None:
        self._db = database

    def global_layer(self) -> dict[str, bool]:
        return {flag: state.enabled for flag, state in self.global_states().items()}

    def global_states(self) -> dict[str, GlobalState]:
        with self._db.connection() as conn:
            return _states(conn.execute(_GLOBAL).fetchall())

    def layers(self, org_id: str) -> FlagLayers:
        return self.layers_of([org_id])[org_id]

    def layers_of(self, org_ids: Sequence[str]) -> dict[str, FlagLayers]:
        with self._db.connection() as conn:
            states = _states(conn.execute(_GLOBAL).fetchall())
            org_rows = conn.execute(
                "SELECT org_id, flag, enabled FROM org_feature_flags WHERE org_id = ANY(%s)",
                (list(org_ids),),
            ).fetchall()
        per_org: dict[str, dict[str, bool]] = defaultdict(dict)
        for r in org_rows:
            per_org[str(r["org_id"])][str(r["flag"])] = bool(r["enabled"])
        return {org: FlagLayers.of(states, dict(per_org[org])) for org in org_ids}

    def set_global(self, flag: str, state: GlobalState) -> None:
        with self._db.connection() as conn:
            conn.execute(
                "INSERT INTO admin_feature_flags (flag, enabled, opt_in) VALUES (%s, %s, %s)"
                " ON CONFLICT (flag) DO UPDATE SET enabled = excluded.enabled,"
                " opt_in = excluded.opt_in, updated_at = now()",
                (flag, state.enabled, state is GlobalState.OPT_IN),
            )

    def set_org(self, org_id: str, flag: str, enabled: bool | None) -> None:
        with self._db.connection() as conn:
            if enabled is None:
                conn.execute(
                    "DELETE FROM org_feature_flags WHERE org_id = %s AND flag = %s",
                    (org_id, flag),
                )
                return
            conn.execute(
                "INSERT INTO org_feature_flags (org_id, flag, enabled) VALUES (%s, %s, %s)"
                " ON CONFLICT (org_id, flag)"
                " DO UPDATE SET enabled = excluded.enabled, updated_at = now()",
                (org_id, flag, enabled),
            )
