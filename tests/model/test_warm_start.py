"""Warm start with the bundled model: the service warms the model and the Chinese segmenter
before it answers, /healthz shows the warm-up, and none of the first 20 searches after
start-up comes back `degraded` (docs/adr/0113). Meant for an idle machine: the budget is
the production default (MEMORY_HISTORY_QUERY_EMBED_TIMEOUT, 1 s)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tests.conftest import running_app
from tests.model.conftest import LOCAL
from tests.model.test_history_crosslingual import SEMANTIC, events

from memory.entrypoints.bootstrap import build_services
from memory.entrypoints.http.app import create_app
from memory.infrastructure.history.chinese_words import jieba_words
from memory.infrastructure.settings import Settings

pytestmark = [pytest.mark.model, pytest.mark.anyio]

# The first searches a new user types: the demo's headline queries in every language.
QUERIES = (
    "仓库的叉车坏了",
    "how do I reset my password",
    "kata laluan lupa",
    "parcel belum sampai lah",
    "会议改到几点",
)
SEARCHES = 20


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_first_searches_after_start_up_never_degrade(
    database_url: str, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(history_model=LOCAL)
    assert settings.history_query_embed_timeout == 1.0
    app = create_app(
        lambda: build_services(settings, database_url, contexts=("history",)), run_workers=False
    )
    async with running_app(app) as client:
        health = (await client.get("/healthz")).json()
        warm = health["warm_up"]
        # The dictionary is loaded (by the warm-up, or already by then in this process).
        assert warm["ready"] is True and warm["segmenter_seconds"] >= 0
        assert jieba_words()._tokenizer is not None
        assert warm["models"][LOCAL]["first_query_seconds"] > 0
        assert "error" not in warm["models"][LOCAL]

        await client.put(SEMANTIC, json={"enabled": True})
        await client.post("/v1/orgs/acme/chat-events", json={"events": events()})
        await client.post("/v1/sweep")
        states: list[str] = []
        for n in range(SEARCHES):
            answer: dict[str, Any] = (
                await client.get(
                    "/v1/orgs/acme/history/search", params={"q": QUERIES[n % len(QUERIES)]}
                )
            ).json()
            states.append(answer["semantic"])
        assert states == ["on"] * SEARCHES, states
