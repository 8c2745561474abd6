"""The operator's side of the policy context: the models the read model has rows of, model
swaps (a re-embed) and model drops. Each change is recorded in the audit trail
(docs/adr/0058): a drop in the transaction that deletes, a re-embed by its start (the replay
is many transactions).

`PolicyService` builds this and calls it; HTTP and the CLI reach it only through the
service.
"""

from __future__ import annotations

from memory.application.audit.ports import AuditTrail
from memory.application.policy.ports import (
    PolicyModelStore,
    ReembedProgress,
    ReembedReport,
    StoredModel,
)
from memory.domain.active_model import refuse_dropping_active
from memory.domain.audit.admin_action import Action, Actor, AuditedChange
from memory.domain.errors import NotFound

CONTEXT = "policy"
ACTIVE_MODEL_SETTING = "MEMORY_POLICY_MODEL"


class PolicyAdministration:
    def __init__(self, models: PolicyModelStore, *, active_model: str, audit: AuditTrail) -> None:
        self._models = models
        self._active_model = active_model
        self._audit = audit

    def models(self) -> list[StoredModel]:
        """Every model with rows or a tracking table (a re-embed that failed before its
        first row leaves only the table), and the active one, with their positions."""
        rows = self._models.rows_per_model()
        known = sorted(set(rows) | {self._active_model})
        tracked = {t.model for t in self._models.tracking_tables(known) if t.model}
        return [
            StoredModel(
                model=model_id,
                rows=rows.get(model_id, 0),
                position=self._models.position(model_id),
                active=model_id == self._active_model,
            )
            for model_id in sorted(set(known) | tracked)
        ]

    def stored_model_id(self, model: str) -> str:
        return self._models.stored_id(model)

    def untied_tracking_tables(self) -> list[str]:
        known = sorted(set(self._models.rows_per_model()) | {self._active_model})
        return [t.table for t in self._models.tracking_tables(known) if t.model is None]

    def log_head(self) -> int | None:
        return self._models.head()

    def reembed(
        self,
        model: str,
        *,
        actor: Actor,
        rebuild: bool = False,
        on_progress: ReembedProgress | None = None,
    ) -> ReembedReport:
        """The start is recorded before the replay runs."""

        def started() -> tuple[None, AuditedChange]:
            model_id = self._models.stored_id(model)
            return None, AuditedChange(
                target=model_id, before=None, after={"model": model_id, "rebuild": rebuild}
            )

        self._audit.record(actor, Action.REEMBED_STARTED, started)
        return self._models.reembed(model, rebuild=rebuild, on_progress=on_progress)

    def drop_model(self, model: str, *, actor: Actor) -> tuple[str, int]:
        """(the stored id, rows deleted). `model` may also name a tracking table no model is
        tied to. `ActiveModelDrop` for the active model; `NotFound` when it has neither
        rows nor a tracking table. Nothing is recorded when it refuses."""
        stored = self._models.rows_per_model()
        known = sorted(set(stored) | {self._active_model})
        tables = self._models.tracking_tables(known)
        if any(t.table == model and t.model is None for t in tables):
            return self._drop_untied_table(model, actor)
        model_id = self._models.stored_id(model)
        refuse_dropping_active(
            model_id, self._active_model, context=CONTEXT, setting=ACTIVE_MODEL_SETTING
        )
        if model_id not in stored and not any(t.model == model_id for t in tables):
            known_text = ", ".join(stored) or "none"
            raise NotFound(
                f"no rows or tracking table for model {model_id} (stored: {known_text})",
                details={"model": model_id, "stored": sorted(stored)},
            )

        def change() -> tuple[tuple[str, int], AuditedChange]:
            deleted = self._models.drop(model_id)
            return (model_id, deleted), AuditedChange(
                target=model_id,
                before={"rows": stored.get(model_id, 0)},
                after={"rows_deleted": deleted},
            )

        return self._audit.record(actor, Action.MODEL_DROPPED, change)

    def _drop_untied_table(self, table: str, actor: Actor) -> tuple[str, int]:
        def change() -> tuple[tuple[str, int], AuditedChange]:
            self._models.drop_tracking_table(table)
            return (table, 0), AuditedChange(
                target=table, before=None, after={"tracking_table_dropped": table}
            )

        return self._audit.record(actor, Action.MODEL_DROPPED, change)
