"""Errors the domain raises when a rule is broken. Each maps to one HTTP status, in
`memory.entrypoints.http.errors`; nothing here knows about HTTP."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


class DomainError(Exception):
    """Base class: a stable machine-readable `code`, a human message, optional details."""

    code = "error"

    def __init__(self, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})


class InvalidInput(DomainError):
    """Input breaks a rule. `field` names the offending field (dotted path for nesting).
    One error may name several fields (`InvalidInput.every`): `problems` holds each
    (field, reason), `details["fields"]` lists them, `field` and `reason` are the first."""

    code = "validation_error"

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(
            f"{field}: {reason}", details={"fields": [{"field": field, "reason": reason}]}
        )
        self.field = field
        self.reason = reason
        self.problems: tuple[tuple[str, str], ...] = ((field, reason),)

    @classmethod
    def every(cls, errors: Sequence[InvalidInput]) -> InvalidInput:
        """One error naming every field of `errors`, in their order."""
        problems = tuple(problem for error in errors for problem in error.problems)
        if not problems:
            raise ValueError("no errors to combine")
        combined = cls(*problems[0])
        combined.problems = problems
        combined.message = "; ".join(f"{field}: {reason}" for field, reason in problems)
        combined.args = (combined.message,)
        combined.details = {"fields": [{"field": f, "reason": r} for f, r in problems]}
        return combined


class FieldChecks:
    """Runs every check of one input and keeps each failure, so that one answer names every
    broken field, not only the first (as pydantic does for a body's shape)."""

    def __init__(self) -> None:
        self._errors: list[InvalidInput] = []

    def run(self, check: Callable[[], T]) -> T | None:
        """`check()`'s value, or None when it raised `InvalidInput` (kept for later)."""
        try:
            return check()
        except InvalidInput as exc:
            self._errors.append(exc)
            return None

    def fail(self, field: str, reason: str) -> None:
        self._errors.append(InvalidInput(field, reason))

    @property
    def failed(self) -> bool:
        return bool(self._errors)

    def raise_any(self) -> None:
        """Raise one `InvalidInput` naming every failure so far, if there was any."""
        if self._errors:
            raise InvalidInput.every(self._errors)


class NotFound(DomainError):
    code = "not_found"


class AlreadyExists(DomainError):
    code = "conflict"
