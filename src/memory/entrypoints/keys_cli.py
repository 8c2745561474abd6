"""`memory keys create|list|revoke`: API keys from the command line.

The command line acts as the operator (whoever can run it holds the database's
credentials); its changes are in the audit log under the key id "cli" and the OS user.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory.domain.access.api_key import MAX_KEY_LIFETIME_DAYS
from memory.domain.access.scopes import Scope
from memory.entrypoints.cli_output import emit
from memory.entrypoints.cli_refusal import refusals

if TYPE_CHECKING:
    from memory.infrastructure.settings import Settings


def _run(args: argparse.Namespace) -> int:
    from memory.entrypoints.bootstrap import opened
    from memory.entrypoints.operator import cli_operator
    from memory.entrypoints.presenters.access import key_body, keys_body, new_key_body
    from memory.entrypoints.presenters.wire import wire

    settings: Settings = args.settings
    # An operator command: a home without a cluster is the wrong home, not a new one.
    with opened(settings, contexts=(), create_home=False) as services, refusals(1):
        if args.keys_command == "create":
            created = services.access.create(
                cli_operator(),
                args.name,
                args.org_id,
                args.scope,
                expires_at=args.expires_at,
                expires_in_days=args.expires_in_days,
            )
            emit(
                wire(new_key_body(created.key, created.secret)),
                title="API key created; its secret is shown this once:",
            )
        elif args.keys_command == "list":
            found = services.access.keys(cli_operator(), created_by=args.created_by)
            emit(wire(keys_body(found)))
        else:
            emit(wire(key_body(services.access.revoke(cli_operator(), args.key_id))))
    return 0


def _instant(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 time: {text!r} (e.g. 2027-01-31T00:00:00+00:00)"
        ) from None


def register(sub: argparse._SubParsersAction[Any]) -> None:
    keys = sub.add_parser("keys", help="API keys: create, list, revoke")
    commands = keys.add_subparsers(dest="keys_command", required=True)
    create = commands.add_parser("create", help="create a key; prints its secret once")
    create.add_argument("--name", required=True)
    create.add_argument(
        "--org", dest="org_id", default=None, help="the key's org (default: every org)"
    )
    create.add_argument(
        "--scope",
        action="append",
        required=True,
        choices=[s.value for s in Scope],
        help="repeat for several scopes",
    )
    expiry = create.add_mutually_exclusive_group()
    expiry.add_argument(
        "--expires-in-days",
        type=int,
        default=None,
        metavar="DAYS",
        help=f"the key stops working after DAYS days (1..{MAX_KEY_LIFETIME_DAYS}; default: never)",
    )
    expiry.add_argument(
        "--expires-at",
        type=_instant,
        default=None,
        metavar="TIME",
        help="the key stops working at TIME (ISO 8601 with a time zone, e.g. 2027-01-31T00:00Z)",
    )
    listing = commands.add_parser("list", help="every key (never secrets)")
    listing.add_argument(
        "--created-by",
        default=None,
        metavar="KEY_ID",
        help="only the keys KEY_ID created, directly or through keys it created",
    )
    revoke = commands.add_parser("revoke", help="revoke a key (refused from the next request)")
    revoke.add_argument("key_id", metavar="KEY_ID")
    for command in (create, listing, revoke):
        command.set_defaults(func=_run)
