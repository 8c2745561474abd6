"""What a client sends to access control: a new API key, the key a path names, the key
listing's and the audit log's queries."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from memory.application.audit.ports import AUDIT_LIMIT_DEFAULT, AUDIT_LIMIT_MAX
from memory.contract.input import (
    NO_NUL,
    NOT_BLANK_NO_CONTROL,
    Instant,
    QueryInt,
    QueryParams,
    StrictBody,
    stated,
)
from memory.domain.access.api_key import MAX_KEY_LIFETIME_DAYS, MAX_KEY_NAME_CHARS
from memory.domain.access.scopes import Scope
from memory.domain.history.chat_input import ORG_ID_PATTERN


class NewKeyBody(StrictBody):
    model_config = ConfigDict(
        json_schema_extra={"not": {"required": ["expires_at", "expires_in_days"]}}
    )

    name: str = Field(
        json_schema_extra=stated(
            minLength=1, maxLength=MAX_KEY_NAME_CHARS, pattern=NOT_BLANK_NO_CONTROL
        )
    )
    org_id: str | None = Field(default=None, pattern=ORG_ID_PATTERN)
    scopes: list[str] = Field(
        max_length=len(Scope),
        json_schema_extra=stated(minItems=1, items={"enum": [s.value for s in Scope]}),
    )
    expires_at: Instant | None = Field(
        default=None,
        description="When the key stops working: in the future, at most "
        f"{MAX_KEY_LIFETIME_DAYS} days ahead. Default: never (or `expires_in_days`).",
    )
    expires_in_days: int | None = Field(
        default=None,
        ge=1,
        le=MAX_KEY_LIFETIME_DAYS,
        description="The same as a number of days from now; not together with `expires_at`.",
    )


class KeyPath(QueryParams):
    key_id: str = Field(max_length=64)


class KeysParams(QueryParams):
    created_by: Annotated[str, Field(json_schema_extra=stated(pattern=NO_NUL))] | None = Field(
        default=None,
        max_length=64,
        description="Only the keys this key id created, directly or through keys it "
        "created (`cli`, `bootstrap`, `admin-token` or a `key_...` id).",
    )


class AuditParams(QueryParams):
    since: Instant | None = None
    until: Instant | None = None
    org_id: str | None = Field(default=None, pattern=ORG_ID_PATTERN)
    limit: QueryInt = Field(default=AUDIT_LIMIT_DEFAULT, ge=1, le=AUDIT_LIMIT_MAX)
    # The `next_cursor` of the previous page: the id of its last entry.
    cursor: Annotated[QueryInt, Field(ge=1)] | None = None
