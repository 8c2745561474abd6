"""The sweep and purge workers `memory serve` runs: woken by ingest NOTIFY, and periodic."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytestmark = pytest.mark.anyio

SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"


async def semantic_hits(client) -> list[dict[str, Any]]:
    body = (await client.get("/v1/orgs/acme/history/search", params={"q": "password"})).json()
    return [r for r in body["results"] if r["matched_by"] == "semantic"]


async def test_an_ingest_wakes_the_sweep(history_app, event) -> None:
    # The periodic pass is an hour away: only the NOTIFY can make this embed in time.
    async with history_app(run_workers=True, sweep_interval=3600, sweep_debounce=0.1) as client:
        await client.put(SEMANTIC, json={"enabled": True})
        await anyio.sleep(0.5)  # let the listener start
        await client.post(
            "/v1/orgs/acme/chat-events",
            json={
                "events": [
                    event("how do I reset my password", minutes_ago=90),
                    event("the link in the email expired", minutes_ago=89),
                ]
            },
        )
        with anyio.fail_after(15):
            while len(await semantic_hits(client)) < 1:
                await anyio.sleep(0.1)
        health = (await client.get("/healthz")).json()["contexts"]["history"]
        assert health["sweep"]["last_run"]["trigger"] == "notify"


async def test_the_sweep_also_runs_periodically(history_app, event) -> None:
    async with history_app() as client:  # no workers: events land, nothing sweeps
        await client.put(SEMANTIC, json={"enabled": True})
        await client.post(
            "/v1/orgs/acme/chat-events",
            json={
                "events": [
                    event("how do I reset my password", minutes_ago=90),
                    event("the link in the email expired", minutes_ago=89),
                ]
            },
        )
    async with history_app(run_workers=True, sweep_interval=0.2) as client:
        with anyio.fail_after(15):
            while not await semantic_hits(client):
                await anyio.sleep(0.1)


async def test_the_purge_worker_enforces_retention(history_app, event) -> None:
    async with history_app() as client:
        await client.post(
            "/v1/orgs/acme/chat-events",
            json={"events": [event("an old password question", minutes_ago=31 * 24 * 60)]},
        )
    async with history_app(run_workers=True, purge_interval=3600) as client:
        with anyio.fail_after(15):
            while (
                await client.get("/v1/orgs/acme/history/search", params={"q": "password"})
            ).json()["results"]:
                await anyio.sleep(0.1)
        health = (await client.get("/healthz")).json()["contexts"]["history"]
        assert health["purge"]["last_run"]["events_deleted"] == 1
