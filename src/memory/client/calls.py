"""Each endpoint as a `Call`: the request (built from the server's own request models, so
a bad argument fails here the way the server would refuse it) and the response model the
answer is parsed into. The sync and async clients only execute calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from memory.contract import access_requests as a
from memory.contract import history_requests as h
from memory.contract import policy_requests as p
from memory.contract import responses as s

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Call(Generic[M]):
    method: str
    path: str
    answer: type[M] | None
    params: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] | None = None

    def parse(self, data: Any) -> M | None:
        return None if self.answer is None else self.answer.model_validate(data)


def _seg(value: str) -> str:
    """A path segment: everything escaped, `/` included."""
    return quote(value, safe="")


def _body(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True, by_alias=True)


def _params(**values: Any) -> dict[str, str]:
    out = {}
    for name, value in values.items():
        if value is None:
            continue
        out[name] = value.isoformat() if isinstance(value, datetime) else str(value)
    return out


# Policy memory -----------------------------------------------------------------------------


def _where(namespace: str | None) -> dict[str, str]:
    """The `namespace` query parameter of every policy call (docs/adr/0102)."""
    return _params(**p.NamespaceQuery(namespace=namespace).model_dump())


def store_policy(
    policy_id: str, content: str, metadata: Mapping[str, Any] | None, namespace: str | None
) -> Call[s.StoreReceiptBody]:
    body = p.StoreBody(
        policy_id=policy_id, content=content, metadata=None if metadata is None else dict(metadata)
    )
    return Call(
        "POST", "/v1/policies", s.StoreReceiptBody, params=_where(namespace), body=_body(body)
    )


def update_policy(
    policy_id: str, content: str, metadata: Mapping[str, Any] | None, namespace: str | None
) -> Call[s.StoreReceiptBody]:
    body = p.UpdateBody(content=content, metadata=None if metadata is None else dict(metadata))
    return Call(
        "PUT",
        f"/v1/policies/{_seg(policy_id)}",
        s.StoreReceiptBody,
        params=_where(namespace),
        body=_body(body),
    )


def get_policy(policy_id: str, namespace: str | None) -> Call[s.StoredPolicyBody]:
    return Call(
        "GET", f"/v1/policies/{_seg(policy_id)}", s.StoredPolicyBody, params=_where(namespace)
    )


def delete_policy(policy_id: str, namespace: str | None) -> Call[BaseModel]:
    return Call("DELETE", f"/v1/policies/{_seg(policy_id)}", None, params=_where(namespace))


def list_policies(
    *,
    limit: int | None,
    cursor: str | None,
    source: str | None,
    tag: str | None,
    updated_since: datetime | None,
    namespace: str | None,
) -> Call[s.PolicyPageBody]:
    params = _params(
        limit=limit,
        cursor=cursor,
        source=source,
        tag=tag,
        updated_since=updated_since,
        namespace=namespace,
    )
    return Call("GET", "/v1/policies", s.PolicyPageBody, params=params)


def policy_versions(policy_id: str, namespace: str | None) -> Call[s.PolicyVersionsBody]:
    return Call(
        "GET",
        f"/v1/policies/{_seg(policy_id)}/versions",
        s.PolicyVersionsBody,
        params=_where(namespace),
    )


def search_policies(
    query: str, namespace: str | None, options: p.SearchOptions
) -> Call[s.PolicySearchBody]:
    search_filter = options.get("filter")
    given: dict[str, Any] = {**options, "query": query}
    if search_filter is not None:
        given["filter"] = dict(search_filter)
    body = p.SearchBody.model_validate(given)
    return Call(
        "POST",
        "/v1/policies/search",
        s.PolicySearchBody,
        params=_where(namespace),
        body=_body(body),
    )


def get_by_embedding(
    embedding_ref: str,
    *,
    origin: Literal["direct", "search"],
    query: str | None,
    namespace: str | None,
) -> Call[s.PolicyDocumentBody]:
    return Call(
        "GET",
        f"/v1/embeddings/{_seg(embedding_ref)}",
        s.PolicyDocumentBody,
        params=_params(origin=origin, query=query, namespace=namespace),
    )


# History search ---------------------------------------------------------------------------


def _org(org_id: str) -> str:
    return f"/v1/orgs/{_seg(org_id)}"


def orgs(*, limit: int | None, prefix: str | None, cursor: str | None) -> Call[s.OrgDirectoryBody]:
    params = _params(limit=limit, prefix=prefix, cursor=cursor)
    return Call("GET", "/v1/orgs", s.OrgDirectoryBody, params=params)


def ingest(
    org_id: str, events: Sequence[h.ChatEventBody | Mapping[str, Any]]
) -> Call[s.IngestReceiptBody]:
    """Events as `ChatEvent` models or plain mappings (a `datetime` is sent as ISO 8601);
    checked together, so that a bad field is named `events.N.field` as the server does."""
    body = h.IngestBody.model_validate({"events": [_event_json(e) for e in events]})
    return Call("POST", f"{_org(org_id)}/chat-events", s.IngestReceiptBody, body=_body(body))


def _event_json(event: h.ChatEventBody | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(event, h.ChatEventBody):
        return event.model_dump(mode="json", exclude_none=True)
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in event.items()}


def erase_events(
    org_id: str, *, event_ids: Sequence[str] | None, sender: str | None
) -> Call[s.ErasureBody]:
    body = h.EraseBody(event_ids=None if event_ids is None else list(event_ids), sender=sender)
    return Call("DELETE", f"{_org(org_id)}/chat-events", s.ErasureBody, body=_body(body))


def erase_org(org_id: str) -> Call[s.OrgErasureBody]:
    return Call("DELETE", _org(org_id), s.OrgErasureBody)


def search_history(
    org_id: str,
    q: str,
    *,
    limit: int | None,
    provider: str | None,
    channel_id: str | None,
    since: datetime | None,
    until: datetime | None,
    min_relevance: float | None = None,
) -> Call[s.HistorySearchBody]:
    params = _params(
        q=q,
        limit=limit,
        provider=provider,
        channel_id=channel_id,
        since=since,
        until=until,
        min_relevance=min_relevance,
    )
    return Call("GET", f"{_org(org_id)}/history/search", s.HistorySearchBody, params=params)


def sweep(org_id: str | None) -> Call[s.SweepReportBody]:
    return Call("POST", "/v1/sweep", s.SweepReportBody, body=_body(h.SweepBody(org_id=org_id)))


def sweep_status(org_id: str, *, limit: int | None, cursor: str | None) -> Call[s.SweepStatusBody]:
    params = _params(limit=limit, cursor=cursor)
    return Call("GET", f"{_org(org_id)}/sweep", s.SweepStatusBody, params=params)


def search_indexes(org_id: str) -> Call[s.OrgSearchIndexesBody]:
    return Call("GET", f"{_org(org_id)}/search-indexes", s.OrgSearchIndexesBody)


def activity(org_id: str | None) -> Call[s.ActivityBody]:
    path = "/v1/activity" if org_id is None else f"{_org(org_id)}/activity"
    return Call("GET", path, s.ActivityBody)


def global_flags() -> Call[s.GlobalFlagsBody]:
    return Call("GET", "/v1/feature-flags", s.GlobalFlagsBody)


def global_flag(flag: str) -> Call[s.GlobalFlagBody]:
    return Call("GET", f"/v1/feature-flags/{_seg(flag)}", s.GlobalFlagBody)


def set_global_flag(flag: str, state: bool | str) -> Call[s.GlobalFlagBody]:
    # A bool is sent as `enabled`, as before `opt_in` existed; a state by name, checked by
    # the service (a 422 names `state`).
    body: dict[str, Any] = {"enabled": state} if isinstance(state, bool) else {"state": state}
    return Call("PUT", f"/v1/feature-flags/{_seg(flag)}", s.GlobalFlagBody, body=body)


def org_flags(org_id: str) -> Call[s.OrgFlagsBody]:
    return Call("GET", f"{_org(org_id)}/feature-flags", s.OrgFlagsBody)


def org_flag(org_id: str, flag: str) -> Call[s.OrgFlagBody]:
    return Call("GET", f"{_org(org_id)}/feature-flags/{_seg(flag)}", s.OrgFlagBody)


def set_org_flag(org_id: str, flag: str, enabled: bool | None) -> Call[s.OrgFlagBody]:
    path = f"{_org(org_id)}/feature-flags/{_seg(flag)}"
    if enabled is None:
        return Call("DELETE", path, s.OrgFlagBody)
    return Call("PUT", path, s.OrgFlagBody, body=_body(h.FlagBody(enabled=enabled)))


def retention(org_id: str) -> Call[s.RetentionBodyOut]:
    return Call("GET", f"{_org(org_id)}/retention", s.RetentionBodyOut)


def set_retention(org_id: str, days: int) -> Call[s.RetentionBodyOut]:
    body = _body(h.RetentionBody(days=days))
    return Call("PUT", f"{_org(org_id)}/retention", s.RetentionBodyOut, body=body)


def purge(org_id: str | None) -> Call[s.PurgeBody]:
    return Call("POST", "/v1/purge", s.PurgeBody, body=_body(h.SweepBody(org_id=org_id)))


# Access -----------------------------------------------------------------------------------


def create_api_key(
    name: str,
    org_id: str | None,
    scopes: Sequence[str],
    *,
    expires_at: datetime | None = None,
    expires_in_days: int | None = None,
) -> Call[s.NewApiKeyBody]:
    body = _body(
        a.NewKeyBody(
            name=name,
            org_id=org_id,
            scopes=list(scopes),
            expires_at=expires_at,
            expires_in_days=expires_in_days,
        )
    )
    return Call("POST", "/v1/api-keys", s.NewApiKeyBody, body=body)


def api_keys(*, created_by: str | None = None) -> Call[s.ApiKeysBody]:
    return Call("GET", "/v1/api-keys", s.ApiKeysBody, params=_params(created_by=created_by))


def own_api_key() -> Call[s.OwnApiKeyBody]:
    return Call("GET", "/v1/api-keys/self", s.OwnApiKeyBody)


def revoke_api_key(key_id: str) -> Call[BaseModel]:
    return Call("DELETE", f"/v1/api-keys/{_seg(key_id)}", None)


def audit(
    *,
    since: datetime | None,
    until: datetime | None,
    org_id: str | None,
    limit: int | None,
    cursor: str | None,
) -> Call[s.AuditPageBody]:
    params = _params(since=since, until=until, org_id=org_id, limit=limit, cursor=cursor)
    return Call("GET", "/v1/audit", s.AuditPageBody, params=params)


def health() -> Call[s.HealthBody]:
    return Call("GET", "/healthz", s.HealthBody)
