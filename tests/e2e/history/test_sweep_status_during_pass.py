"""`GET /v1/orgs/{org}/sweep` answers while a pass is inside a slow model call."""

from __future__ import annotations

import threading

import anyio
import pytest

pytestmark = pytest.mark.anyio

SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"


async def test_sweep_status_answers_while_a_pass_waits_on_the_model(
    history_app, event, edge_model
) -> None:
    edge_model.gate = threading.Event()
    async with history_app() as client:
        await client.put(SEMANTIC, json={"enabled": True})
        events = [
            event(f"please reset password number {i}", minutes_ago=600 - 40 * i) for i in range(5)
        ]
        await client.post("/v1/orgs/acme/chat-events", json={"events": events})
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.post, "/v1/sweep")
            with anyio.fail_after(10):
                while not edge_model.entered.is_set():
                    await anyio.sleep(0.05)
            try:
                with anyio.fail_after(2):
                    status = await client.get("/v1/orgs/acme/sweep")
                    flags = await client.get("/v1/orgs/acme/feature-flags")
            finally:
                edge_model.gate.set()
        assert status.status_code == 200
        assert status.json()["partitions"][0]["lag"]["events"] == 5
        assert flags.status_code == 200
