"""Errors the domain raises when a rule is broken. Each maps to one HTTP status, in
`memory.entrypoints.http.errors`; nothing here knows about HTTP."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class DomainError(Exception):
    """Base class: a stable machine-readable `code`, a human message, optional details."""

    code = "error"

    def __init__(self, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})


class InvalidInput(DomainError):
    """Input breaks a rule. `field` names the offending field (dotted path for nesting)."""

    code = "validation_error"

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(
            f"{field}: {reason}", details={"fields": [{"field": field, "reason": reason}]}
        )
        self.field = field
        self.reason = reason


class NotFound(DomainError):
    code = "not_found"


class AlreadyExists(DomainError):
    code = "conflict"
