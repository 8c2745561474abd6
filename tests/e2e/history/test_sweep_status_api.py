"""GET /v1/orgs/{org}/sweep through the real app (docs/adr/0093): the org's totals, its
partitions a keyset page at a time, and 422s that name every bad field and change nothing."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.anyio

SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"


def fields(response: Any) -> list[str]:
    return sorted(f["field"] for f in response.json()["error"]["details"]["fields"])


async def test_the_status_pages_partitions_and_answers_the_org_totals(history_app, event) -> None:
    async with history_app() as client:
        assert (await client.put(SEMANTIC, json={"enabled": True})).status_code == 200
        events = [
            event(f"a question about invoices number {i}", channel_id=f"C{i}", event_id=f"m{i}")
            for i in range(5)
        ]
        events.append(event("a conversation still going on", minutes_ago=2, event_id="o1"))
        ingested = await client.post("/v1/orgs/acme/chat-events", json={"events": events})
        assert ingested.status_code == 201
        assert (await client.post("/v1/sweep")).status_code == 200

        seen: list[str] = []
        params: dict[str, str] = {"limit": "2"}
        pages = 0
        while True:
            response = await client.get("/v1/orgs/acme/sweep", params=params)
            assert response.status_code == 200
            body = response.json()
            pages += 1
            assert len(body["partitions"]) <= 2
            seen += [p["channel_id"] for p in body["partitions"]]
            totals = body["totals"]
            if body["next_cursor"] is None:
                break
            params["cursor"] = body["next_cursor"]
        assert (pages, seen) == (3, ["C0", "C1", "C2", "C3", "C4"])
        assert totals == {
            "partitions": 5,
            "messages": 6,
            "partitions_swept": 5,
            "windows_embedded": 5,
            "open_windows": 1,
            "poison_windows": 0,
            "poison_events": 0,
            "partitions_stalled": 0,
            "last_swept_at": totals["last_swept_at"],
            "last_embedded_at": totals["last_embedded_at"],
        }
        assert totals["last_swept_at"] is not None
        # The default page holds them all; the per-partition fields keep their meaning.
        whole = (await client.get("/v1/orgs/acme/sweep")).json()
        assert (len(whole["partitions"]), whole["next_cursor"]) == (5, None)
        c1 = next(p for p in whole["partitions"] if p["channel_id"] == "C1")
        assert (c1["open_windows"], c1["windows_embedded"], c1["lag"]["events"]) == (1, 1, 1)


async def state(client: Any) -> dict[str, Any]:
    """The org's status without the ages that grow with the clock."""
    body = (await client.get("/v1/orgs/acme/sweep")).json()
    for partition in body["partitions"]:
        del partition["lag"]["oldest_closed_window_age_seconds"]
    del body["waiting"]["oldest_age_seconds"]
    return dict(body)


@pytest.mark.parametrize(
    ("path", "params", "bad"),
    [
        ("/v1/orgs/acme/sweep", {"limit": "0"}, ["limit"]),
        ("/v1/orgs/acme/sweep", {"limit": "201"}, ["limit"]),
        ("/v1/orgs/acme/sweep", {"limit": "ten"}, ["limit"]),
        ("/v1/orgs/acme/sweep", {"cursor": ""}, ["cursor"]),
        ("/v1/orgs/acme/sweep", {"cursor": "bm90LWEtY3Vyc29y.AAAA"}, ["cursor"]),
        ("/v1/orgs/acme/sweep", {"cursor": "x" * 600}, ["cursor"]),
        ("/v1/orgs/acme/sweep", {"page": "2"}, ["page"]),
        ("/v1/orgs/ac%20me/sweep", {"limit": "0"}, ["limit", "org_id"]),
    ],
)
async def test_bad_parameters_are_422_naming_every_field(
    history_app, event, path: str, params: dict[str, str], bad: list[str]
) -> None:
    async with history_app() as client:
        ingested = await client.post("/v1/orgs/acme/chat-events", json={"events": [event("hi")]})
        assert ingested.status_code == 201
        before = await state(client)
        response = await client.get(path, params=params)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"] == "validation_error"
        assert fields(response) == bad
        assert await state(client) == before


async def test_a_cursor_of_another_org_or_listing_is_refused(history_app, event) -> None:
    async with history_app() as client:
        two = [event("one", channel_id="C1"), event("two", channel_id="C2")]
        for org in ("acme", "globex"):
            ingested = await client.post(f"/v1/orgs/{org}/chat-events", json={"events": two})
            assert ingested.status_code == 201
        cursor = (await client.get("/v1/orgs/acme/sweep", params={"limit": 1})).json()
        directory = (await client.get("/v1/orgs", params={"limit": 1})).json()
        for org, token in (
            ("globex", cursor["next_cursor"]),
            ("acme", directory["next_cursor"]),
        ):
            response = await client.get(f"/v1/orgs/{org}/sweep", params={"cursor": token})
            assert response.status_code == 422, response.text
            assert fields(response) == ["cursor"]
