"""GET /v1/orgs through the real app: the answer's shape, keyset pages, a prefix, and 422s
that name the field."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.anyio

SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"


def fields(response: Any) -> list[str]:
    return [f["field"] for f in response.json()["error"]["details"]["fields"]]


async def test_the_directory_answers_each_org_with_its_summary(history_app, event) -> None:
    async with history_app() as client:
        assert (await client.put(SEMANTIC, json={"enabled": True})).status_code == 200
        ingested = await client.post(
            "/v1/orgs/acme/chat-events",
            json={
                "events": [
                    event("how can I reset my password", minutes_ago=125, event_id="m1"),
                    event("a conversation still going on", minutes_ago=2, event_id="o1"),
                ]
            },
        )
        assert ingested.status_code == 201
        assert (await client.post("/v1/sweep")).status_code == 200
        off = await client.put(
            "/v1/orgs/globex/feature-flags/digital_worker_semantic_search",
            json={"enabled": False},
        )
        assert off.status_code == 200
        assert (await client.put("/v1/orgs/globex/retention", json={"days": 7})).status_code == 200

        response = await client.get("/v1/orgs")
        assert response.status_code == 200
        body = response.json()
        acme, globex = body["orgs"]
        assert body["next_cursor"] is None
        swept = acme["sweep"]
        assert swept["last_embedded_at"] is not None
        assert swept["last_swept_at"] is not None
        # The open conversation waits, but is not due before its 30-minute gap elapses.
        assert swept["max_lag_seconds"] is None
        assert acme == {
            "org_id": "acme",
            "semantic_search": True,
            "semantic_search_by": {
                "flag": "digital_worker_semantic_search",
                "layer": "global",
                "default": False,
            },
            "retention": {"days": 30, "default": True},
            "partitions": 1,
            "messages": 2,
            "sweep": {
                "open_windows": 1,
                "poison_windows": 0,
                "poison_events": 0,
                "max_lag_seconds": swept["max_lag_seconds"],
                "last_embedded_at": swept["last_embedded_at"],
                "last_swept_at": swept["last_swept_at"],
            },
        }
        assert globex == {
            "org_id": "globex",
            "semantic_search": False,
            "semantic_search_by": {
                "flag": "digital_worker_semantic_search",
                "layer": "org",
                "default": False,
            },
            "retention": {"days": 7, "default": False},
            "partitions": 0,
            "messages": 0,
            "sweep": {
                "open_windows": 0,
                "poison_windows": 0,
                "poison_events": 0,
                "max_lag_seconds": None,
                "last_embedded_at": None,
                "last_swept_at": None,
            },
        }


async def test_pages_follow_the_cursor_and_the_prefix(history_app) -> None:
    async with history_app() as client:
        for org in ["t-1", "t-2", "t-3", "u-1"]:
            put = await client.put(f"/v1/orgs/{org}/retention", json={"days": 5})
            assert put.status_code == 200
        seen: list[str] = []
        params: dict[str, str] = {"prefix": "t-", "limit": "2"}
        while True:
            page = (await client.get("/v1/orgs", params=params)).json()
            seen += [o["org_id"] for o in page["orgs"]]
            if page["next_cursor"] is None:
                break
            params["cursor"] = page["next_cursor"]
        assert seen == ["t-1", "t-2", "t-3"]
        moved = await client.get("/v1/orgs", params={"prefix": "u-", "cursor": params["cursor"]})
        assert moved.status_code == 422 and fields(moved) == ["cursor"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "201"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"prefix": "-acme"}, "prefix"),
        ({"prefix": "ac me"}, "prefix"),
        ({"cursor": ""}, "cursor"),
        ({"cursor": "bm90LWEtY3Vyc29y.AAAA"}, "cursor"),
        ({"org": "acme"}, "org"),
    ],
)
async def test_bad_parameters_are_422_naming_the_field(
    history_app, params: dict[str, str], field: str
) -> None:
    async with history_app() as client:
        response = await client.get("/v1/orgs", params=params)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "validation_error"
    assert fields(response) == [field]
