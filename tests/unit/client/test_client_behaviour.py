"""The client's own behaviour against a scripted transport (an edge fake): retries with
back-off honouring Retry-After, typed errors with the service's code, bad arguments refused
before sending, cursor pages walked."""

from __future__ import annotations

import json
from collections.abc import Callable

import anyio
import httpx
import pytest

from memory.client import (
    AsyncMemoryClient,
    InvalidRequest,
    MemoryClient,
    NotFound,
    RateLimited,
    RetryPolicy,
    TransportFailed,
    Unavailable,
)
from memory.domain.history.feature_flags import GlobalState

Handler = Callable[[httpx.Request], httpx.Response]
RECEIPT = {
    "policy_id": "p",
    "embedding_ref": "6c1f2f5e-2b0e-4f6e-9d8a-3a7b5c9e2d41",
    "version": 1,
    "model": "hash:384",
    "dimensions": 384,
    "stored_at": "2026-11-30T12:00:00+00:00",
    "searchable": True,
}


def error(status: int, code: str, **headers: str) -> httpx.Response:
    body = {"error": {"code": code, "message": f"{code} happened"}}
    return httpx.Response(status, json=body, headers=headers)


def scripted(*answers: httpx.Response | Exception) -> tuple[Handler, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(answers)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return handle, seen


def client(handler: Handler, sleeps: list[float], **kwargs: object) -> MemoryClient:
    return MemoryClient(
        "http://memory.test",
        api_key="mem_test",
        transport=httpx.MockTransport(handler),
        sleep=sleeps.append,
        **kwargs,  # type: ignore[arg-type]
    )


def test_503_is_retried_after_the_seconds_retry_after_says_then_succeeds() -> None:
    handler, seen = scripted(
        error(503, "model_unavailable", **{"Retry-After": "2"}), httpx.Response(201, json=RECEIPT)
    )
    sleeps: list[float] = []
    receipt = client(handler, sleeps).store_policy("p", "text", {"tags": ["a"]})
    assert receipt.version == 1 and receipt.searchable
    assert sleeps == [2.0]
    assert len(seen) == 2
    assert seen[0].headers["authorization"] == "Bearer mem_test"
    assert json.loads(seen[0].content) == {
        "policy_id": "p",
        "content": "text",
        "metadata": {"tags": ["a"]},
    }


def test_without_retry_after_the_waits_grow_and_the_last_error_is_raised_typed() -> None:
    handler, seen = scripted(*[error(429, "rate_limited") for _ in range(4)])
    sleeps: list[float] = []
    memory = client(handler, sleeps, retry=RetryPolicy(attempts=4, backoff=0.5))
    with pytest.raises(RateLimited) as err:
        memory.get_policy("p")
    assert (err.value.status, err.value.code) == (429, "rate_limited")
    assert len(seen) == 4 and len(sleeps) == 3
    assert 0.5 <= sleeps[0] <= 0.55 and 1.0 <= sleeps[1] <= 1.1 and 2.0 <= sleeps[2] <= 2.2


def test_a_retry_after_beyond_max_wait_ends_the_retries_at_once() -> None:
    handler, seen = scripted(error(503, "database_unavailable", **{"Retry-After": "120"}))
    sleeps: list[float] = []
    with pytest.raises(Unavailable) as err:
        client(handler, sleeps, retry=RetryPolicy(max_wait=10)).health()
    assert (err.value.code, err.value.retry_after, sleeps) == ("database_unavailable", 120, [])
    assert len(seen) == 1


def test_other_errors_are_not_retried_and_carry_code_and_fields() -> None:
    body = {
        "error": {
            "code": "validation_error",
            "message": "invalid",
            "details": {"fields": [{"field": "limit", "reason": "too big"}]},
        }
    }
    handler, seen = scripted(httpx.Response(422, json=body), error(404, "not_found"))
    sleeps: list[float] = []
    memory = client(handler, sleeps)
    with pytest.raises(InvalidRequest) as invalid:
        memory.list_policies(limit=5)
    assert invalid.value.fields == [{"field": "limit", "reason": "too big"}]
    with pytest.raises(NotFound):
        memory.get_policy("p")
    assert sleeps == [] and len(seen) == 2


def test_connection_failures_are_retried_then_reported() -> None:
    handler, seen = scripted(*[httpx.ConnectError("refused") for _ in range(3)])
    sleeps: list[float] = []
    with pytest.raises(TransportFailed) as err:
        client(handler, sleeps).get_policy("p")
    assert err.value.code == "transport_error" and len(seen) == 3 and len(sleeps) == 2


def test_bad_arguments_are_refused_before_anything_is_sent() -> None:
    handler, seen = scripted()
    with pytest.raises(InvalidRequest) as err:
        client(handler, []).ingest("acme", [{"provider": "Bad Provider", "sender": 5}])
    reasons = {f["field"]: f["reason"] for f in err.value.fields}
    assert {"events.0.provider", "events.0.sender"} <= set(reasons)
    assert "^" not in reasons["events.0.provider"]  # the rule in words, as the server says it
    assert seen == []


def test_path_segments_are_escaped() -> None:
    handler, seen = scripted(error(404, "not_found"))
    with pytest.raises(NotFound):
        client(handler, []).get_policy("a/b c")
    assert seen[0].url.raw_path == b"/v1/policies/a%2Fb%20c"


def test_the_async_client_retries_and_walks_search_pages() -> None:
    hit = {
        "embedding_ref": RECEIPT["embedding_ref"],
        "policy_id": "p",
        "version": 1,
        "similarity": 0.9,
        "title": None,
        "source": None,
        "tags": [],
        "metadata": {},
        "timestamp": "2026-11-30T12:00:00+00:00",
    }
    page = {"results": [hit], "model": "hash:384", "similarity_threshold": 0.5}
    handler, seen = scripted(
        error(503, "model_unavailable", **{"Retry-After": "1"}),
        httpx.Response(200, json={**page, "next_cursor": "c1"}),
        httpx.Response(200, json={**page, "next_cursor": None}),
    )
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async def walk() -> list[str]:
        async with AsyncMemoryClient(
            "http://memory.test", transport=httpx.MockTransport(handler), sleep=sleep
        ) as memory:
            return [h.policy_id async for h in memory.iter_search_policies("q", page_size=1)]

    assert anyio.run(walk) == ["p", "p"]
    assert sleeps == [1.0]
    bodies = [json.loads(r.content) for r in seen]
    assert bodies[1] == {"query": "q", "limit": 1}
    assert bodies[2] == {"query": "q", "limit": 1, "cursor": "c1"}


def test_activity_reads_the_service_or_one_orgs_last_hour() -> None:
    minute = {
        "minute": "2026-12-02T03:48:00+00:00",
        "searches": 2,
        "semantic": 2,
        "degraded": 1,
        "degraded_share": 0.5,
        "windows_embedded": 3,
        "lag_age_seconds": 4.5,
    }
    body = {
        "org_id": "acme",
        "now": "2026-12-02T03:48:10+00:00",
        "minutes": [minute],
        "searches": 2,
        "degraded_share": 0.5,
        "windows_embedded": 3,
        "lag_age_seconds": 4.5,
    }
    handler, seen = scripted(httpx.Response(200, json=body), httpx.Response(200, json=body))
    mem = client(handler, [])
    trend = mem.activity("acme")
    assert (trend.minutes[0].degraded_share, trend.lag_age_seconds) == (0.5, 4.5)
    mem.activity()
    assert [r.url.path for r in seen] == ["/v1/orgs/acme/activity", "/v1/activity"]


def test_sweep_status_sends_its_page_and_reads_the_totals() -> None:
    totals = {
        "partitions": 3,
        "messages": 9,
        "partitions_swept": 2,
        "windows_embedded": 4,
        "open_windows": 1,
        "poison_windows": 0,
        "poison_events": 0,
        "partitions_stalled": 0,
        "last_swept_at": None,
        "last_embedded_at": None,
    }
    body = {
        "org_id": "acme",
        "model": "hash:1024",
        "semantic_search": True,
        "totals": totals,
        "waiting": {"partitions": 1, "oldest_age_seconds": 12.5},
        "partitions": [],
        "next_cursor": "c2",
    }
    handler, seen = scripted(httpx.Response(200, json=body))
    status = client(handler, []).sweep_status("acme", limit=2, cursor="c1")
    assert (status.totals.partitions, status.next_cursor) == (3, "c2")
    assert status.waiting.oldest_age_seconds == 12.5
    assert seen[0].url.path == "/v1/orgs/acme/sweep"
    assert dict(seen[0].url.params) == {"limit": "2", "cursor": "c1"}


def test_search_indexes_reads_an_orgs_indexes_with_their_progress() -> None:
    building = {
        "org_id": "acme",
        "model": "hash:1024",
        "state": "building",
        "dimensions": 1024,
        "windows_seen": 6000,
        "requested_at": "2026-12-02T07:00:00+00:00",
        "started_at": "2026-12-02T07:01:00+00:00",
        "ready_at": None,
        "phase": "building index: loading tuples (han, 1 of 3)",
        "tuples_done": 800,
        "tuples_total": None,
        "progress": 0.25,
        "failures": 0,
        "last_error": None,
        "failed_at": None,
    }
    body = {"org_id": "acme", "model": "hash:1024", "indexes": [building]}
    handler, seen = scripted(httpx.Response(200, json=body))
    [index] = client(handler, []).search_indexes("acme").indexes
    assert (index.state, index.progress, index.phase) == ("building", 0.25, building["phase"])
    assert seen[0].url.path == "/v1/orgs/acme/search-indexes"


def test_min_relevance_is_sent_to_both_searches_and_relevance_read_back() -> None:
    hit = {
        "event_id": "m1",
        "provider": "slack",
        "channel_id": "C1",
        "sender": "ali",
        "text": "the forklift broke",
        "occurred_at": "2026-11-30T12:00:00+00:00",
        "matched_by": "semantic",
        "similarity": 0.84,
        "relevance": 3.2,
        "window_id": RECEIPT["embedding_ref"],
    }
    history = {"results": [hit], "semantic": "on", "org_known": True, "model": "hash:1024"}
    policies = {
        "results": [],
        "next_cursor": None,
        "model": "hash:384",
        "similarity_threshold": 0.0,
        "min_relevance": 2.5,
    }
    handler, seen = scripted(httpx.Response(200, json=history), httpx.Response(200, json=policies))
    memory = client(handler, [])
    answer = memory.search_history("acme", "forklift", min_relevance=2.5)
    assert seen[0].url.params["min_relevance"] == "2.5"
    assert answer.results[0].relevance == 3.2
    assert memory.search_policies("forklift", min_relevance=2.5).min_relevance == 2.5
    assert json.loads(seen[1].content)["min_relevance"] == 2.5


def test_a_global_flag_is_set_by_state_name_or_as_before_by_a_bool() -> None:
    answer = {
        "flag": "digital_worker_semantic_search",
        "enabled": True,
        "default": False,
        "set": True,
        "state": "opt_in",
    }
    handler, seen = scripted(*(httpx.Response(200, json=answer) for _ in range(3)))
    with client(handler, []) as memory:
        flag = memory.set_global_flag("digital_worker_semantic_search", "opt_in")
        memory.set_global_flag("digital_worker_semantic_search", GlobalState.OPT_IN)
        memory.set_global_flag("digital_worker_semantic_search", True)
    assert flag.state == GlobalState.OPT_IN
    assert [json.loads(r.content) for r in seen] == [
        {"state": "opt_in"},
        {"state": "opt_in"},
        {"enabled": True},  # the body of before opt_in existed
    ]
    assert {r.method for r in seen} == {"PUT"}
