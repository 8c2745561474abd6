"""The HTTP contract's response bodies (and the JSON shapes of policy metadata and search
filters), as pydantic models: the OpenAPI document is generated from them
(`memory.entrypoints.http.openapi`), the contract test checks every answer against them, and
`memory.client` parses answers into them. Request bodies and query strings are in
`policy_requests`, `history_requests` and `access_requests`."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from memory.contract.input import NO_NUL, NOT_BLANK_NO_NUL
from memory.domain.policy.filters import (
    MAX_FILTER_METADATA_KEYS,
    MAX_FILTER_TAGS,
    MAX_FILTER_TEXT_CHARS,
)
from memory.domain.policy.metadata import (
    MAX_TAGS,
    SOURCE_MAX_CHARS,
    TAG_MAX_CHARS,
    TITLE_MAX_CHARS,
)


class Answer(BaseModel):
    """Base of every response model: unknown fields are kept (a newer server may add
    fields; an older client must still read the answer)."""

    model_config = ConfigDict(extra="allow", frozen=True)


def _absent(value: object) -> bool:
    """Left out of the answer when None: an optional part that only says something when it
    is there (`pending_windows`, a full-text hit's `similarity`)."""
    return value is None


# Errors ----------------------------------------------------------------------------------


class FieldProblem(Answer):
    field: str = Field(description="Dotted path of the failing field (`metadata.title`).")
    reason: str


class ErrorInfo(Answer):
    code: str = Field(description="Stable machine-readable code, e.g. `validation_error`.")
    message: str
    details: dict[str, Any] | None = Field(
        default=None,
        description="For `validation_error`: `fields`, every failing field with its reason.",
    )


class ErrorBody(Answer):
    error: ErrorInfo


# Policy shapes ---------------------------------------------------------------------------


class PolicyMetadataShape(BaseModel):
    """A policy's metadata: three well-known keys, any others with JSON values (finite
    numbers, at most 32 levels deep, at most 16 KiB as JSON in all)."""

    model_config = ConfigDict(
        extra="allow",
        title="PolicyMetadata",
        json_schema_extra={
            "propertyNames": {"minLength": 1, "pattern": NO_NUL},
            "additionalProperties": {"$ref": "#/components/schemas/PolicyMetadataValue"},
        },
    )

    title: str | None = Field(
        default=None, min_length=1, max_length=TITLE_MAX_CHARS, pattern=NOT_BLANK_NO_NUL
    )
    source: str | None = Field(
        default=None, min_length=1, max_length=SOURCE_MAX_CHARS, pattern=NOT_BLANK_NO_NUL
    )
    tags: list[
        Annotated[str, Field(min_length=1, max_length=TAG_MAX_CHARS, pattern=NOT_BLANK_NO_NUL)]
    ] = Field(default_factory=list, max_length=MAX_TAGS, json_schema_extra={"uniqueItems": True})


# The value of a metadata key other than the three well-known ones, stated in the document
# by hand (`METADATA_VALUE_SCHEMA`): pydantic cannot write a recursive alias without also
# validating through it, and the domain does the checking (iteratively, naming the key).
METADATA_VALUE_SCHEMA: dict[str, Any] = {
    "description": "Any JSON value whose strings and keys, at every depth, hold no NUL "
    "character (PostgreSQL text cannot); numbers are finite; at most 32 levels deep.",
    "anyOf": [
        {"type": "string", "pattern": NO_NUL},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "array", "items": {"$ref": "#/components/schemas/PolicyMetadataValue"}},
        {
            "type": "object",
            "propertyNames": {"pattern": NO_NUL},
            "additionalProperties": {"$ref": "#/components/schemas/PolicyMetadataValue"},
        },
    ],
}


FilterScalar = str | int | float | bool | None


FilterText = Annotated[str, Field(max_length=MAX_FILTER_TEXT_CHARS, pattern=NO_NUL)]


class TagsAny(BaseModel):
    model_config = ConfigDict(extra="forbid")
    any: list[FilterText] = Field(min_length=1, max_length=MAX_FILTER_TAGS)


class TagsAll(BaseModel):
    model_config = ConfigDict(extra="forbid")
    all: list[FilterText] = Field(min_length=1, max_length=MAX_FILTER_TAGS)


