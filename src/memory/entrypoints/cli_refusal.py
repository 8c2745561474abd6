"""A command the service refused: one handler for every operator command.

A service's `DomainError` (not found, conflict, forbidden, ...) ends a command with its
message on stderr and the command's exit status; `InvalidInput` passes through, so that
`memory` names the argument that carries the field (docs/adr/0086).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from memory.domain.errors import DomainError, InvalidInput


class CommandRefused(Exception):
    """What `memory` prints (`message`) and exits with (`exit_status`)."""

    def __init__(self, message: str, exit_status: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_status = exit_status


@contextmanager
def refusals(exit_status: int) -> Iterator[None]:
    """Turn a `DomainError` raised inside into `CommandRefused(message, exit_status)`."""
    try:
        yield
    except InvalidInput:
        raise  # `memory` names the argument
    except DomainError as exc:
        raise CommandRefused(exc.message, exit_status) from exc
