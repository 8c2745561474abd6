"""Issue 6 items 1 and 8: an instant outside the accepted range is refused at ingest, and
rows an older version stored with one (simulated by direct SQL) never stop search, sweep
status, the sweep of any other org, nor the purge."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import psycopg
import pytest

pytestmark = pytest.mark.anyio

SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"
# Stored by psycopg as year 10000 and as 1 BC: neither loads back into a Python datetime.
YEAR_10000 = "9999-12-31T23:59:59-14:00"
ONE_BC = "0001-01-01T00:00:00+14:00"


def fields(response) -> list[dict[str, str]]:
    assert response.status_code == 422, response.text
    return list(response.json()["error"]["details"]["fields"])


def insert_as_an_older_version(url: str, org: str, rows: list[tuple[str, str]]) -> None:
    """Rows as a version without the accepted-range rule stored them."""
    with psycopg.connect(url, autocommit=True) as conn:
        for event_id, occurred_at in rows:
            conn.execute(
                "INSERT INTO dw_chat_events (org_id, event_id, provider, external_channel_id,"
                " sender, event_type, decision, message_text, occurred_at)"
                " VALUES (%s, %s, 'slack', 'C1', 'mallory', 'message', 'received',"
                " 'a hostile password question from another era', %s::timestamptz)",
                (org, event_id, occurred_at),
            )
        conn.execute(
            "INSERT INTO dw_chat_partitions VALUES (%s, 'slack', 'C1') ON CONFLICT DO NOTHING",
            (org,),
        )


def count(url: str, statement: str, *params: Any) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(statement, params).fetchone()
    assert row is not None
    return int(row[0])


def embedded_orgs(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {r[0] for r in conn.execute("SELECT DISTINCT org_id FROM dw_message_embeddings")}


@pytest.mark.parametrize("with_id", [True, False])
@pytest.mark.parametrize(
    "occurred_at",
    [YEAR_10000, ONE_BC, "1969-12-31T23:59:59Z", "2999-01-01T00:00:00Z", "+10 minutes"],
)
async def test_an_instant_outside_the_accepted_range_is_422_naming_the_field(
    history_app, event, occurred_at: str, with_id: bool
) -> None:
    if occurred_at == "+10 minutes":
        occurred_at = (datetime.now(UTC) + timedelta(minutes=10)).isoformat()
    async with history_app() as client:
        bad = event("hostile", occurred_at=occurred_at)
        if with_id:
            bad["event_id"] = "hostile-1"
        response = await client.post(
            "/v1/orgs/acme/chat-events", json={"events": [event("fine", event_id="ok"), bad]}
        )
        (problem,) = fields(response)
        assert problem["field"] == "events.1.occurred_at"
        assert "1970" in problem["reason"] or "after the server's clock" in problem["reason"]
        status = (await client.get("/v1/orgs/acme/sweep")).json()
        assert status["partitions"] == []  # all or nothing: the valid event is not stored


async def test_a_small_skew_into_the_future_is_accepted_and_configurable(
    history_app, event
) -> None:
    soon = (datetime.now(UTC) + timedelta(minutes=2)).isoformat()
    async with history_app() as client:
        accepted = await client.post(
            "/v1/orgs/acme/chat-events", json={"events": [event("soon", occurred_at=soon)]}
        )
        assert accepted.status_code == 201
    async with history_app(max_future_skew=60) as client:
        refused = await client.post(
            "/v1/orgs/acme/chat-events", json={"events": [event("soon", occurred_at=soon)]}
        )
        assert fields(refused)[0]["field"] == "events.0.occurred_at"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"since": YEAR_10000}, "since"),
        ({"since": ONE_BC}, "since"),
        ({"until": "1969-01-01T00:00:00Z"}, "until"),
        ({"until": "2999-01-01T00:00:00Z"}, "until"),
    ],
)
async def test_search_time_bounds_follow_the_same_rule(history_app, params, field) -> None:
    async with history_app() as client:
        response = await client.get(
            "/v1/orgs/acme/history/search", params={"q": "password", **params}
        )
        assert [f["field"] for f in fields(response)] == [field]


async def test_rows_stored_out_of_range_stop_nothing_and_are_purged(
    history_app, event, database_url: str
) -> None:
    async with history_app() as client:
        await client.put(SEMANTIC, json={"enabled": True})
        for org in ("org-a", "org-b"):
            await client.post(
                f"/v1/orgs/{org}/chat-events",
                json={"events": [event(f"{org} asks how to reset a password", event_id="m1")]},
            )
        insert_as_an_older_version(database_url, "org-a", [("x10k", YEAR_10000), ("xbc", ONE_BC)])

        sweep = await client.post("/v1/sweep")
        assert sweep.status_code == 200, sweep.text
        assert sweep.json()["events_poisoned"] == 2
        assert embedded_orgs(database_url) == {"org-a", "org-b"}

        status = await client.get("/v1/orgs/org-a/sweep")
        assert status.status_code == 200, status.text
        (partition,) = status.json()["partitions"]
        poison = {p["event_id"]: p for p in partition["poison_events"]}
        assert set(poison) == {"x10k", "xbc"}
        assert poison["x10k"]["reason"] == "occurred_at_out_of_range"
        assert poison["x10k"]["occurred_at"].startswith("10000-01-01")
        assert "BC" in poison["xbc"]["occurred_at"]
        assert partition["lag"]["events"] == 0

        found = await client.get("/v1/orgs/org-a/history/search", params={"q": "password"})
        assert found.status_code == 200, found.text
        assert [r["event_id"] for r in found.json()["results"]] == ["m1"]
        # Recorded once: the next pass does not record them again.
        assert (await client.post("/v1/sweep")).json()["events_poisoned"] == 0
        metrics = (await client.get("/metrics")).text
        poisoned = re.search(r"^memory_history_sweep_poison_events_total (\S+)$", metrics, re.M)
        assert poisoned is not None and float(poisoned.group(1)) >= 2

        # Out of range counts as expired: the purge removes them, and only them.
        purged = (await client.post("/v1/purge", json={"org_id": "org-a"})).json()
        assert purged["events_deleted"] == 2
        assert (
            count(database_url, "SELECT count(*) FROM dw_chat_events WHERE org_id = %s", "org-a")
            == 1
        )


async def test_the_background_sweeper_keeps_embedding_other_orgs(
    history_app, event, database_url: str
) -> None:
    async with history_app() as client:
        await client.put(SEMANTIC, json={"enabled": True})
        await client.post(
            "/v1/orgs/org-a/chat-events",
            json={"events": [event("org a asks how to reset a password", event_id="a1")]},
        )
        insert_as_an_older_version(database_url, "org-a", [("x10k", YEAR_10000), ("xbc", ONE_BC)])
    async with history_app(run_workers=True, sweep_interval=0.2) as client:
        await client.post(
            "/v1/orgs/org-b/chat-events",
            json={"events": [event("org b asks how to reset a password", event_id="b1")]},
        )
        with anyio.fail_after(20):
            while embedded_orgs(database_url) != {"org-a", "org-b"}:
                await anyio.sleep(0.1)
        # The purge worker (it runs at start-up) deletes them as expired; status answers.
        with anyio.fail_after(20):
            while count(database_url, "SELECT count(*) FROM dw_chat_events") != 2:
                await anyio.sleep(0.1)
        assert (await client.get("/v1/orgs/org-a/sweep")).status_code == 200


async def test_a_far_future_row_does_not_close_a_live_window(
    history_app, event, database_url: str
) -> None:
    """Item 8: a message a minute old stays in an open window although a far-future row
    (stored by an older version, or one inside the skew) follows it."""
    soon = (datetime.now(UTC) + timedelta(minutes=4)).isoformat()
    async with history_app() as client:
        await client.put(SEMANTIC, json={"enabled": True})
        await client.post(
            "/v1/orgs/org-a/chat-events",
            json={"events": [event("a live question about passwords", minutes_ago=1)]},
        )
        # 28 minutes idle at `now`, but 32 minutes before the next (fast-clock) message.
        await client.post(
            "/v1/orgs/org-b/chat-events",
            json={"events": [event("a live question about passwords", minutes_ago=28)]},
        )
        insert_as_an_older_version(database_url, "org-a", [("x9999", "9999-01-01T00:00:00Z")])
        await client.post(
            "/v1/orgs/org-b/chat-events",
            json={"events": [event("from a fast clock", occurred_at=soon, event_id="soon")]},
        )
        sweep = (await client.post("/v1/sweep")).json()
        assert sweep["windows_embedded"] == 0
        assert embedded_orgs(database_url) == set()
        assert sweep["events_poisoned"] == 1  # the year-9999 row: out of range
