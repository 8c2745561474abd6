"""/metrics through the real app on a real database: model call latency per model and
operation, the connection pool's use, per-org sweep lag only as an aggregate, and no
`*_created` series."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from tests.conftest import running_app

from memory.entrypoints.bootstrap import build_services
from memory.entrypoints.http.app import create_app
from memory.infrastructure import build_info
from memory.infrastructure.settings import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def chat(text: str, minutes_ago: float) -> dict[str, str]:
    at = datetime.now(UTC) - timedelta(minutes=minutes_ago)
    return {
        "provider": "slack",
        "channel_id": "C1",
        "sender": "ali",
        "text": text,
        "occurred_at": at.isoformat(),
    }


def value(metrics: str, series: str) -> float:
    match = re.search(rf"^{re.escape(series)} (\S+)$", metrics, re.MULTILINE)
    assert match is not None, f"{series} missing"
    return float(match.group(1))


async def test_metrics_show_models_pool_and_lag_aggregates(
    database_url: str, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings()
    app = create_app(lambda: build_services(settings, database_url), run_workers=False)
    async with running_app(app) as client:
        await client.put("/v1/feature-flags/digital_worker_semantic_search", json={"enabled": True})
        for org in ("acme", "globex"):
            events = [
                chat(f"message number {i} about the quarterly report", 120 - i) for i in range(3)
            ]
            assert (
                await client.post(f"/v1/orgs/{org}/chat-events", json={"events": events})
            ).status_code == 201
        # A message a minute old: its window is still open, so one org keeps some lag.
        await client.post(
            "/v1/orgs/globex/chat-events", json={"events": [chat("still talking about it", 1)]}
        )
        assert (await client.post("/v1/sweep", json={})).status_code == 200
        assert (
            await client.get("/v1/orgs/acme/history/search", params={"q": "report"})
        ).status_code == 200
        metrics = (await client.get("/metrics")).text

    assert "_created" not in metrics
    model = 'model="hash:1024"'
    assert (
        value(metrics, f'memory_model_call_seconds_count{{{model},operation="embed_documents"}}')
        >= 1
    )
    assert (
        value(metrics, f'memory_model_call_seconds_count{{{model},operation="embed_query"}}') >= 1
    )
    assert (
        value(metrics, 'memory_db_pool_max_connections{pool="service"}') == settings.pool_max_size
    )
    in_use = value(metrics, 'memory_db_pool_connections{pool="service",state="in_use"}')
    idle = value(metrics, 'memory_db_pool_connections{pool="service",state="idle"}')
    assert in_use >= 0 and in_use + idle >= settings.pool_min_size
    assert value(metrics, 'memory_db_pool_requests_waiting{pool="service"}') == 0
    assert value(metrics, 'memory_history_sweep_orgs_by_lag{le="+Inf"}') == 2
    assert value(metrics, 'memory_history_sweep_orgs_by_lag{le="0"}') == 1
    assert value(metrics, "memory_history_sweep_lag_events_max") >= 1
    assert "acme" not in metrics and "globex" not in metrics


async def test_metrics_name_the_build_and_when_the_last_sweep_and_purge_worked(
    database_url: str, make_settings: Callable[..., Settings]
) -> None:
    app = create_app(lambda: build_services(make_settings(), database_url), run_workers=False)
    started = datetime.now(UTC).timestamp()
    async with running_app(app) as client:
        assert (await client.post("/v1/sweep", json={})).status_code == 200
        assert (await client.post("/v1/purge", json={})).status_code == 200
        metrics = (await client.get("/metrics")).text

    build = re.search(
        r'^memory_build_info\{commit="([0-9a-f]+)",version="([^"]+)"\} 1\.0$', metrics, re.M
    )
    assert build is not None, "memory_build_info missing"
    assert build.group(2) == build_info.version()
    for job in ("sweep", "purge"):
        at = value(metrics, f"memory_history_{job}_last_success_timestamp_seconds")
        assert started <= at <= datetime.now(UTC).timestamp()
    # No backup source in this process: the family is declared, without a sample.
    assert "# TYPE memory_backup_last_success_timestamp_seconds gauge" in metrics
    assert "\nmemory_backup_last_success_timestamp_seconds " not in metrics
