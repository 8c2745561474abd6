"""Who the command line acts as: the operator (docs/security.md)."""

from __future__ import annotations

import getpass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory.domain.access.api_key import ApiKey
    from memory.domain.audit.admin_action import Actor


def cli_operator() -> ApiKey:
    """Whoever can run `memory` against the database holds its credentials already: the
    command line acts with every scope on every org, as key id "cli" and the OS user."""
    from memory.application.access.key_administration import operator_key

    return operator_key(f"cli:{getpass.getuser()}")


def cli_actor() -> Actor:
    from memory.application.access.key_administration import actor_of

    return actor_of(cli_operator())