class TimestampRange(BaseModel):
    """Bounds on a result's `timestamp`, ISO 8601 with an offset."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "minProperties": 1,
            # One lower and one upper bound at most.
            "allOf": [{"not": {"required": ["gte", "gt"]}}, {"not": {"required": ["lte", "lt"]}}],
        },
    )
    # Each bound may be left out, not null (schema only: the domain checks the filter).
    gte: datetime = None  # type: ignore[assignment]
    gt: datetime = None  # type: ignore[assignment]
    lte: datetime = None  # type: ignore[assignment]
    lt: datetime = None  # type: ignore[assignment]


class PolicyFilterShape(BaseModel):
    """Every key optional; all given conditions must hold."""

    model_config = ConfigDict(extra="forbid", title="PolicyFilter")

    source: FilterText | None = None
    title: FilterText | None = None
    tags: TagsAny | TagsAll | None = None
    metadata: dict[str, FilterScalar] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_FILTER_METADATA_KEYS,
        description="Exact matches of top-level metadata keys.",
        json_schema_extra={"propertyNames": {"minLength": 1, "pattern": NO_NUL}},
    )
    timestamp: TimestampRange | None = None


# Policy answers --------------------------------------------------------------------------


# Servers before docs/adr/0102 had global policies only, so an answer without it is one.
NAMESPACE_DESCRIPTION = "'global', or 'org:<org_id>' for an org's policy."


class StoreReceiptBody(Answer):
    policy_id: str
    embedding_ref: UUID
    version: int
    model: str
    dimensions: int
    stored_at: datetime
    searchable: bool
    namespace: str = Field(default="global", description=NAMESPACE_DESCRIPTION)


class StoredPolicyBody(Answer):
    policy_id: str
    embedding_ref: UUID
    version: int
    model: str
    title: str | None
    source: str | None
    tags: list[str]
    metadata: dict[str, Any]
    content: str
    stored_at: datetime
    updated_at: datetime
    namespace: str = Field(default="global", description=NAMESPACE_DESCRIPTION)


class PolicyPageBody(Answer):
    policies: list[StoredPolicyBody]
    next_cursor: str | None


class PolicyActorBody(Answer):
    key_id: str
    name: str


class PolicyVersionBody(Answer):
    version: int
    embedding_ref: UUID
    model: str
    content_sha256: str
    metadata: dict[str, Any]
    recorded_at: datetime
    change: Literal["stored", "content", "metadata", "deleted"]
    actor: PolicyActorBody | None = Field(
        default=None,
        description="Who made the change; null for a version recorded before changes named "
        "their actor.",
    )


class PolicyVersionsBody(Answer):
    policy_id: str
    versions: list[PolicyVersionBody]
    namespace: str = Field(default="global", description=NAMESPACE_DESCRIPTION)


class SearchResultBody(Answer):
    embedding_ref: UUID
    policy_id: str
    version: int
    similarity: float
    relevance: float | None = Field(
        default=None,
        description=(
            "The similarity in standard deviations above the query's mean similarity to the"
            " searched policies of its script group (docs/adr/0112); absent when too few"
            " policies are searched to calibrate it."
        ),
        exclude_if=_absent,
    )
    title: str | None
    source: str | None
    tags: list[str]
    metadata: dict[str, Any]
    timestamp: datetime
    namespace: str = Field(default="global", description=NAMESPACE_DESCRIPTION)


class PolicySearchBody(Answer):
    results: list[SearchResultBody]
    next_cursor: str | None
    model: str
    similarity_threshold: float
    min_relevance: float | None = Field(default=None, exclude_if=_absent)


class PolicyDocumentBody(Answer):
    embedding_ref: UUID
    policy_id: str
    version: int
    title: str | None
    source: str | None
    content: str
    timestamp: datetime
    metadata: dict[str, Any]
    similarity: float | None = Field(
        default=None, description="Only with origin=search.", exclude_if=_absent
    )
    namespace: str = Field(default="global", description=NAMESPACE_DESCRIPTION)


# History answers -------------------------------------------------------------------------


class IngestReceiptBody(Answer):
    event_ids: list[str]
    inserted: int
    duplicates: int


class HistoryHitBody(Answer):
    event_id: str
    provider: str
    channel_id: str
    sender: str
    text: str
    occurred_at: datetime
    matched_by: Literal["fts", "semantic"]
    similarity: float | None = Field(default=None, exclude_if=_absent)
    relevance: float | None = Field(
        default=None,
        description=(
            "Semantic hits: the window's similarity in standard deviations above the query's"
            " mean similarity to the searched windows of its script group (docs/adr/0112);"
            " absent when too few windows were searched to calibrate it."
        ),
        exclude_if=_absent,
    )
    window_id: UUID | None = Field(default=None, exclude_if=_absent)


class FlagSourceBody(Answer):
    flag: str
    layer: Literal["global", "org"]
    default: bool


class HistorySearchBody(Answer):
    results: list[HistoryHitBody]
    semantic: Literal["on", "off", "degraded"]
    org_known: bool
    model: str | None = Field(default=None, exclude_if=_absent)
    semantic_off_by: FlagSourceBody | None = Field(default=None, exclude_if=_absent)
    pending_windows: int | None = Field(default=None, exclude_if=_absent)


class SweepReportBody(Answer):
    windows_embedded: int
    windows_skipped: int
    windows_poisoned: int
    windows_open: int
    events_poisoned: int
    partitions: int
    partitions_stalled: int
    partitions_busy: int
    partitions_interrupted: int


class PositionBody(Answer):
    occurred_at: datetime
    event_id: str


class LateCatchUpBody(Answer):
    horizon_seq: int
    cursor: PositionBody | None


class WatermarkBody(Answer):
    position: PositionBody | None
    seen_seq: int
    late_catch_up: LateCatchUpBody | None


class LagBody(Answer):
    events: int
    oldest_closed_window_age_seconds: float | None


class PoisonWindowBody(Answer):
    window_id: UUID
    first: PositionBody | None
    last: PositionBody | None
    message_count: int
    reason: str
    recorded_at: datetime


class PoisonEventBody(Answer):
    event_id: str
    occurred_at: str
    reason: str
    recorded_at: datetime


class StallBody(Answer):
    reason: str
    at: datetime | None


class PartitionStatusBody(Answer):
    provider: str
    channel_id: str
    model: str
    watermark: WatermarkBody
    lag: LagBody
    open_windows: int = Field(
        default=0, description="Windows still open in what the sweep reads next."
    )
    windows_embedded: int
    windows_skipped: int
    poison_windows: list[PoisonWindowBody]
    poison_events: list[PoisonEventBody]
    stalled: bool
    last_stall: StallBody | None
    last_advanced_at: datetime | None


class SweepTotalsBody(Answer):
    """The whole org, from counts kept up to date by the writes (never a scan of its
    partitions); the sweep figures are the active model's, summed over the partitions as
    each one's last sweep visit left it."""

    partitions: int = Field(description="Every partition (provider, channel) of the org.")
    messages: int = Field(description="Exact number of stored chat events.")
    partitions_swept: int = Field(description="Partitions the sweep has visited.")
    windows_embedded: int
    open_windows: int = Field(description="Windows still open at the end of the last visits.")
    poison_windows: int
    poison_events: int
    partitions_stalled: int
    last_swept_at: datetime | None
    last_embedded_at: datetime | None


