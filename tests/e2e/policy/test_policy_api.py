"""The four jobs over HTTP, their error contract, health and metrics."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.anyio

POLICY = {
    "policy_id": "travel-eu",
    "content": "Business travel inside the EU must be approved by a line manager in advance.",
    "metadata": {"title": "EU travel", "source": "finance", "tags": ["travel"], "level": 2},
}


def error_of(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}
    return dict(body["error"])


def fields_of(response: httpx.Response) -> set[str]:
    assert response.status_code == 422, response.text
    error = error_of(response)
    assert error["code"] == "validation_error"
    return {f["field"] for f in error["details"]["fields"]}


async def test_store_update_versions_search_and_get(policy_app: Any) -> None:
    async with policy_app() as client:
        stored = await client.post("/v1/policies", json=POLICY)
        assert stored.status_code == 201, stored.text
        receipt = stored.json()
        assert set(receipt) == {
            "policy_id",
            "embedding_ref",
            "version",
            "model",
            "dimensions",
            "stored_at",
            "searchable",
            "namespace",
        }
        assert receipt["policy_id"] == "travel-eu"
        assert receipt["namespace"] == "global"  # the admin token's home
        assert (receipt["version"], receipt["model"], receipt["dimensions"]) == (1, "hash:384", 384)
        assert receipt["searchable"] is True
        ref = receipt["embedding_ref"]
        assert stored.headers["location"] == f"/v1/embeddings/{ref}"

        found = await client.post(
            "/v1/policies/search",
            json={"query": "approved business travel in the EU", "similarity_threshold": 0.3},
        )
        assert found.status_code == 200, found.text
        body = found.json()
        assert body["model"] == "hash:384"
        assert body["next_cursor"] is None
        (hit,) = body["results"]
        assert set(hit) == {
            "embedding_ref",
            "policy_id",
            "version",
            "similarity",
            "title",
            "source",
            "tags",
            "metadata",
            "timestamp",
            "namespace",
        }
        assert (hit["embedding_ref"], hit["policy_id"], hit["version"]) == (ref, "travel-eu", 1)
        assert (hit["title"], hit["source"], hit["tags"]) == ("EU travel", "finance", ["travel"])
        assert hit["metadata"] == POLICY["metadata"]
        assert 0.3 <= hit["similarity"] <= 1.0
        assert "embed;dur=" in found.headers["server-timing"]

        updated = await client.put(
            "/v1/policies/travel-eu",
            json={"content": "All business travel needs approval from a line manager."},
        )
        assert updated.status_code == 200, updated.text
        assert updated.json()["version"] == 2
        assert updated.json()["embedding_ref"] == ref
        assert updated.json()["stored_at"] > receipt["stored_at"]

        relabelled = await client.put(
            "/v1/policies/travel-eu",
            json={
                "content": "All business travel needs approval from a line manager.",
                "metadata": {"title": "Travel approval", "source": "finance"},
            },
        )
        assert relabelled.json()["version"] == 3

        versions = await client.get("/v1/policies/travel-eu/versions")
        assert versions.status_code == 200
        history = versions.json()
        assert history["policy_id"] == "travel-eu"
        assert [v["version"] for v in history["versions"]] == [1, 2, 3]
        assert set(history["versions"][0]) >= {
            "version",
            "embedding_ref",
            "model",
            "content_sha256",
            "metadata",
            "recorded_at",
        }
        v1, v2, v3 = history["versions"]
        assert v1["content_sha256"] != v2["content_sha256"] == v3["content_sha256"]
        assert v3["metadata"] == {"title": "Travel approval", "source": "finance"}
        assert v2["metadata"] == POLICY["metadata"]

        direct = await client.get(f"/v1/embeddings/{ref}", params={"origin": "direct"})
        assert direct.status_code == 200
        document = direct.json()
        assert set(document) == {
            "embedding_ref",
            "policy_id",
            "version",
            "title",
            "content",
            "source",
            "timestamp",
            "metadata",
            "namespace",
        }
        assert document["content"] == "All business travel needs approval from a line manager."
        assert (document["version"], document["title"]) == (3, "Travel approval")
        assert document["timestamp"] == relabelled.json()["stored_at"]

        searched = await client.get(
            f"/v1/embeddings/{ref}",
            params={"origin": "search", "query": "All business travel needs approval"},
        )
        assert searched.status_code == 200
        assert 0.5 < searched.json()["similarity"] <= 1.0


async def test_cursor_and_offset_pagination(policy_app: Any) -> None:
    async with policy_app() as client:
        for i in range(7):
            response = await client.post(
                "/v1/policies",
                json={"policy_id": f"p{i}", "content": f"shared words policy {'x' * i}"},
            )
            assert response.status_code == 201
        query = {"query": "shared words policy", "similarity_threshold": 0.1, "limit": 3}
        everything = await client.post("/v1/policies/search", json={**query, "limit": 200})
        expected = [r["policy_id"] for r in everything.json()["results"]]
        assert len(expected) == 7
        walked, cursor = [], None
        while True:
            page = await client.post(
                "/v1/policies/search", json={**query, **({"cursor": cursor} if cursor else {})}
            )
            assert page.status_code == 200
            walked += [r["policy_id"] for r in page.json()["results"]]
            cursor = page.json()["next_cursor"]
            if cursor is None:
                break
        assert walked == expected
        second = await client.post("/v1/policies/search", json={**query, "offset": 3})
        assert [r["policy_id"] for r in second.json()["results"]] == expected[3:6]
        capped = await client.post("/v1/policies/search", json={**query, "max_results": 2})
        assert len(capped.json()["results"]) == 2


async def test_filters_over_http(policy_app: Any) -> None:
    async with policy_app() as client:
        for i, source in enumerate(["hr", "it", "hr"]):
            await client.post(
                "/v1/policies",
                json={
                    "policy_id": f"f{i}",
                    "content": f"laptop policy number {i}",
                    "metadata": {"source": source, "tags": [f"t{i}"], "region": "eu"},
                },
            )
        search = {"query": "laptop policy", "similarity_threshold": 0.1}
        by_source = await client.post(
            "/v1/policies/search", json={**search, "filter": {"source": "hr"}}
        )
        assert sorted(r["policy_id"] for r in by_source.json()["results"]) == ["f0", "f2"]
        by_tags = await client.post(
            "/v1/policies/search",
            json={
                **search,
                "filter": {"tags": {"any": ["t1", "t2"]}, "metadata": {"region": "eu"}},
            },
        )
        assert sorted(r["policy_id"] for r in by_tags.json()["results"]) == ["f1", "f2"]
        soon = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
        future = await client.post(
            "/v1/policies/search", json={**search, "filter": {"timestamp": {"gte": soon}}}
        )
        assert future.json()["results"] == []
        # Past the accepted range (MEMORY_MAX_FUTURE_SKEW, ADR 0041): refused, not empty.
        for bound in ("2999-01-01T00:00:00Z", "9999-12-31T23:59:59-14:00"):
            refused = await client.post(
                "/v1/policies/search", json={**search, "filter": {"timestamp": {"lt": bound}}}
            )
            assert fields_of(refused) == {"filter.timestamp.lt"}
        early = await client.post(
            "/v1/policies/search",
            json={**search, "filter": {"timestamp": {"gte": "0001-01-01T00:00:00+14:00"}}},
        )
        assert fields_of(early) == {"filter.timestamp.gte"}


async def test_conflict_and_not_found(policy_app: Any) -> None:
    async with policy_app() as client:
        assert (await client.post("/v1/policies", json=POLICY)).status_code == 201
        again = await client.post("/v1/policies", json={**POLICY, "content": "different"})
        assert again.status_code == 409
        assert error_of(again)["code"] == "conflict"
        history = await client.get("/v1/policies/travel-eu/versions")
        assert len(history.json()["versions"]) == 1

        missing = await client.put("/v1/policies/nope", json={"content": "x"})
        assert missing.status_code == 404
        assert error_of(missing)["code"] == "not_found"
        assert (await client.get("/v1/policies/nope/versions")).status_code == 404
        unknown_ref = "00000000-0000-0000-0000-000000000000"
        assert (await client.get(f"/v1/embeddings/{unknown_ref}")).status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "/v1/policies", {"policy_id": "p", "content": ""}, "content"),
        ("POST", "/v1/policies", {"policy_id": "p", "content": "x" * 101}, "content"),
        ("POST", "/v1/policies", {"policy_id": "bad id!", "content": "x"}, "policy_id"),
        ("POST", "/v1/policies", {"policy_id": "p", "content": 5}, "content"),
        ("POST", "/v1/policies", {"policy_id": "p"}, "content"),
        ("POST", "/v1/policies", {"policy_id": "p", "content": "x", "extra": 1}, "extra"),
        ("POST", "/v1/policies", {"policy_id": "p", "content": "x", "metadata": []}, "metadata"),
        (
            "POST",
            "/v1/policies",
            {"policy_id": "p", "content": "x", "metadata": {"tags": [1]}},
            "metadata.tags.0",
        ),
        ("PUT", "/v1/policies/p", {"content": ""}, "content"),
        ("PUT", "/v1/policies/bad%20id", {"content": "x"}, "policy_id"),
        ("POST", "/v1/policies/search", {"query": ""}, "query"),
        (
            "POST",
            "/v1/policies/search",
            {"query": "q", "similarity_threshold": 1.5},
            "similarity_threshold",
        ),
        (
            "POST",
            "/v1/policies/search",
            {"query": "q", "similarity_threshold": "0.5"},
            "similarity_threshold",
        ),
        ("POST", "/v1/policies/search", {"query": "q", "min_relevance": -1}, "min_relevance"),
        ("POST", "/v1/policies/search", {"query": "q", "min_relevance": 10.5}, "min_relevance"),
        ("POST", "/v1/policies/search", {"query": "q", "min_relevance": "2"}, "min_relevance"),
        ("POST", "/v1/policies/search", {"query": "q", "min_relevance": True}, "min_relevance"),
        ("POST", "/v1/policies/search", {"query": "q", "limit": 201}, "limit"),
        ("POST", "/v1/policies/search", {"query": "q", "limit": 5.5}, "limit"),
        (
            "POST",
            "/v1/policies/search",
            {"query": "q", "similarity_threshold": True},
            "similarity_threshold",
        ),
        ("POST", "/v1/policies/search", {"query": "q", "limit": 0}, "limit"),
        (
            "POST",
            "/v1/policies/search",
            {"query": "q", "limit": 10, "max_results": 11},
            "max_results",
        ),
        ("POST", "/v1/policies/search", {"query": "q", "offset": -1}, "offset"),
        ("POST", "/v1/policies/search", {"query": "q", "offset": 0, "cursor": "abc"}, "cursor"),
        ("POST", "/v1/policies/search", {"query": "q", "cursor": "not-a-cursor"}, "cursor"),
        ("POST", "/v1/policies/search", {"query": "q", "filter": {"color": "red"}}, "filter.color"),
        ("POST", "/v1/policies/search", {"query": "q", "filter": {"tags": ["a"]}}, "filter.tags"),
        ("GET", "/v1/embeddings/not-a-uuid", None, "embedding_ref"),
        ("GET", "/v1/embeddings/00000000-0000-0000-0000-000000000000?origin=search", None, "query"),
        ("GET", "/v1/embeddings/00000000-0000-0000-0000-000000000000?origin=other", None, "origin"),
    ],
)
async def test_bad_input_is_422_naming_the_field_and_changes_nothing(
    policy_app: Any, method: str, path: str, body: Any, field: str, fake_model: Any
) -> None:
    async with policy_app(policy_max_content_chars=100) as client:
        response = await client.request(method, path, json=body)
        assert field in fields_of(response)
        assert fake_model.embedded == 0
        assert (await client.get("/v1/policies/p/versions")).status_code == 404


async def test_content_beyond_the_documented_maximum_is_422_naming_content(
    policy_app: Any, fake_model: Any
) -> None:
    """The default limit (20,000 characters, docs/policy.md) bounds how long one store
    embeds with the local model (ADR 0043)."""
    async with policy_app() as client:
        too_long = await client.post("/v1/policies", json={**POLICY, "content": "a" * 20_001})
        assert fields_of(too_long) == {"content"}
        reason = error_of(too_long)["details"]["fields"][0]["reason"]
        assert "at most 20000 characters" in reason
        assert fake_model.embedded == 0
        at_limit = await client.post("/v1/policies", json={**POLICY, "content": "a" * 20_000})
        assert at_limit.status_code == 201


async def test_malformed_json_is_422(policy_app: Any) -> None:
    async with policy_app() as client:
        response = await client.post(
            "/v1/policies", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert fields_of(response) == {"body"}


async def test_model_unavailable_is_503_with_retry_after_and_writes_nothing(
    policy_app: Any, fake_model: Any
) -> None:
    async with policy_app() as client:
        assert (await client.post("/v1/policies", json=POLICY)).status_code == 201
        fake_model.down = True
        stored = await client.post("/v1/policies", json={**POLICY, "policy_id": "other"})
        assert stored.status_code == 503
        assert stored.headers["retry-after"].isdigit()
        assert error_of(stored)["code"] == "model_unavailable"
        updated = await client.put("/v1/policies/travel-eu", json={"content": "new words"})
        assert updated.status_code == 503
        searched = await client.post("/v1/policies/search", json={"query": "travel"})
        assert searched.status_code == 503
        health = await client.get("/healthz")
        assert health.status_code == 200
        assert health.json()["contexts"]["policy"]["model"]["available"] is False
        fake_model.down = False
        assert (await client.get("/v1/policies/other/versions")).status_code == 404
        versions = await client.get("/v1/policies/travel-eu/versions")
        assert len(versions.json()["versions"]) == 1


async def test_a_slow_model_makes_search_answer_504_timeout(
    policy_app: Any, fake_model: Any
) -> None:
    async with policy_app(search_timeout=0.2) as client:
        fake_model.query_delay = 1.0
        response = await client.post("/v1/policies/search", json={"query": "anything"})
        assert response.status_code == 504
        assert error_of(response)["code"] == "timeout"
        lookup = await client.get(
            "/v1/embeddings/00000000-0000-0000-0000-000000000000",
            params={"origin": "search", "query": "q"},
        )
        assert lookup.status_code == 504


async def test_health_and_metrics_report_the_policy_context(policy_app: Any) -> None:
    async with policy_app() as client:
        await client.post("/v1/policies", json=POLICY)
        await client.post("/v1/policies/search", json={"query": "travel"})
        health = (await client.get("/healthz")).json()["contexts"]["policy"]
        assert health["model"] == {
            "id": "hash:384",
            "dimensions": 384,
            "available": True,
            "detail": "",
        }
        assert health["projector"]["running_here"] is True
        assert health["projector"]["role"] == "leader"
        assert health["projector"]["position"] == health["projector"]["head"] == 1
        assert health["projector"]["lag_events"] == 0
        metrics = (await client.get("/metrics")).text
        assert 'memory_policy_commands_total{command="store",outcome="ok"}' in metrics
        assert 'memory_policy_searches_total{outcome="ok"}' in metrics
        assert "memory_policy_search_seconds_bucket" in metrics
        assert "memory_policy_projector_lag_events" in metrics


async def test_a_policy_may_be_called_search(policy_app: Any) -> None:
    async with policy_app() as client:
        stored = await client.post("/v1/policies", json={"policy_id": "search", "content": "a"})
        assert stored.status_code == 201
        updated = await client.put("/v1/policies/search", json={"content": "b"})
        assert (updated.status_code, updated.json()["version"]) == (200, 2)
        versions = await client.get("/v1/policies/search/versions")
        assert len(versions.json()["versions"]) == 2


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "/v1/policies", {**POLICY, "content": "text \ud800"}, "content"),
        ("POST", "/v1/policies", {**POLICY, "policy_id": "\udfff"}, "policy_id"),
        (
            "POST",
            "/v1/policies",
            {**POLICY, "metadata": {"title": "t\ud800"}},
            "metadata.title",
        ),
        ("POST", "/v1/policies", {**POLICY, "metadata": {"tags": ["\ud800"]}}, "metadata.tags.0"),
        ("POST", "/v1/policies", {**POLICY, "metadata": {"\ud800": 1}}, "metadata.\\ud800"),
        ("POST", "/v1/policies", {**POLICY, "metadata": {"note": "a\x00b"}}, "metadata.note"),
        ("PUT", "/v1/policies/travel-eu", {"content": "x\ud800"}, "content"),
        ("POST", "/v1/policies/search", {"query": "\ud800"}, "query"),
        ("POST", "/v1/policies/search", {"query": "q", "cursor": "\ud800"}, "cursor"),
        (
            "POST",
            "/v1/policies/search",
            {"query": "q", "filter": {"source": "\ud800"}},
            "filter.source",
        ),
        (
            "POST",
            "/v1/policies/search",
            {"query": "q", "filter": {"metadata": {"k": "\ud800"}}},
            "filter.metadata.k",
        ),
    ],
)
async def test_lone_surrogates_and_nul_are_422_naming_the_field(
    policy_app: Any, method: str, path: str, body: Any, field: str, fake_model: Any
) -> None:
    async with policy_app() as client:
        response = await client.request(
            method,
            path,
            content=json.dumps(body).encode(),  # ASCII-escaped, as a client would send it
            headers={"content-type": "application/json"},
        )
        assert fields_of(response) == {field}
        assert fake_model.embedded == 0


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/policies"),
        ("PUT", "/v1/policies/travel-eu"),
        ("POST", "/v1/policies/search"),
    ],
)
async def test_a_json_integer_of_5000_digits_is_422_naming_the_body(
    policy_app: Any, method: str, path: str
) -> None:
    async with policy_app() as client:
        body = b'{"query": "q", "limit": ' + b"1" * 5000 + b"}"
        response = await client.request(
            method, path, content=body, headers={"content-type": "application/json"}
        )
        assert fields_of(response) == {"body"}


async def test_unsafe_path_segments_are_422_not_500(policy_app: Any) -> None:
    async with policy_app() as client:
        assert fields_of(await client.get("/v1/policies/a%00b/versions")) == {"policy_id"}
        assert fields_of(await client.get("/v1/embeddings/a%00b")) == {"embedding_ref"}
        put = await client.put("/v1/policies/a%00b", json={"content": "x"})
        assert fields_of(put) == {"policy_id"}


async def test_get_list_and_delete_over_http(policy_app: Any) -> None:
    async with policy_app() as client:
        stored = (await client.post("/v1/policies", json=POLICY)).json()
        await client.post("/v1/policies", json={"policy_id": "other", "content": "other text"})

        got = await client.get("/v1/policies/travel-eu")
        assert got.status_code == 200, got.text
        body = got.json()
        assert body["content"] == POLICY["content"]
        assert body["metadata"] == POLICY["metadata"]
        assert (body["version"], body["model"]) == (1, "hash:384")
        assert body["embedding_ref"] == stored["embedding_ref"]
        assert body["stored_at"] == body["updated_at"] == stored["stored_at"]

        page = await client.get("/v1/policies", params={"limit": "1"})
        assert page.status_code == 200, page.text
        assert [p["policy_id"] for p in page.json()["policies"]] == ["other"]
        rest = await client.get(
            "/v1/policies", params={"limit": "1", "cursor": page.json()["next_cursor"]}
        )
        assert [p["policy_id"] for p in rest.json()["policies"]] == ["travel-eu"]
        assert rest.json()["next_cursor"] is None
        tagged = await client.get("/v1/policies", params={"tag": "travel", "source": "finance"})
        assert [p["policy_id"] for p in tagged.json()["policies"]] == ["travel-eu"]
        assert fields_of(await client.get("/v1/policies", params={"limit": "ten"})) == {"limit"}
        assert fields_of(await client.get("/v1/policies", params={"updated_since": "1"})) == {
            "updated_since"
        }

        deleted = await client.delete("/v1/policies/travel-eu")
        assert (deleted.status_code, deleted.content) == (204, b"")
        assert error_of(await client.get("/v1/policies/travel-eu"))["code"] == "not_found"
        gone = await client.get(f"/v1/embeddings/{stored['embedding_ref']}")
        assert (gone.status_code, error_of(gone)["code"]) == (404, "not_found")
        assert (await client.delete("/v1/policies/travel-eu")).status_code == 404
        versions = (await client.get("/v1/policies/travel-eu/versions")).json()["versions"]
        assert [v["change"] for v in versions] == ["stored", "deleted"]
        found = await client.post(
            "/v1/policies/search", json={"query": POLICY["content"], "similarity_threshold": 0.0}
        )
        assert "travel-eu" not in {r["policy_id"] for r in found.json()["results"]}

        again = await client.post("/v1/policies", json=POLICY)
        assert (again.status_code, again.json()["version"]) == (201, 3)


async def test_a_search_or_listing_with_several_bad_fields_names_every_one(
    policy_app: Any,
) -> None:
    async with policy_app() as client:
        search = await client.post(
            "/v1/policies/search",
            json={
                "query": "   ",
                "similarity_threshold": 1.5,
                "limit": 0,
                "offset": 20_000,
                "filter": {"source": "", "tags": {"any": [1]}, "timestamp": {"gte": "soon"}},
            },
        )
        named = {
            "query",
            "similarity_threshold",
            "limit",
            "offset",
            "filter.tags.any.0",
            "filter.timestamp.gte",
        }
        assert fields_of(search) == named
        assert all(f"{field}: " in error_of(search)["message"] for field in named)

        future = (datetime.now(UTC) + timedelta(days=2)).isoformat()
        listing = await client.get(
            "/v1/policies",
            params={"limit": "0", "source": " ", "tag": "", "updated_since": future, "cursor": ""},
        )
        assert fields_of(listing) == {"limit", "source", "tag", "updated_since", "cursor"}


async def test_a_store_with_several_bad_fields_names_every_one(policy_app: Any) -> None:
    async with policy_app() as client:
        stored = await client.post(
            "/v1/policies",
            json={"policy_id": "", "content": "   ", "metadata": {"title": 5, "tags": "x"}},
        )
        assert fields_of(stored) == {"policy_id", "content", "metadata.title", "metadata.tags"}
        assert (await client.get("/v1/policies")).json()["policies"] == []


async def test_type_errors_and_rule_errors_are_named_in_one_422_and_change_nothing(
    policy_app: Any,
) -> None:
    """A field of the wrong type no longer hides the rules the other fields break."""
    async with policy_app() as client:
        stored = await client.post(
            "/v1/policies",
            json={"policy_id": "bad id!", "content": 5, "metadata": {"tags": "x"}},
        )
        assert fields_of(stored) == {"policy_id", "content", "metadata.tags"}
        assert (await client.get("/v1/policies")).json()["policies"] == []

        assert (await client.post("/v1/policies", json=POLICY)).status_code == 201
        updated = await client.put(
            "/v1/policies/travel-eu", json={"content": ["no"], "metadata": {"title": 7}}
        )
        assert fields_of(updated) == {"content", "metadata.title"}
        badly_named = await client.put("/v1/policies/bad id!", json={"content": 5})
        assert fields_of(badly_named) == {"policy_id", "content"}
        assert (await client.get("/v1/policies/travel-eu/versions")).json()["versions"][-1][
            "version"
        ] == 1

        search = await client.post(
            "/v1/policies/search",
            json={
                "query": "travel",
                "limit": "10",
                "similarity_threshold": 5,
                "filter": {"colour": "red"},
            },
        )
        assert fields_of(search) == {"limit", "similarity_threshold", "filter.colour"}
        message = error_of(search)["message"]
        assert "limit: Input should be a valid integer" in message
        assert "similarity_threshold: must be a number between 0 and 1, got 5" in message

        future = (datetime.now(UTC) + timedelta(days=2)).isoformat()
        listing = await client.get(
            "/v1/policies", params={"limit": "ten", "tag": "", "updated_since": future}
        )
        assert fields_of(listing) == {"limit", "tag", "updated_since"}
