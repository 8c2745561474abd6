"""What a client sends to history search: chat events to ingest, search parameters, the
bodies of the sweep, flag, retention and erasure calls, and the paths they name."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field

from memory.application.history.erasure import MAX_ERASE_EVENT_IDS, MAX_SENDER_CHARS
from memory.contract.input import (
    NO_NUL,
    NOT_BLANK_NO_CONTROL,
    NOT_BLANK_NO_NUL,
    Instant,
    QueryInt,
    QueryNumber,
    QueryParams,
    StrictBody,
    stated,
)
from memory.domain.history.chat_event import (
    DEFAULT_DECISION,
    EVENT_TYPE_MESSAGE,
    MAX_EVENT_ID_CHARS,
    MAX_EVENTS_PER_REQUEST,
    MAX_MESSAGE_CHARS,
    MAX_NAME_CHARS,
    ChatEvent,
)
from memory.domain.history.chat_input import KIND_PATTERN, ORG_ID_PATTERN, PROVIDER_PATTERN
from memory.domain.history.feature_flags import GLOBAL_DEFAULTS
from memory.domain.history.org_directory import DIRECTORY_LIMIT_DEFAULT, DIRECTORY_LIMIT_MAX
from memory.domain.history.partition_listing import PARTITION_PAGE_DEFAULT, PARTITION_PAGE_MAX
from memory.domain.history.retention import RETENTION_DAYS_MAX, RETENTION_DAYS_MIN
from memory.domain.history.search import MAX_QUERY_CHARS, SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX
from memory.domain.policy.cursor import CURSOR_MAX_CHARS
from memory.domain.relevance import MAX_MIN_RELEVANCE

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _no_control_characters(value: str) -> str:
    if _CONTROL.search(value):
        raise ValueError("must not contain control characters")
    if not value.strip():
        raise ValueError("must not be blank")
    return value


Name = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        json_schema_extra=stated(pattern=NOT_BLANK_NO_CONTROL),
    ),
    AfterValidator(_no_control_characters),
]


class OrgPath(QueryParams):
    org_id: str = Field(pattern=ORG_ID_PATTERN)


# The flags there are (an unknown one is 404).
_FLAG = stated(enum=sorted(GLOBAL_DEFAULTS))


class FlagPath(QueryParams):
    flag: str = Field(json_schema_extra=_FLAG)


class OrgFlagPath(QueryParams):
    """The path of an org's flag (for the contract; the route checks each part)."""

    org_id: str = Field(pattern=ORG_ID_PATTERN)
    flag: str = Field(json_schema_extra=_FLAG)


class ChatEventBody(StrictBody):
    event_id: (
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_EVENT_ID_CHARS,
                json_schema_extra=stated(pattern=NOT_BLANK_NO_CONTROL),
            ),
            AfterValidator(_no_control_characters),
        ]
        | None
    ) = None
    provider: str = Field(pattern=PROVIDER_PATTERN)
    channel_id: Name
    thread_id: Name | None = None
    sender: Name
    event_type: str = Field(default=EVENT_TYPE_MESSAGE, pattern=KIND_PATTERN)
    decision: str = Field(default=DEFAULT_DECISION, pattern=KIND_PATTERN)
    # NUL (and lone surrogates) are refused for every field by the parser (ADR 0040).
    text: str = Field(max_length=MAX_MESSAGE_CHARS, json_schema_extra=stated(pattern=NO_NUL))
    occurred_at: Instant

    def to_domain(self) -> ChatEvent:
        return ChatEvent(
            event_id=self.event_id,
            provider=self.provider,
            channel_id=self.channel_id,
            thread_id=self.thread_id,
            sender=self.sender,
            event_type=self.event_type,
            decision=self.decision,
            text=self.text,
            occurred_at=self.occurred_at,
        )


class IngestBody(StrictBody):
    events: list[ChatEventBody] = Field(min_length=1, max_length=MAX_EVENTS_PER_REQUEST)


class SearchParams(QueryParams):
    q: str = Field(
        min_length=1, max_length=MAX_QUERY_CHARS, json_schema_extra=stated(pattern=NOT_BLANK_NO_NUL)
    )
    limit: QueryInt = Field(default=SEARCH_LIMIT_DEFAULT, ge=1, le=SEARCH_LIMIT_MAX)
    provider: str | None = Field(default=None, pattern=PROVIDER_PATTERN)
    channel_id: Name | None = None
    since: Instant | None = None
    until: Instant | None = None
    # The least relevance a semantic hit needs (standard deviations above the query's mean
    # similarity, docs/adr/0112); unset: the default rule.
    min_relevance: Annotated[QueryNumber, Field(ge=0, le=MAX_MIN_RELEVANCE)] | None = None


class OrgListingParams(QueryParams):
    limit: QueryInt = Field(default=DIRECTORY_LIMIT_DEFAULT, ge=1, le=DIRECTORY_LIMIT_MAX)
    # The start of an org id (shaped like one).
    prefix: str | None = Field(default=None, pattern=ORG_ID_PATTERN)
    # The `next_cursor` of the previous page.
    cursor: str | None = Field(default=None, min_length=1, max_length=CURSOR_MAX_CHARS)


class SweepStatusParams(QueryParams):
    # Partitions per page.
    limit: QueryInt = Field(default=PARTITION_PAGE_DEFAULT, ge=1, le=PARTITION_PAGE_MAX)
    # The `next_cursor` of the previous page (of the same org).
    cursor: str | None = Field(default=None, min_length=1, max_length=CURSOR_MAX_CHARS)


class SweepBody(StrictBody):
    org_id: str | None = Field(default=None, pattern=ORG_ID_PATTERN)


class FlagBody(StrictBody):
    enabled: bool


def _enabled_or_state(schema: dict[str, Any]) -> None:
    """Exactly one of the two, each non-null (the route's rule, stated in the schema)."""
    properties = schema["properties"]
    properties["enabled"] = {"type": "boolean"}
    properties["state"] = {"type": "string", "enum": ["off", "on", "opt_in"]}
    schema["oneOf"] = [{"required": ["enabled"]}, {"required": ["state"]}]


class GlobalFlagSetBody(StrictBody):
    """A flag's new global state: `state` (`off`, `on` or `opt_in`), or `enabled` (true is
    `on`, false is `off`, as before `opt_in` existed)."""

    model_config = ConfigDict(json_schema_extra=_enabled_or_state)

    enabled: bool | None = None
    state: Literal["off", "on", "opt_in"] | None = None


def _one_of_ids_or_sender(schema: dict[str, Any]) -> None:
    """Exactly one of the two, each non-null (the use case's rule, stated in the schema)."""
    properties = schema["properties"]
    properties["event_ids"] = {
        "type": "array",
        "items": {"type": "string", "minLength": 1, "pattern": NO_NUL},
        "minItems": 1,
        "maxItems": MAX_ERASE_EVENT_IDS,
    }
    properties["sender"] = {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_SENDER_CHARS,
        "pattern": NOT_BLANK_NO_NUL,
    }
    schema["oneOf"] = [{"required": ["event_ids"]}, {"required": ["sender"]}]


class EraseBody(StrictBody):
    model_config = ConfigDict(json_schema_extra=_one_of_ids_or_sender)

    # The use case's limit, declared here too so that a body's size rules are checked
    # before it is decoded (docs/adr/0096).
    event_ids: list[str] | None = Field(default=None, max_length=MAX_ERASE_EVENT_IDS)
    sender: str | None = None


class RetentionBody(StrictBody):
    days: int = Field(ge=RETENTION_DAYS_MIN, le=RETENTION_DAYS_MAX)
