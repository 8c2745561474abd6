"""`ServiceObserver` that logs application service calls, for both contexts.

Only the operation, its duration, its outcome and counts from its result are logged, never
arguments: those may be chat text, which must not outlive its retention in a log file.
"""

from __future__ import annotations

import logging

from memory.application.embedding import EmbeddingError
from memory.application.observer import ServiceCall
from memory.domain.errors import DomainError

log = logging.getLogger("memory.service")

# Operations worth a line at INFO when they succeed (the rest log at DEBUG): the
# administrative and background ones, which run rarely and change much.
NOTABLE_OPERATIONS = frozenset({"sweep", "purge", "drop_model", "reembed", "set_retention"})


class ServiceLog:
    def observe(self, call: ServiceCall) -> None:
        labels = "".join(f" {k}={v}" for k, v in sorted(call.labels.items()))
        name = f"{call.context}.{call.operation}"
        if call.error is None:
            level = logging.INFO if call.operation in NOTABLE_OPERATIONS else logging.DEBUG
            log.log(level, "%s done in %.3fs%s", name, call.seconds, labels)
        elif isinstance(call.error, DomainError):
            log.debug("%s refused (%s)%s", name, call.error.code, labels)
        elif isinstance(call.error, EmbeddingError):
            # The class only: a model server's message may quote the input.
            log.warning("%s failed: %s%s", name, type(call.error).__name__, labels)
        else:
            log.warning(
                "%s failed after %.3fs: %s%s", name, call.seconds, type(call.error).__name__, labels
            )
