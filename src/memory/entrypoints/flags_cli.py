"""`memory flags`: show and set the feature flags of history search, globally or for one org
(docs/adr/0032, 0131).

    memory flags                                            every flag's global state
    memory flags digital_worker_semantic_search opt_in      on only for orgs that opt in
    memory flags digital_worker_semantic_search on --org acme   acme opts in
    memory flags --org acme                                 acme's flags and semantic search
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memory.domain.errors import DomainError, InvalidInput
from memory.domain.history.feature_flags import GlobalState
from memory.entrypoints.cli_output import emit, error

if TYPE_CHECKING:
    from memory.application.history.feature_flags import GlobalFlag, OrgFlag
    from memory.application.history.service import HistoryService
    from memory.infrastructure.settings import Settings


# An org's own value: on, off, or none (it follows the global state again).
ORG_VALUES = {"on": True, "off": False, "inherit": None}
GLOBAL_STATES = [state.value for state in GlobalState]


@contextmanager
def _history(settings: Settings) -> Iterator[HistoryService]:
    from memory.entrypoints.bootstrap import opened

    with opened(settings, contexts=("history",), create_home=False) as services:
        yield services.history


def global_flag_row(flag: GlobalFlag) -> dict[str, Any]:
    return {"flag": flag.flag, "state": flag.state, "default": flag.default, "set": flag.is_set}


def org_flag_row(flag: OrgFlag) -> dict[str, Any]:
    return {
        "flag": flag.flag,
        "global": flag.global_state,
        "org": {True: "on", False: "off", None: "inherit"}[flag.org_override],
        "effective": flag.effective,
    }


def _flags(args: argparse.Namespace) -> int:
    with _history(args.settings) as history:
        try:
            if args.org_id is None:
                return _global(history, args)
            return _org(history, args)
        except InvalidInput:
            raise  # `memory` names the argument
        except DomainError as exc:
            error(exc.message)
            return 2


def _global(history: HistoryService, args: argparse.Namespace) -> int:
    from memory.entrypoints.operator import cli_actor

    if args.state is not None:
        if args.state not in GLOBAL_STATES:
            raise InvalidInput("state", f"a global state is one of {', '.join(GLOBAL_STATES)}")
        history.set_global_flag(args.flag, GlobalState(args.state), actor=cli_actor())
    flags = history.global_flags() if args.flag is None else [history.global_flag(args.flag)]
    emit({"flags": [global_flag_row(f) for f in flags]})
    return 0


def _org(history: HistoryService, args: argparse.Namespace) -> int:
    from memory.entrypoints.operator import cli_actor

    org_id = args.org_id
    if args.state is not None:
        if args.state not in ORG_VALUES:
            raise InvalidInput("state", f"an org's value is one of {', '.join(ORG_VALUES)}")
        history.set_org_flag(org_id, args.flag, ORG_VALUES[args.state], actor=cli_actor())
    flags = (
        history.org_flags(org_id) if args.flag is None else [history.org_flag(org_id, args.flag)]
    )
    emit(
        {
            "org_id": org_id,
            "flags": [org_flag_row(f) for f in flags],
            "semantic_search": history.semantic_search(org_id),
        }
    )
    return 0


def register(sub: argparse._SubParsersAction[Any]) -> None:
    flags = sub.add_parser(
        "flags",
        help="show or set the feature flags of history search, globally or for one org",
        description=(
            "Without STATE: show the flags. With FLAG and STATE: set the flag's global state "
            f"({', '.join(GLOBAL_STATES)}; opt_in turns it on only for the orgs set on), or "
            "with --org the org's own value (on, off, or inherit to follow the global state)."
        ),
    )
    flags.add_argument(
        "flag", metavar="FLAG", nargs="?", help="e.g. digital_worker_semantic_search"
    )
    flags.add_argument(
        "state",
        metavar="STATE",
        nargs="?",
        help=f"global: {', '.join(GLOBAL_STATES)}; with --org: {', '.join(ORG_VALUES)}",
    )
    flags.add_argument("--org", dest="org_id", metavar="ORG", help="one org's flags")
    flags.set_defaults(func=_flags)
