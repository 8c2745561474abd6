"""The input rule (docs/adr/0040-one-rule-for-request-input.md) at the command line: what the
HTTP API refuses in a field, `memory` refuses in an argument, with exit status 2 and one line
naming the argument as its usage shows it (`--org`, `POLICY_ID`). docs/adr/0086 says how.

- Text: no argument may hold NUL or a lone surrogate (`memory.contract.input`). A lone
  surrogate is what Python makes of argv bytes that are not UTF-8 (`surrogateescape`).
- Identifiers whose rule needs nothing but the text (`ID_RULES`) are checked by that rule
  too. Both checks run before settings are read or a database is opened.
- Every other rule is the application services' (a limit, a cursor's signature, an
  expiry): their `InvalidInput` names a field, reported as the argument with that `dest`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from functools import partial

from memory.contract.input import unsafe_text_reason
from memory.domain.access.api_key import check_key_name
from memory.domain.errors import FieldChecks, InvalidInput
from memory.domain.history.chat_input import check_org_id
from memory.domain.policy.policy_id import PolicyId

# The rule of each identifier argument, by `dest`: the domain's own checks, which the HTTP
# routes apply while parsing and the services apply again for every door.
ID_RULES: Mapping[str, Callable[[str], object]] = {
    "org_id": check_org_id,
    "policy_id": PolicyId.parse,
    "name": check_key_name,
}


def command_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    """Each argument of the command `args` holds, by `dest`: how its usage shows it."""
    labels: dict[str, str] = {}
    command: argparse.ArgumentParser | None = parser
    while command is not None:
        chosen = None
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices[getattr(args, action.dest)]
            elif action.dest != argparse.SUPPRESS:
                labels[action.dest] = _label(action)
        command = chosen
    return labels


def check_arguments(args: argparse.Namespace, arguments: Mapping[str, str]) -> None:
    """`InvalidInput` naming (by `dest`) every argument that breaks the text rule or its
    identifier rule."""
    checks = FieldChecks()
    for dest in arguments:
        value = getattr(args, dest, None)
        texts = [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]
        reasons = [reason for text in texts if (reason := unsafe_text_reason(text))]
        if reasons:
            checks.fail(dest, reasons[0])
        elif dest in ID_RULES and texts:
            checks.run(partial(ID_RULES[dest], texts[0]))
    checks.raise_any()


def refusal(exc: InvalidInput, arguments: Mapping[str, str]) -> str:
    """`exc`'s problems on one line, each under the argument's name."""
    return "; ".join(f"{arguments.get(field, field)}: {reason}" for field, reason in exc.problems)


def _label(action: argparse.Action) -> str:
    if action.option_strings:
        return max(action.option_strings, key=len)  # `--org`, not a short alias
    return action.metavar if isinstance(action.metavar, str) else action.dest
