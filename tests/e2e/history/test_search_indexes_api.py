"""Large orgs' search indexes where operators look (docs/adr/0141): the org's
`GET /v1/orgs/{org_id}/search-indexes`, /healthz, /metrics and `memory history indexes`
show an index asked for by a search, then ready once a builder (here another replica's)
made it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from tests.conftest import RunCli, migrated_database

from memory.entrypoints import history_cli
from memory.infrastructure.history.search_indexes import PostgresWindowIndexes

SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"


@pytest.fixture
def other_replica(database_url: str) -> Iterator[PostgresWindowIndexes]:
    """The index builder of another `memory serve` on the same database."""
    with migrated_database(database_url, max_size=2) as database:
        yield PostgresWindowIndexes(database)


def metric(text: str, name: str) -> float:
    (line,) = [line for line in text.splitlines() if line.startswith(name + " ")]
    return float(line.split()[-1])


async def seed(client: Any, event: Any) -> None:
    await client.put(SEMANTIC, json={"enabled": True})
    events = [event(f"the forklift broke again, number {c}", channel_id=f"C{c}") for c in range(4)]
    stored = await client.post("/v1/orgs/acme/chat-events", json={"events": events})
    assert stored.status_code == 201
    assert (await client.post("/v1/sweep", json={})).json()["windows_embedded"] == 4


@pytest.mark.anyio
async def test_an_orgs_index_shows_in_its_route_healthz_and_metrics(
    history_app, event, other_replica: PostgresWindowIndexes
) -> None:
    async with history_app(history_search_mode="approximate") as client:
        await seed(client, event)
        assert (await client.get("/v1/orgs/acme/search-indexes")).json() == {
            "org_id": "acme",
            "model": "hash:1024",
            "indexes": [],
        }
        search = await client.get("/v1/orgs/acme/history/search", params={"q": "forklift"})
        assert search.status_code == 200

        [wanted] = (await client.get("/v1/orgs/acme/search-indexes")).json()["indexes"]
        assert (wanted["model"], wanted["state"], wanted["windows_seen"]) == (
            "hash:1024",
            "wanted",
            4,
        )
        assert wanted["progress"] is None and wanted["ready_at"] is None
        health = (await client.get("/healthz")).json()["contexts"]["history"]["search_indexes"]
        assert (health["mode"], health["wanted"], health["ready"]) == ("approximate", 1, 0)
        assert [i["org_id"] for i in health["queue"]] == ["acme"]
        metrics = (await client.get("/metrics")).text
        assert metric(metrics, 'memory_history_search_indexes{state="wanted"}') == 1

        assert other_replica.build_next() is not None
        [ready] = (await client.get("/v1/orgs/acme/search-indexes")).json()["indexes"]
        assert (ready["state"], ready["dimensions"], ready["failures"]) == ("ready", 1024, 0)
        assert ready["ready_at"] is not None
        health = (await client.get("/healthz")).json()["contexts"]["history"]["search_indexes"]
        assert (health["wanted"], health["ready"], health["queue"]) == (0, 1, [])
        metrics = (await client.get("/metrics")).text
        assert metric(metrics, 'memory_history_search_indexes{state="ready"}') == 1
        assert metric(metrics, 'memory_history_search_indexes{state="wanted"}') == 0

        other = await client.get("/v1/orgs/globex/search-indexes")
        assert other.json() == {"org_id": "globex", "model": "hash:1024", "indexes": []}
        bad = await client.get("/v1/orgs/no%20spaces/search-indexes")
        assert bad.status_code == 422
        assert bad.json()["error"]["details"]["fields"][0]["field"] == "org_id"


def test_memory_history_indexes_shows_the_queue_and_one_orgs_indexes(
    run_cli: RunCli, cli_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_HISTORY_SEARCH_MODE", "approximate")
    assert run_cli("history", "indexes", "--json")[0] == 0  # migrates an empty database
    with migrated_database(cli_env, max_size=2) as database:
        PostgresWindowIndexes(database).request("acme", "hash:1024", 7)
    code, out, _ = run_cli("history", "indexes", "--json")
    summary = json.loads(out)
    assert code == 0
    assert (summary["wanted"], summary["ready"], summary["failed"]) == (1, 0, 0)
    assert [(i["org_id"], i["state"], i["windows_seen"]) for i in summary["queue"]] == [
        ("acme", "wanted", 7)
    ]
    code, out, _ = run_cli("history", "indexes", "--org", "acme")
    assert code == 0 and "acme" in out and "wanted" in out
    code, out, _ = run_cli("history", "indexes", "--org", "globex", "--json")
    assert json.loads(out)["indexes"] == []
    code, _, err = run_cli("history", "indexes", "--org", "no spaces")
    assert code == 2 and "--org" in err


def test_memory_history_indexes_watch_follows_a_build_until_it_is_ready(
    run_cli: RunCli, cli_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_cli, "INDEX_WATCH_SECONDS", 0.05)
    assert run_cli("history", "indexes", "--json")[0] == 0  # migrates an empty database
    with migrated_database(cli_env, max_size=2) as database:
        with database.connection() as conn:
            conn.execute(
                "INSERT INTO dw_message_embeddings (id, org_id, provider, external_channel_id,"
                " model, embedding, content, source_event_ids, first_occurred_at,"
                " last_occurred_at, script_group)"
                " SELECT gen_random_uuid(), 'acme', 'slack', 'C' || i, 'hash:1024',"
                " array_fill(1.0 / 32, ARRAY[1024])::real[]::vector::halfvec, 'text ' || i,"
                " ARRAY['e' || i], now(), now(), 'other' FROM generate_series(1, 50) AS i"
            )
        builder = PostgresWindowIndexes(database)
        builder.request("acme", "hash:1024", 50)
        later = threading.Timer(0.5, builder.build_next)
        later.start()
        try:
            code, out, err = run_cli("history", "indexes", "--org", "acme", "--watch", "--json")
        finally:
            later.join()
    assert code == 0, err
    [ready] = json.loads(out)["indexes"]
    assert (ready["state"], ready["dimensions"]) == ("ready", 1024)
