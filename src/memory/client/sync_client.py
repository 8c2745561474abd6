"""`MemoryClient`: the service's HTTP API, typed, blocking (httpx)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, TypeVar, Unpack

import httpx
from pydantic import BaseModel

from memory.client import calls
from memory.client.base import (
    DEFAULT_TIMEOUT,
    headers,
    prepare,
    request_args,
    result,
    retry_wait,
    transport_failure,
)
from memory.client.calls import Call
from memory.client.retry import RetryPolicy
from memory.contract import responses as s
from memory.contract.history_requests import ChatEventBody
from memory.contract.policy_requests import SearchOptions

M = TypeVar("M", bound=BaseModel)


class MemoryClient:
    """One client per service; safe to share between threads (httpx's pool).

        with MemoryClient("http://127.0.0.1:8080", api_key=key) as memory:
            memory.store_policy("pw", "Reset passwords every 90 days.")
            for hit in memory.iter_search_policies("password rotation"):
                ...

    Errors are `memory.client.errors` classes carrying the service's code; 429 and 503
    are retried as `retry` says (honouring `Retry-After`), as are connection failures.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url, headers=headers(api_key), timeout=timeout, transport=transport
        )
        self._retry = retry or RetryPolicy()
        self._sleep = sleep

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # Policy memory --------------------------------------------------------------------

    def store_policy(
        self,
        policy_id: str,
        content: str,
        metadata: Mapping[str, Any] | None = None,
        *,
        namespace: str | None = None,
    ) -> s.StoreReceiptBody:
        return self._one(lambda: calls.store_policy(policy_id, content, metadata, namespace))

    def update_policy(
        self,
        policy_id: str,
        content: str,
        metadata: Mapping[str, Any] | None = None,
        *,
        namespace: str | None = None,
    ) -> s.StoreReceiptBody:
        return self._one(lambda: calls.update_policy(policy_id, content, metadata, namespace))

    def get_policy(self, policy_id: str, *, namespace: str | None = None) -> s.StoredPolicyBody:
        return self._one(lambda: calls.get_policy(policy_id, namespace))

    def delete_policy(self, policy_id: str, *, namespace: str | None = None) -> None:
        self._run(prepare(lambda: calls.delete_policy(policy_id, namespace)))

    def list_policies(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        source: str | None = None,
        tag: str | None = None,
        updated_since: datetime | None = None,
        namespace: str | None = None,
    ) -> s.PolicyPageBody:
        return self._one(
            lambda: calls.list_policies(
                limit=limit,
                cursor=cursor,
                source=source,
                tag=tag,
                updated_since=updated_since,
                namespace=namespace,
            )
        )

    def iter_policies(
        self,
        *,
        page_size: int | None = None,
        source: str | None = None,
        tag: str | None = None,
        updated_since: datetime | None = None,
        namespace: str | None = None,
    ) -> Iterator[s.StoredPolicyBody]:
        """Every listed policy, newest first, fetching page after page by cursor."""
        cursor: str | None = None
        while True:
            page = self.list_policies(
                limit=page_size,
                cursor=cursor,
                source=source,
                tag=tag,
                updated_since=updated_since,
                namespace=namespace,
            )
            yield from page.policies
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def policy_versions(
        self, policy_id: str, *, namespace: str | None = None
    ) -> s.PolicyVersionsBody:
        return self._one(lambda: calls.policy_versions(policy_id, namespace))

    def search_policies(
        self,
        query: str,
        *,
        namespace: str | None = None,
        **options: Unpack[SearchOptions],
    ) -> s.PolicySearchBody:
        """One page of a search: `options` are `SearchBody`'s (`similarity_threshold` or
        `min_relevance`, `limit`, `offset` or `cursor`, `max_results`, `filter`)."""
        return self._one(lambda: calls.search_policies(query, namespace, options))

    def iter_search_policies(
        self,
        query: str,
        *,
        similarity_threshold: float | None = None,
        min_relevance: float | None = None,
        page_size: int | None = None,
        filter: Mapping[str, Any] | None = None,
        namespace: str | None = None,
    ) -> Iterator[s.SearchResultBody]:
        """Every result of a search, best first, walking its pages by cursor."""
        cursor: str | None = None
        while True:
            page = self.search_policies(
                query,
                similarity_threshold=similarity_threshold,
                min_relevance=min_relevance,
                limit=page_size,
                cursor=cursor,
                filter=filter,
                namespace=namespace,
            )
            yield from page.results
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def get_by_embedding(
        self,
        embedding_ref: str,
        *,
        origin: Literal["direct", "search"] = "direct",
        query: str | None = None,
        namespace: str | None = None,
    ) -> s.PolicyDocumentBody:
        return self._one(
            lambda: calls.get_by_embedding(
                embedding_ref, origin=origin, query=query, namespace=namespace
            )
        )

    # History search -------------------------------------------------------------------

    def ingest(
        self, org_id: str, events: Sequence[ChatEventBody | Mapping[str, Any]]
    ) -> s.IngestReceiptBody:
        return self._one(lambda: calls.ingest(org_id, events))

    def erase_events(
        self, org_id: str, *, event_ids: Sequence[str] | None = None, sender: str | None = None
    ) -> s.ErasureBody:
        return self._one(lambda: calls.erase_events(org_id, event_ids=event_ids, sender=sender))

    def erase_org(self, org_id: str) -> s.OrgErasureBody:
        return self._one(lambda: calls.erase_org(org_id))

    def search_history(
        self,
        org_id: str,
        q: str,
        *,
        limit: int | None = None,
        provider: str | None = None,
        channel_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        min_relevance: float | None = None,
    ) -> s.HistorySearchBody:
        return self._one(
            lambda: calls.search_history(
                org_id,
                q,
                limit=limit,
                provider=provider,
                channel_id=channel_id,
                since=since,
                until=until,
                min_relevance=min_relevance,
            )
        )

    def sweep(self, org_id: str | None = None) -> s.SweepReportBody:
        return self._one(lambda: calls.sweep(org_id))

    def orgs(
        self,
        *,
        limit: int | None = None,
        prefix: str | None = None,
        cursor: str | None = None,
    ) -> s.OrgDirectoryBody:
        """One page of the org directory (a key for one org sees that org only); pass
        `next_cursor` back as `cursor` for the next."""
        return self._one(lambda: calls.orgs(limit=limit, prefix=prefix, cursor=cursor))

    def sweep_status(
        self, org_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> s.SweepStatusBody:
        """The org's totals and one page of its partitions; pass `next_cursor` back as
        `cursor` for the next."""
        return self._one(lambda: calls.sweep_status(org_id, limit=limit, cursor=cursor))

    def search_indexes(self, org_id: str) -> s.OrgSearchIndexesBody:
        """The org's search indexes (one per model that has one): wanted, building with its
        progress, ready, failed or dropping."""
        return self._one(lambda: calls.search_indexes(org_id))

    def activity(self, org_id: str | None = None) -> s.ActivityBody:
        """The last hour a minute at a time (searches, degraded share, sweep lag age and
        windows embedded): the whole service's, or one org's."""
        return self._one(lambda: calls.activity(org_id))

    def global_flags(self) -> s.GlobalFlagsBody:
        return self._one(calls.global_flags)

    def global_flag(self, flag: str) -> s.GlobalFlagBody:
        return self._one(lambda: calls.global_flag(flag))

    def set_global_flag(self, flag: str, state: bool | str) -> s.GlobalFlagBody:
        """`state`: `"off"`, `"on"` or `"opt_in"` (a `memory.api.GlobalState` is one), or
        a bool (`True` is `"on"`). Under `"opt_in"` only the orgs that set the flag `True`
        (`set_org_flag`) have it; every other org, present or future, does not."""
        return self._one(lambda: calls.set_global_flag(flag, state))

    def org_flags(self, org_id: str) -> s.OrgFlagsBody:
        return self._one(lambda: calls.org_flags(org_id))

    def org_flag(self, org_id: str, flag: str) -> s.OrgFlagBody:
        return self._one(lambda: calls.org_flag(org_id, flag))

    def set_org_flag(self, org_id: str, flag: str, enabled: bool | None) -> s.OrgFlagBody:
        """`enabled=None` removes the org's override (it follows the global layer)."""
        return self._one(lambda: calls.set_org_flag(org_id, flag, enabled))

    def retention(self, org_id: str) -> s.RetentionBodyOut:
        return self._one(lambda: calls.retention(org_id))

    def set_retention(self, org_id: str, days: int) -> s.RetentionBodyOut:
        return self._one(lambda: calls.set_retention(org_id, days))

    def purge(self, org_id: str | None = None) -> s.PurgeBody:
        return self._one(lambda: calls.purge(org_id))

    # Access ---------------------------------------------------------------------------

    def create_api_key(
        self,
        name: str,
        scopes: Sequence[str],
        *,
        org_id: str | None = None,
        expires_at: datetime | None = None,
        expires_in_days: int | None = None,
    ) -> s.NewApiKeyBody:
        """A new key; its `secret` is in this answer only. It expires at `expires_at` or
        `expires_in_days` from now (at most a year ahead), or never; an expired key's
        calls raise `KeyExpired`."""
        return self._one(
            lambda: calls.create_api_key(
                name, org_id, scopes, expires_at=expires_at, expires_in_days=expires_in_days
            )
        )

    def api_keys(self, *, created_by: str | None = None) -> s.ApiKeysBody:
        """The keys this client's key may manage; `created_by`: only those that key id
        created, directly or through keys it created."""
        return self._one(lambda: calls.api_keys(created_by=created_by))

    def own_api_key(self) -> s.OwnApiKeyBody:
        """The key this client calls with: its id, name, org, scopes and expiry, and the
        operations it may call (never its secret). Any valid key may ask."""
        return self._one(calls.own_api_key)

    def revoke_api_key(self, key_id: str) -> None:
        self._run(prepare(lambda: calls.revoke_api_key(key_id)))

    def audit(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        org_id: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> s.AuditPageBody:
        return self._one(
            lambda: calls.audit(since=since, until=until, org_id=org_id, limit=limit, cursor=cursor)
        )

    def health(self) -> s.HealthBody:
        """/healthz; a 503 (database down) raises `Unavailable` after the retries."""
        return self._one(calls.health)

    # Execution ------------------------------------------------------------------------

    def _one(self, build: Callable[[], Call[M]]) -> M:
        answer = self._run(prepare(build))
        assert answer is not None
        return answer

    def _run(self, call: Call[M]) -> M | None:
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.request(call.method, call.path, **request_args(call))
            except httpx.TransportError as exc:
                wait = retry_wait(self._retry, attempt, None)
                if wait is None:
                    raise transport_failure(exc) from exc
            else:
                wait = retry_wait(self._retry, attempt, response)
                if wait is None:
                    return result(call, response)
            self._sleep(wait)