class SweepWaitingBody(Answer):
    """The org's work the sweep could do now, from the state ingest and the sweep keep
    (ADR 0089): never a read of its partitions."""

    partitions: int = Field(
        description="Partitions with work due now: new messages, a conversation whose"
        " 30-minute gap has elapsed, or a backlog left for the sweep's next slice."
    )
    oldest_age_seconds: float | None = Field(
        description="How long the longest-waiting of them has waited (null: none waits)."
    )


class SweepStatusBody(Answer):
    org_id: str
    model: str
    semantic_search: bool
    totals: SweepTotalsBody
    waiting: SweepWaitingBody
    partitions: list[PartitionStatusBody] = Field(
        description="One page of the org's partitions, in order of (provider, channel_id)."
    )
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next page of partitions (null: the last page)."
    )


SearchIndexStateName = Literal["wanted", "building", "ready", "failed", "dropping"]


class SearchIndexBody(Answer):
    """An org's search index for one model (docs/adr/0134, 0141): an org past 5,000 windows
    of a model gets one; its searches walk it once it is ready and scan exactly before."""

    org_id: str
    model: str
    state: SearchIndexStateName = Field(
        description="`wanted` (a search asked for it), `building`, `ready` (searches use it), "
        "`failed` (the last build failed; tried again later) or `dropping` (the org shrank "
        "below half the threshold)."
    )
    dimensions: int | None
    windows_seen: int = Field(description="Windows the search that asked for the index saw.")
    requested_at: datetime = Field(description="When a search asked for it.")
    started_at: datetime | None = Field(description="When its last build started.")
    ready_at: datetime | None = Field(description="When it became ready; null: not yet.")
    phase: str | None = Field(
        description="The running build's phase as PostgreSQL names it, with the group index "
        "it builds (`building index: loading tuples (han, 1 of 3)`); null when none runs."
    )
    tuples_done: int | None = Field(
        description="Windows the group index being built has taken so far."
    )
    tuples_total: int | None = Field(
        description="Windows the running phase will do, when PostgreSQL says it (pgvector's "
        "HNSW build does not: see `progress`)."
    )
    progress: float | None = Field(
        description="Share of the whole build done (0..1) while it runs: group indexes built, "
        "and the table scanned for the current one."
    )
    failures: int = Field(description="Builds that failed since it was last ready.")
    last_error: str | None = Field(
        description="The last failure's error class and SQLSTATE (never its message)."
    )
    failed_at: datetime | None = Field(description="When the last build failed.")


