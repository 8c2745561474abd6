"""`PolicyModelStore` on Postgres: the read model's rows per model, projection positions,
dropping a model and replaying the log for one (a model swap)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memory.application.embedding import EmbeddingModel
from memory.application.policy.ports import ReembedProgress, ReembedReport, TrackingTable
from memory.domain.errors import InvalidInput
from memory.infrastructure.embedding.factory import stored_model_id
from memory.infrastructure.embedding.spec import InvalidModelSpec
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog
from memory.infrastructure.policy.model_admin import PolicyModelAdmin
from memory.infrastructure.policy.projector import read_tracking_position
from memory.infrastructure.policy.reembed import reembed
from memory.infrastructure.postgres.database import Database


class PostgresPolicyModelStore:
    def __init__(
        self,
        database: Database,
        log: EventSourcedPolicyLog,
        build_model: Callable[[str], EmbeddingModel],
    ) -> None:
        self._database = database
        self._log = log
        self._build_model = build_model
        self._admin = PolicyModelAdmin(database)

    def stored_id(self, spec: str) -> str:
        return stored_model_id(spec)

    def head(self) -> int | None:
        return self._log.head()

    def rows_per_model(self) -> dict[str, int]:
        return self._admin.stored_models()

    def position(self, model_id: str) -> int | None:
        return read_tracking_position(self._database, model_id)

    def drop(self, model_id: str) -> int:
        return self._admin.drop(model_id)

    def tracking_tables(self, known_models: Sequence[str]) -> list[TrackingTable]:
        return self._admin.tracking_tables(known_models)

    def drop_tracking_table(self, table: str) -> None:
        self._admin.drop_tracking_table(table)

    def reembed(
        self, spec: str, *, rebuild: bool, on_progress: ReembedProgress | None
    ) -> ReembedReport:
        try:
            model = self._build_model(spec)
        except InvalidModelSpec as exc:
            raise InvalidInput("model", str(exc)) from exc
        return reembed(self._database, model, self._log, rebuild=rebuild, on_progress=on_progress)
