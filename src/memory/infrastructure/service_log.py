"""`ServiceObserver` that logs application service calls, for both contexts.

Only the operation, its duration, its outcome and the numbers of its result are logged,
never arguments: those may be chat text or policy content, which must not outlive their
retention in a log file.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from memory.application.observer import ServiceCall
from memory.domain.errors import DomainError

log = logging.getLogger("memory.service")

# Operations worth a line at INFO when they succeed (the rest log at DEBUG): the
# administrative and background ones, which run rarely and change much.
NOTABLE_OPERATIONS = frozenset({"sweep", "purge", "drop_model", "reembed", "set_retention"})


def result_numbers(result: object) -> dict[str, Any]:
    """The counts a result carries (windows embedded, rows deleted, ...): its `summary()`
    if it has one, else its numeric dataclass fields. Never its text fields."""
    summary = getattr(result, "summary", None)
    if callable(summary):
        numbers = summary()
        if isinstance(numbers, dict):
            return {k: v for k, v in numbers.items() if _is_number(v)}
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return {
            f.name: getattr(result, f.name)
            for f in dataclasses.fields(result)
            if _is_number(getattr(result, f.name))
        }
    return {}


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class ServiceLog:
    def observe(self, call: ServiceCall) -> None:
        fields: dict[str, Any] = {
            "context": call.context,
            "operation": call.operation,
            "seconds": round(call.seconds, 3),
            **{k: v for k, v in sorted(call.labels.items())},
        }
        name = f"{call.context}.{call.operation}"
        if call.error is None:
            level = logging.INFO if call.operation in NOTABLE_OPERATIONS else logging.DEBUG
            fields.update(result_numbers(call.result))
            log.log(level, "%s done", name, extra=fields)
        elif isinstance(call.error, DomainError):
            log.debug("%s refused", name, extra={**fields, "code": call.error.code})
        else:
            # The class only: a model server's message may quote the input.
            log.warning("%s failed", name, extra={**fields, "error": type(call.error).__name__})
