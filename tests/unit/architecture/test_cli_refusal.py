"""One handler for a command the service refuses (`memory.entrypoints.cli_refusal`)."""

from __future__ import annotations

import pytest

from memory.domain.errors import InvalidInput, NotFound
from memory.entrypoints.cli_refusal import CommandRefused, refusals


def test_a_domain_error_ends_the_command_with_its_message_and_the_status_given() -> None:
    with pytest.raises(CommandRefused) as refused, refusals(1):
        raise NotFound("no policy 'p-1'")
    assert (refused.value.message, refused.value.exit_status) == ("no policy 'p-1'", 1)


def test_invalid_input_passes_through_so_that_memory_names_the_argument() -> None:
    with pytest.raises(InvalidInput), refusals(2):
        raise InvalidInput("days", "must be at least 1")


def test_anything_else_passes_through() -> None:
    with pytest.raises(KeyError), refusals(2):
        raise KeyError("x")
