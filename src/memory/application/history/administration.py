"""The administrative changes of the history context, each recorded in the audit trail in
the same transaction as the change (docs/adr/0058): global and per-org feature flags,
retention, purges and sweeps an operator asks for, and model drops.

HTTP and the CLI call these (never the unaudited `FeatureFlags.set_*`, `HistoryRetention.set`
or `purge` behind them); the background purge and sweep are the system's own schedule and
are not administrative changes.
"""

from __future__ import annotations

from collections.abc import Callable

from memory.application.audit.ports import AuditTrail
from memory.application.history.drop_model import DropModel, DropReport
from memory.application.history.feature_flags import FeatureFlags, GlobalFlag, OrgFlag
from memory.application.history.retention import (
    HistoryRetention,
    PurgeObserver,
    PurgeReport,
    Retention,
)
from memory.domain.audit.admin_action import Action, Actor, AuditedChange
from memory.domain.history.feature_flags import GlobalState

ALL_ORGS = "*"


class HistoryAdministration:
    def __init__(
        self,
        *,
        flags: FeatureFlags,
        retention: HistoryRetention,
        drop_model: DropModel,
        audit: AuditTrail,
        stored_model_id: Callable[[str], str] = str.strip,
    ) -> None:
        self._flags = flags
        self._retention = retention
        self._drop = drop_model
        self._audit = audit
        self._stored_model_id = stored_model_id

    def set_global_flag(self, flag: str, state: GlobalState, *, actor: Actor) -> GlobalFlag:
        """`NotFound` for an unknown flag (nothing recorded)."""
        self._flags.global_flag(flag)

        def change() -> tuple[GlobalFlag, AuditedChange]:
            before = self._flags.global_flag(flag)
            after = self._flags.set_global(flag, state)
            return after, AuditedChange(
                target=flag,
                before=_audited(before) if before.is_set else None,
                after=_audited(after),
            )

        return self._audit.record(actor, Action.GLOBAL_FLAG_SET, change)

    def set_org_flag(
        self, org_id: str, flag: str, enabled: bool | None, *, actor: Actor
    ) -> OrgFlag:
        """`enabled=None` removes the org's own value (it follows the global one again)."""
        self._flags.org_flag(org_id, flag)

        def change() -> tuple[OrgFlag, AuditedChange]:
            before = self._flags.org_flag(org_id, flag)
            after = self._flags.set_org(org_id, flag, enabled)
            return after, AuditedChange(
                target=flag, before=before.org_override, after=after.org_override, org_id=org_id
            )

        return self._audit.record(actor, Action.ORG_FLAG_SET, change)

    def set_retention(self, org_id: str, days: int, *, actor: Actor) -> Retention:
        """`InvalidInput` (field `days`) outside the allowed range; nothing recorded then."""

        def change() -> tuple[Retention, AuditedChange]:
            before = self._retention.get(org_id)
            after = self._retention.set(org_id, days)
            return after, AuditedChange(
                target=org_id,
                before={"days": before.days, "default": before.is_default},
                after={"days": after.days, "default": after.is_default},
                org_id=org_id,
            )

        return self._audit.record(actor, Action.RETENTION_SET, change)

    def purge(
        self, org_id: str | None, *, actor: Actor, observer: PurgeObserver | None = None
    ) -> PurgeReport:
        """The purge an operator asked for: every org's deletions and the record commit as
        one transaction."""

        def change() -> tuple[PurgeReport, AuditedChange]:
            report = self._retention.purge(org_id, observer)
            return report, AuditedChange(
                target=org_id or ALL_ORGS,
                before=None,
                after={
                    "events_deleted": report.events_deleted,
                    "embeddings_deleted": report.embeddings_deleted,
                    "per_org": {
                        org: {"events_deleted": e, "embeddings_deleted": w}
                        for org, (e, w) in sorted(report.per_org.items())
                    },
                },
                org_id=org_id,
            )

        return self._audit.record(actor, Action.PURGE_RUN, change)

    def sweep_triggered(self, org_id: str | None, *, actor: Actor) -> None:
        """Record that an operator started a sweep pass. The pass itself is many
        transactions and resumable, so the record is of its start (before it runs)."""
        self._audit.record(
            actor,
            Action.SWEEP_TRIGGERED,
            lambda: (
                None,
                AuditedChange(
                    target=org_id or ALL_ORGS, before=None, after={"org_id": org_id}, org_id=org_id
                ),
            ),
        )

    def drop_model(self, model: str, *, actor: Actor) -> DropReport:
        """Delete a no-longer-active model's embeddings (recorded with the deletion) and reset
        its watermarks (event-sourced, committed on their own; re-running resets the rest)."""
        model_id = self._stored_model_id(model)

        def change() -> tuple[DropReport, AuditedChange]:
            report = self._drop(model_id)
            return report, AuditedChange(
                target=model_id,
                before=None,
                after={
                    "rows_deleted": report.rows_deleted,
                    "watermarks_reset": report.watermarks_reset,
                },
            )

        return self._audit.record(actor, Action.MODEL_DROPPED, change)


def _audited(flag: GlobalFlag) -> bool | str:
    """How the audit log records a global state: `true`/`false` for on/off, as it always
    has, and `"opt_in"` for the state that is neither (docs/adr/0131)."""
    return flag.state.value if flag.state is GlobalState.OPT_IN else flag.enabled
