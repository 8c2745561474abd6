"""Who the command line acts as: the operator (docs/security.md)."""

from __future__ import annotations

import getpass

from memory.application.access.key_administration import actor_of, operator_key
from memory.domain.access.api_key import ApiKey
from memory.domain.audit.admin_action import Actor


def cli_operator() -> ApiKey:
    """Whoever can run `memory` against the database holds its credentials already: the
    command line acts with every scope on every org, as key id "cli" and the OS user."""
    return operator_key(f"cli:{getpass.getuser()}")


def cli_actor() -> Actor:
    return actor_of(cli_operator())
