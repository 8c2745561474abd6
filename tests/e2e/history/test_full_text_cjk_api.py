"""Chinese-aware full-text search through the HTTP API (docs/adr/0050)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio


async def test_chinese_and_rojak_keywords_over_http(history_app, event) -> None:
    async with history_app() as client:
        events = [
            event("我忘记了登录密码，请问怎么重置？", minutes_ago=30, event_id="zh"),  # noqa: RUF001
            event("Boss, 我的parcel belum sampai lagi lah", minutes_ago=20, event_id="rojak"),
            event("好", minutes_ago=10, event_id="ok"),
            event("好的，明天见", minutes_ago=5, event_id="bye"),  # noqa: RUF001
        ]
        response = await client.post("/v1/orgs/acme/chat-events", json={"events": events})
        assert response.status_code == 201, response.text

        async def search(q: str) -> list[str]:
            response = await client.get("/v1/orgs/acme/history/search", params={"q": q})
            assert response.status_code == 200, response.text
            body = response.json()
            assert body["semantic"] == "off"
            assert all(r["matched_by"] == "fts" for r in body["results"])
            return [r["event_id"] for r in body["results"]]

        assert await search("密码") == ["zh"]
        assert await search("重置") == ["zh"]
        assert await search("parcel 我的") == ["rojak"]
        assert await search("好") == ["ok"]  # a lone character: only where it stands alone
        assert await search("好的") == ["bye"]
        assert await search("密马") == []
