"""Which orgs wait for the sweep and for how long (issue 16 item 3): the org's sweep status,
/healthz and /metrics say it from the maintained state (ADR 0089), as an age."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.anyio

SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"


async def ingest(client, org: str, events: list[dict[str, Any]]) -> None:
    response = await client.post(f"/v1/orgs/{org}/chat-events", json={"events": events})
    assert response.status_code == 201, response.text


def metric(text: str, name: str) -> float:
    (line,) = [line for line in text.splitlines() if line.startswith(name + " ")]
    return float(line.split()[-1])


async def test_waiting_orgs_and_their_age_in_status_healthz_and_metrics(history_app, event) -> None:
    async with history_app() as client:
        await client.put(SEMANTIC, json={"enabled": True})
        await ingest(client, "acme", [event("where is my refund for the order", minutes_ago=90)])
        await ingest(
            client,
            "globex",
            [event(f"question number {c} about invoices", channel_id=f"C{c}") for c in range(3)],
        )

        status = (await client.get("/v1/orgs/globex/sweep")).json()
        assert status["waiting"]["partitions"] == 3
        assert 0 <= status["waiting"]["oldest_age_seconds"] < 60
        waiting = (await client.get("/healthz")).json()["contexts"]["history"]["sweeper"]["waiting"]
        assert (waiting["partitions"], waiting["orgs"]) == (4, 2)
        assert {o["org_id"]: o["partitions"] for o in waiting["longest"]} == {
            "acme": 1,
            "globex": 3,
        }
        assert all(o["age_seconds"] >= 0 for o in waiting["longest"])

        assert (await client.post("/v1/sweep", json={})).json()["windows_embedded"] == 4
        status = (await client.get("/v1/orgs/globex/sweep")).json()
        assert status["waiting"] == {"partitions": 0, "oldest_age_seconds": None}
        health = (await client.get("/healthz")).json()["contexts"]["history"]["sweeper"]
        assert health["waiting"]["partitions"] == 0 and health["waiting"]["longest"] == []
        metrics = (await client.get("/metrics")).text
        assert metric(metrics, "memory_history_sweep_waiting_partitions") == 0
        assert metric(metrics, 'memory_history_sweep_orgs_by_wait_seconds{le="+Inf"}') == 0
