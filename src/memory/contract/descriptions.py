"""What each field of the contract means, for `/openapi.json` and `/docs` (docs/adr/0110).

Most field names mean one thing wherever they appear (`org_id`, `policy_id`, `model`), so
they are described once, by name, in `FIELDS`; a name that means something else in one
model or one operation's parameters is described for it in `BY_PLACE`, keyed
`"Model.field"` or `"operationId.parameter"`. A model's own `Field(description=...)` wins
over both. A test holds every property and parameter of the document to having a
description, and every entry here to being used.
"""

from __future__ import annotations

from memory.domain.access.api_key import MAX_KEY_LIFETIME_DAYS
from memory.domain.history.chat_event import MAX_EVENTS_PER_REQUEST, MAX_MESSAGE_CHARS

_TIME = "ISO 8601 with a UTC offset."

FIELDS: dict[str, str] = {
    # Shared names
    "org_id": "The tenant (org) the data belongs to (the pattern is in the schema).",
    "policy_id": "The client's id of a policy: `[A-Za-z0-9][A-Za-z0-9._:-]*`, at most 128 "
    "characters.",
    "embedding_ref": "The id of a policy's embedding in the active model's read model (a UUID, "
    "the same for every version of the policy); fetch it with `GET /v1/embeddings/{ref}`.",
    "model": "The embedding model, as `kind:name` (`local:multilingual-e5-small`, `hash:1024`).",
    "version": "The policy's version number: 1 when stored, one more with each update.",
    "content": "The policy's text, which is embedded and returned as stored.",
    "metadata": "The policy's metadata: `title`, `source`, `tags` and any other JSON keys.",
    "title": "The policy's title (metadata `title`), or null.",
    "source": "Where the policy comes from (metadata `source`), or null.",
    "tags": "The policy's tags (metadata `tags`).",
    "timestamp": "When this version of the policy was stored. " + _TIME,
    "similarity": "Cosine similarity of the hit to the query, from -1 to 1 (higher is closer).",
    "similarity_threshold": "The least similarity a result must have; default: the model's "
    "own threshold.",
    "next_cursor": "Pass as `cursor` to get the next page; null on the last page.",
    "cursor": "The `next_cursor` of the previous page, to continue after it.",
    "limit": "The most results to return in one page.",
    "results": "The hits, best first.",
    "stored_at": "When the first version was stored. " + _TIME,
    "updated_at": "When the current version was recorded. " + _TIME,
    "recorded_at": "When it was recorded. " + _TIME,
    "provider": "The chat platform, lower case (`slack`, `whatsapp`).",
    "channel_id": "The conversation's channel on the provider: 1-256 characters, no control "
    "characters.",
    "sender": "Who sent the message: 1-256 characters, no control characters.",
    "event_id": "The chat event's id, unique per org (given by the client, or derived from "
    "the event's content when it gave none).",
    "occurred_at": "When the message was sent. " + _TIME,
    "text": "The message's text.",
    "window_id": "The conversation window (a UUID) the semantic hit comes from.",
    "event_ids": "Chat event ids.",
    "events_deleted": "Chat events deleted.",
    "windows_deleted": "Embedded conversation windows deleted.",
    "windows_embedded": "Conversation windows embedded.",
    "windows_skipped": "Closed windows left out as not substantive (too little meaningful "
    "text to embed).",
    "partitions": "Sweep partitions (one per org, provider, channel and model).",
    "poison_windows": "Windows the model refused for good: skipped, and kept here for a look.",
    "poison_events": "Stored events the sweep cannot read (their time is out of range): skipped.",
    "semantic_search": "Whether semantic search is on for the org (its flags decide).",
    "flag": "A feature flag's name (`digital_worker_semantic_search`).",
    "flags": "The feature flags.",
    "enabled": "Whether the flag is on.",
    "effective": "The value in force for the org: its own if set, else the global one.",
    "org": "The org's own value; null when it has none (the global value applies).",
    "days": "How many days chat events are kept before the purge deletes them.",
    "name": "A human-readable name.",
    "key_id": "An API key's id (`key_` and hex), or `admin-token` for MEMORY_ADMIN_TOKEN.",
    "scopes": "What the key may do: `history:read`, `history:write`, `policies:read`, "
    "`policies:write`, `admin`, `metrics:read` (docs/security.md).",
    "created_at": "When the key was created. " + _TIME,
    "last_used_at": "When the key last authenticated a request (updated at most once a "
    "minute); null: never.",
    "revoked_at": "When the key was revoked; null: it is not.",
    "reason": "Why, as a short code (`input_rejected`, `model_unavailable`).",
    "since": "Only what happened at or after this instant. " + _TIME,
    "until": "Only what happened before this instant. " + _TIME,
    "query": "The text to search for; it is embedded and never stored or logged.",
    "orgs": "The orgs.",
    # Policy answers and requests
    "dimensions": "The embedding's number of dimensions.",
    "searchable": "True when the projector had indexed the write before the answer: a search "
    "right now finds it. False: it will shortly (MEMORY_PROJECTION_WAIT_TIMEOUT passed).",
    "policies": "The policies of this page, newest first.",
    "versions": "Every version, oldest first.",
    "content_sha256": "SHA-256 of the version's content (hex); the content itself is only in "
    "the current version.",
    "change": "What this version changed: `stored` (the first), `content`, `metadata`, or "
    "`deleted`.",
    "min_relevance": "The least relevance a semantic hit needs: standard deviations above the "
    "query's mean similarity, 0 to 10 (docs/adr/0112); unset: the default rule.",
    "totals": "The org's partitions summed: counts over every page.",
    "waiting": "What waits for the sweep in the org, from the state kept up to date at ingest.",
    "offset": "Results to skip before this page (at most 10,000; page further with `cursor`).",
    "max_results": "The most results over all pages of this search.",
    "filter": "Conditions on the results' metadata; all must hold.",
    "any": "At least one of these tags.",
    "all": "All of these tags.",
    "gte": "At or after this instant. " + _TIME,
    "gt": "After this instant. " + _TIME,
    "lte": "At or before this instant. " + _TIME,
    "lt": "Before this instant. " + _TIME,
    # History answers and requests
    "inserted": "Events stored by this request.",
    "duplicates": "Events the org already had (same `event_id`): nothing changed for them.",
    "thread_id": "The thread within the channel, if the provider has threads: 1-256 characters.",
    "event_type": "The kind of event: `[a-z][a-z0-9_]{0,31}`, default `message`; only "
    "messages are embedded.",
    "decision": "What the assistant did with the message: `[a-z][a-z0-9_]{0,31}`, default "
    "`received`; only `received` and `processed` messages are embedded (docs/history.md).",
    "matched_by": "Which half of the search found the hit: `fts` (full-text) or `semantic`.",
    "layer": "Which flag layer decides: `global`, or `org` (the org's own override).",
    "semantic": "`on`: semantic hits were searched; `off`: the feature is off for the org (the "
    "model was not called); `degraded`: the query could not be embedded in time, so the "
    "answer is full-text only.",
    "org_known": "False for an org that never ingested anything (or was erased).",
    "semantic_off_by": "With `semantic: off`: the flag and the layer that turned it off.",
    "pending_windows": "With `semantic: on`: the org's conversation windows still waiting for "
    "the sweep.",
    "windows_poisoned": "Windows the model refused for good, recorded as poison and skipped.",
    "windows_open": "Windows still open (the conversation may go on), left for a later pass.",
    "events_poisoned": "Stored events skipped unread as poison (time out of range).",
    "partitions_stalled": "Partitions whose model call failed: not advanced, retried next pass.",
    "partitions_busy": "Partitions another sweeper held (skipped by this pass).",
    "partitions_interrupted": "Partitions stopped between batches (shutdown): continued next pass.",
    "position": "The last event the sweep consumed in this partition; null: none yet.",
    "seen_seq": "The highest ingest sequence number the sweep has seen in this partition.",
    "late_catch_up": "A catch-up of events that arrived after the sweep had passed their time; "
    "null when none is running.",
    "horizon_seq": "The ingest sequence number the catch-up reads up to.",
    "watermark": "How far the sweep got in this partition.",
    "lag": "What waits for the sweep in this partition.",
    "oldest_closed_window_age_seconds": "How long the oldest window that is ready to embed has "
    "waited, in seconds; null: nothing ready.",
    "first": "The window's first message.",
    "last": "The window's last message.",
    "message_count": "Messages in the window.",
    "stalled": "Whether the partition's last visit stopped on a model failure.",
    "last_stall": "The partition's last stall: its reason and when; null: never stalled.",
    "last_advanced_at": "When the sweep last moved this partition's watermark; null: never.",
    "at": "When it happened. " + _TIME,
    "set": "Whether the global value was set (false: the built-in default applies).",
    "partitions_deleted": "Sweep partitions deleted.",
    "watermarks_closed": "Sweep watermarks closed (their history stays in the event log).",
    "flags_deleted": "The org's flag overrides deleted.",
    "retention_deleted": "Whether the org's own retention setting was deleted.",
    "embeddings_deleted": "Embeddings deleted with the events they covered.",
    "last_embedded_at": "When the sweep last embedded a window of the org; null: never.",
    "last_swept_at": "When the sweep last visited one of the org's partitions; null: never.",
    "retention": "The org's retention.",
    "sweep": "The org's sweep summary.",
    # Health
    "status": "`ok`, or `unavailable` when the database does not answer (then 503).",
    "database": "`ok`, or why the database is unavailable.",
    "contexts": "Per context (`policy`, `history`): its model's status, projector or sweep "
    "state, and the last sweep pass and purge with their outcome.",
    # Audit
    "entries": "The audit entries of this page, newest first.",
    "id": "The entry's id (its position in the audit log).",
    "actor": "Who made the change: the API key's id and name (`cli` for the command line).",
    "action": "What was done (`api_key.created`, `retention.set`, `org.erased`, ...).",
    "target": "What the change was made to (a key id, a flag, a policy id).",
    "before": "The state before the change; null when it created something.",
    "after": "The state after the change; null when it deleted something.",
    # Keys
    "keys": "The keys the caller may see (its own org's, or all for an every-org admin).",
    "expires_at": f"When the key stops working (at most {MAX_KEY_LIFETIME_DAYS} days ahead); "
    "null: never.",
    "expires_in_days": "The same as a number of days from now; not together with `expires_at`.",
    # Errors
    "error": "What went wrong.",
    "message": "A sentence for a person; do not parse it (use `code` and `details`).",
}

