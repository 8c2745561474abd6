"""The rules a chat event and an org id must keep, whichever door they come through: the
HTTP routes check them while parsing (to name the JSON field), and `HistoryService` checks
them again for in-process callers (`memory.api`), raising `InvalidInput` before anything is
stored."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory.domain.errors import InvalidInput
from memory.domain.history.chat_event import (
    MAX_EVENT_ID_CHARS,
    MAX_MESSAGE_CHARS,
    MAX_NAME_CHARS,
    ChatEvent,
)

ORG_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
PROVIDER_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,63}$"
KIND_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
# What each pattern means, in the words an error message gives (never the regex itself).
ORG_ID_RULE = (
    "must be 1 to 128 characters: letters, digits, '.', '_', ':' or '-', "
    "starting with a letter or digit"
)
PROVIDER_RULE = (
    "must be 1 to 64 characters: lower-case letters, digits, '_', '.' or '-', "
    "starting with a letter or digit"
)
KIND_RULE = "must be 1 to 32 characters: lower-case letters, digits or '_', starting with a letter"
PATTERN_RULES = {
    ORG_ID_PATTERN: ORG_ID_RULE,
    PROVIDER_PATTERN: PROVIDER_RULE,
    KIND_PATTERN: KIND_RULE,
}
_ORG_ID = re.compile(ORG_ID_PATTERN)
_PROVIDER = re.compile(PROVIDER_PATTERN)
_KIND = re.compile(KIND_PATTERN)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_org_id(org_id: str, field: str = "org_id") -> str:
    if not isinstance(org_id, str) or not _ORG_ID.fullmatch(org_id):
        raise InvalidInput(field, ORG_ID_RULE)
    return org_id


def check_events(events: Sequence[ChatEvent], field: str = "events") -> None:
    """Every event's fields, naming the first that breaks a rule (`events.3.sender`)."""
    for index, event in enumerate(events):
        check_event(event, f"{field}.{index}")


def check_event(event: ChatEvent, prefix: str) -> None:
    """One event's fields, naming the first that breaks a rule (`{prefix}.sender`)."""
    if event.event_id is not None:
        _name(event.event_id, f"{prefix}.event_id", MAX_EVENT_ID_CHARS)
    if not _PROVIDER.fullmatch(event.provider):
        raise InvalidInput(f"{prefix}.provider", PROVIDER_RULE)
    _name(event.channel_id, f"{prefix}.channel_id", MAX_NAME_CHARS)
    if event.thread_id is not None:
        _name(event.thread_id, f"{prefix}.thread_id", MAX_NAME_CHARS)
    _name(event.sender, f"{prefix}.sender", MAX_NAME_CHARS)
    for kind_field, kind in (("event_type", event.event_type), ("decision", event.decision)):
        if not _KIND.fullmatch(kind):
            raise InvalidInput(f"{prefix}.{kind_field}", KIND_RULE)
    if len(event.text) > MAX_MESSAGE_CHARS:
        raise InvalidInput(f"{prefix}.text", f"must be at most {MAX_MESSAGE_CHARS} characters")
    if "\x00" in event.text:
        raise InvalidInput(f"{prefix}.text", "must not contain NUL characters")


def _name(value: str, field: str, max_chars: int) -> None:
    if not 1 <= len(value) <= max_chars:
        raise InvalidInput(field, f"must be 1 to {max_chars} characters")
    if _CONTROL.search(value):
        raise InvalidInput(field, "must not contain control characters")
    if not value.strip():
        raise InvalidInput(field, "must not be blank")