class OrgSearchIndexesBody(Answer):
    org_id: str
    model: str = Field(
        description="The active history model: its index serves the org's searches once ready."
    )
    indexes: list[SearchIndexBody] = Field(
        description="One per model the org has an index of (none: every search is exact)."
    )


class SearchIndexSummaryBody(Answer):
    """Every org's search indexes counted by state, and the builder's queue."""

    wanted: int
    building: int
    ready: int
    failed: int
    dropping: int
    queue: list[SearchIndexBody] = Field(
        description="The first indexes not ready: running builds, failures, then wanted and "
        "dropping ones, oldest request first."
    )


class GlobalFlagBody(Answer):
    flag: str
    enabled: bool
    default: bool
    set: bool
    state: Literal["off", "on", "opt_in"]


class GlobalFlagsBody(Answer):
    flags: list[GlobalFlagBody]


class OrgFlagBody(Answer):
    org_id: str
    flag: str
    global_: bool = Field(alias="global")
    org: bool | None
    effective: bool
    global_state: Literal["off", "on", "opt_in"]


class OrgFlagEntryBody(Answer):
    flag: str
    global_: bool = Field(alias="global")
    org: bool | None
    effective: bool
    global_state: Literal["off", "on", "opt_in"]


class OrgFlagsBody(Answer):
    org_id: str
    flags: list[OrgFlagEntryBody]
    semantic_search: bool


class RetentionBodyOut(Answer):
    org_id: str
    days: int
    default: bool


class ErasureBody(Answer):
    events_deleted: int
    windows_deleted: int


class OrgErasureBody(Answer):
    org_id: str
    events_deleted: int
    windows_deleted: int
    partitions_deleted: int
    watermarks_closed: int
    flags_deleted: int
    retention_deleted: bool


class PurgeBody(Answer):
    orgs: int
    events_deleted: int
    embeddings_deleted: int


class OrgRetentionBody(Answer):
    days: int
    default: bool = Field(description="True when the org has no setting of its own.")


class OrgSweepSummaryBody(Answer):
    """The active model's sweep, summed over the org's partitions as each partition's last
    sweep visit left it."""

    open_windows: int = Field(description="Windows still open at the end of the last visits.")
    poison_windows: int
    poison_events: int
    max_lag_seconds: float | None = Field(
        description=(
            "How long the org's oldest work ready for the sweep has waited since its ingest"
            " (null: none, or no pass has run with the active model yet)."
        )
    )
    last_embedded_at: datetime | None
    last_swept_at: datetime | None


