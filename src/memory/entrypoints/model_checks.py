"""The last `memory check` of each active model, for /healthz and the console (ADR 0114).

`memory check` records its figures as a `model.checked` audit event. /healthz shows, per
active model, the newest such event, found by the audit log's (action, target) index
(ADR 0114) however many entries came after it, read at most every
`MODEL_CHECK_REFRESH_SECONDS` (a probe every few seconds costs one index probe per model a
minute, never a scan of the log)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from memory.domain.audit.admin_action import Action
from memory.infrastructure.audit.audit_log import PostgresAuditTrail

MODEL_CHECK_REFRESH_SECONDS = 60.0


class ModelChecks:
    def __init__(
        self, audit: PostgresAuditTrail, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._audit = audit
        self._clock = clock
        self._lock = threading.Lock()
        self._read_at: float | None = None
        self._cached: dict[str, Any] = {}

    def report(self, models: Iterable[str]) -> dict[str, Any]:
        """Per model: the last check's figures (`passed`, recall, precision, when), or
        `{"checked": false}`. Blocking: call it off the event loop."""
        wanted = sorted(set(models))
        with self._lock:
            now = self._clock()
            fresh = self._read_at is not None and now - self._read_at < MODEL_CHECK_REFRESH_SECONDS
            if not fresh or set(wanted) - set(self._cached):
                self._cached = {m: self._read(m) for m in wanted}
                self._read_at = now
            return {m: self._cached[m] for m in wanted}

    def _read(self, model: str) -> dict[str, Any]:
        entry = self._audit.latest(Action.MODEL_CHECKED, model)
        if entry is None:
            return {"checked": False}
        figures = entry.after if isinstance(entry.after, dict) else {}
        return {"checked": True, "checked_at": entry.recorded_at.isoformat(), **figures}