BY_PLACE: dict[str, str] = {
    "IngestBody.events": f"The chat events: 1 to {MAX_EVENTS_PER_REQUEST}, stored all or nothing.",
    "LagBody.events": "Embeddable messages not yet consumed by the sweep (late ones included).",
    "ChatEventBody.text": f"The message's text: up to {MAX_MESSAGE_CHARS:,} characters, may be "
    "empty.",
    "ChatEventBody.event_id": "An idempotency key, unique per org: 1-200 characters, no control "
    "characters. Omitted: derived from the event's content, so a retried request is "
    "idempotent too.",
    "EraseBody.event_ids": "Erase these events (by `event_id`); or give `sender` instead.",
    "EraseBody.sender": "Erase every event this sender sent; or give `event_ids` instead.",
    "SweepBody.org_id": "Limit the pass to this org; omitted: every org.",
    "FlagSourceBody.default": "Whether the flag's value at that layer is the built-in default "
    "(nobody set it).",
    "GlobalFlagBody.default": "The flag's built-in default value.",
    "GlobalFlagBody.enabled": "The master switch: true when the state is `on` or `opt_in`.",
    "GlobalFlagBody.state": "`off`: off for every org. `on`: on for every org that did not "
    "turn it off. `opt_in`: on only for the orgs that turned it on (docs/adr/0131).",
    "GlobalFlagSetBody.enabled": "true sets the state `on`, false `off`; or give `state`.",
    "GlobalFlagSetBody.state": "The new state (`off`, `on` or `opt_in`); or give `enabled`.",
    "OrgFlagBody.global_state": "The global state (`off`, `on`, `opt_in`): under `opt_in` an "
    "org without its own value does not have the flag.",
    "OrgFlagEntryBody.global_state": "The global state (`off`, `on`, `opt_in`): under `opt_in` "
    "an org without its own value does not have the flag.",
    "RetentionBodyOut.default": "True when the org has no setting of its own (the default "
    "applies).",
    "OrgFlagBody.global": "The global value.",
    "OrgFlagEntryBody.global": "The global value.",
    "AuditActorBody.key_id": "The key that made the change (`cli` for the command line).",
    "AuditActorBody.name": "The key's name, or the OS user at the command line.",
    "NewKeyBody.name": "A name for the key, for people (`prometheus`, `ingest bot`).",
    "NewKeyBody.org_id": "The one org the key may act on; omitted or null: every org (only an "
    "every-org admin may create such a key).",
    "PoisonEventBody.occurred_at": "The stored time the sweep could not read, as stored.",
    "StallBody.reason": "Why the partition stalled (`model_unavailable`, ...).",
    "PartitionStatusBody.model": "The model this partition embeds with.",
    "StoreBody.content": "The policy's text: not blank, no NUL, at most "
    "MEMORY_POLICY_MAX_CONTENT_CHARS characters (20,000 by default); stored exactly as given.",
    "UpdateBody.content": "The new version's text, by the same rules as when stored.",
    "StoreBody.metadata": "Optional metadata (shape: PolicyMetadata).",
    "UpdateBody.metadata": "The new version's metadata; omitted: the current one is kept.",
    "SearchBody.query": "The text to search for: not blank, at most 4,096 characters; it is "
    "embedded and never stored or logged.",
    "SearchBody.limit": "Results per page: 1 to 200 (default 50).",
    "OrgSummaryBody.partitions": "The org's sweep partitions.",
    "SweepReportBody.partitions": "Partitions the pass visited.",
    "SweepStatusBody.partitions": "Each of the org's partitions for the active model.",
    "SweepStatusBody.model": "The active history model.",
    "HistorySearchBody.model": "The history model that embedded the query (absent when "
    "`semantic` is `off`).",
    "OrgDirectoryBody.orgs": "The orgs of this page, by `org_id`.",
    "PurgeBody.orgs": "Orgs the purge visited.",
    "PolicySearchBody.min_relevance": "The least relevance the request asked for (absent when "
    "it gave none).",
    "listOrgs.prefix": "Only orgs whose id starts with this.",
    "listOrgs.limit": "Orgs per page.",
    "listPolicies.source": "Only policies with this metadata `source`.",
    "listPolicies.tag": "Only policies with this tag.",
    "listPolicies.updated_since": "Only policies whose current version was recorded at or "
    "after this instant. " + _TIME,
    "listPolicies.limit": "Policies per page: 1 to 200.",
    "searchHistory.q": "The text to search for: 1 to 4,096 characters; never stored or logged.",
    "searchHistory.limit": "The most hits to return.",
    "searchHistory.provider": "Only messages from this provider.",
    "searchHistory.channel_id": "Only messages from this channel.",
    "getPolicyByEmbedding.origin": "`direct` (default): just the policy; `search`: also its "
    "similarity to `query`.",
    "getPolicyByEmbedding.query": "With `origin=search` (and only then): the text to compare "
    "the policy with.",
    "auditLog.org_id": "Only changes to this org.",
    "auditLog.limit": "Entries per page.",
    "auditLog.cursor": "The `next_cursor` of the previous page.",
    "revokeApiKey.key_id": "The key to revoke (`admin-token` is configuration: 409).",
}


def describe(place: str, name: str) -> str | None:
    """The description of field or parameter `name` of `place` (a model name or an
    operationId), or None when the glossary has none."""
    return BY_PLACE.get(f"{place}.{name}", FIELDS.get(name))