class OrgSummaryBody(Answer):
    org_id: str
    semantic_search: bool
    semantic_search_by: FlagSourceBody = Field(
        description="The flag layer that decides semantic_search (the one keeping it off)."
    )
    retention: OrgRetentionBody
    partitions: int
    messages: int = Field(description="Exact number of stored chat events.")
    sweep: OrgSweepSummaryBody


class OrgDirectoryBody(Answer):
    orgs: list[OrgSummaryBody]
    next_cursor: str | None


class HealthBody(Answer):
    status: Literal["ok", "unavailable"]
    database: str
    contexts: dict[str, Any]


# Access ----------------------------------------------------------------------------------


class ApiKeyBody(Answer):
    key_id: str
    name: str
    org_id: str | None
    scopes: list[str]
    created_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None
    expires_at: datetime | None = Field(
        description="From then on the key answers 401 `key_expired`; null: never."
    )
    created_by: str | None = Field(
        description="The key id that created it (`cli`, `bootstrap`, `admin-token` or a "
        "`key_...` id); null: created before creators were recorded."
    )


class NewApiKeyBody(ApiKeyBody):
    secret: str = Field(description="Shown once; only its SHA-256 digest is stored.")


class ApiKeysBody(Answer):
    keys: list[ApiKeyBody]


class OwnApiKeyBody(Answer):
    """The key the request was made with: never its secret or the secret's digest."""

    key_id: str = Field(description="`key_...`, or `admin-token` for MEMORY_ADMIN_TOKEN.")
    name: str
    source: str = Field(
        description="`api_key` (created through the API or `memory keys`) or `admin_token` "
        "(MEMORY_ADMIN_TOKEN, configuration: no creation date, no expiry, not revocable)."
    )
    org_id: str | None = Field(description="The one org the key may act on; null: every org.")
    scopes: list[str]
    created_at: datetime | None = Field(description="Null for the admin token.")
    expires_at: datetime | None = Field(
        description="From then on the key answers 401 `key_expired`; null: never."
    )
    operations: list[str] = Field(
        description="The `operationId`s of this API the key may call, by the rules that "
        "admit its requests; an operation on an org only on `org_id` unless that is null."
    )


class AuditActorBody(Answer):
    key_id: str | None
    name: str | None


class AuditEntryBody(Answer):
    id: str
    recorded_at: datetime
    actor: AuditActorBody
    action: str
    org_id: str | None
    target: Any = None
    before: Any = None
    after: Any = None


class AuditPageBody(Answer):
    entries: list[AuditEntryBody]
    next_cursor: str | None


# Activity (the console's trends, docs/adr/0122) ------------------------------------------


class ActivityMinuteBody(Answer):
    """One minute of the last hour, summed over every replica."""

    minute: datetime = Field(description="The minute's start (UTC). ISO 8601 with a UTC offset.")
    searches: int = Field(description="History searches answered in the minute.")
    semantic: int = Field(
        description="Of those, the searches whose semantic half was on (answered with it, or"
        " degraded)."
    )
    degraded: int = Field(
        description="Of the semantic searches, those answered from full-text alone because"
        " the query could not be embedded in time."
    )
    degraded_share: float | None = Field(
        description="`degraded` / `semantic`, from 0 to 1 (null: no semantic search)."
    )
    windows_embedded: int = Field(description="Conversation windows the sweep embedded.")
    lag_age_seconds: float | None = Field(
        description="How long the oldest work waiting for the sweep had waited when a pass"
        " ended in the minute (the largest any replica saw; null: no pass told)."
    )


class ActivityBody(Answer):
    """The last hour, a minute at a time, oldest first: the service's (`GET /v1/activity`)
    or one org's. Every replica adds its figures to the same store every few seconds."""

    org_id: str | None = Field(description="The org (null: the whole service).")
    now: datetime = Field(description="When the trend was read. ISO 8601 with a UTC offset.")
    minutes: list[ActivityMinuteBody] = Field(
        description="60 entries, one per minute, the current minute last."
    )
    searches: int = Field(description="History searches in the hour.")
    degraded_share: float | None = Field(
        description="Of the hour's semantic searches, the share answered from full-text"
        " alone (null: none)."
    )
    windows_embedded: int = Field(description="Windows the sweep embedded in the hour.")
    lag_age_seconds: float | None = Field(
        description="The latest lag age sampled in the hour (null: none)."
    )
