"""History search with the real embedded model (multilingual-e5-small): an English query
finds Malay, Chinese and rojak conversations that full-text search cannot."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.conftest import running_app
from tests.model.conftest import ModelTier

from memory.entrypoints.bootstrap import build_services
from memory.entrypoints.http.app import create_app
from memory.infrastructure.embedding.factory import stored_model_id
from memory.infrastructure.settings import Settings

pytestmark = [pytest.mark.model, pytest.mark.anyio]

SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"

# One conversation per channel; each is a window of its own.
CONVERSATIONS: dict[str, list[tuple[str, str]]] = {
    "ms-password": [
        ("aina", "Saya lupa kata laluan saya, macam mana nak tetapkan semula?"),
        ("support", "Tekan pautan 'lupa kata laluan' di halaman log masuk."),
        ("aina", "Dah cuba, tapi emel untuk tetapkan semula tak sampai lagi."),
    ],
    "zh-password": [
        ("wei", "我忘记了登录密码，请问怎么重置？"),  # noqa: RUF001
        ("support", "在登录页面点击忘记密码，系统会发重置邮件给你。"),  # noqa: RUF001
        ("wei", "好的，我收到邮件了，谢谢。"),  # noqa: RUF001
    ],
    "rojak-parcel": [
        ("raj", "Boss, my parcel belum sampai lagi lah, dah one week already."),
        ("support", "Sorry ah, courier cakap ada delay kat warehouse, esok sampai."),
        ("raj", "Ok can, tapi kalau esok tak sampai I nak refund ya."),
    ],
    "en-lunch": [
        ("tom", "Can we move the team lunch to Friday this week?"),
        ("ann", "Sure, the Italian place at noon works for everyone."),
    ],
    "ms-meeting": [
        ("siti", "Mesyuarat bulanan kita dipindahkan ke bilik tiga petang ini."),
        ("ahmad", "Baik, saya akan bawa laporan kewangan suku tahun."),
    ],
    "zh-weather": [
        ("lin", "今天下午会下大雨，出门记得带伞。"),  # noqa: RUF001
        ("chen", "好的，那我们改天再去公园野餐吧。"),  # noqa: RUF001
    ],
}


def events() -> list[dict[str, Any]]:
    start = datetime.now(UTC) - timedelta(hours=6)
    out = []
    for c, (channel, lines) in enumerate(CONVERSATIONS.items()):
        for i, (sender, text) in enumerate(lines):
            out.append(
                {
                    "event_id": f"{channel}-{i}",
                    "provider": "whatsapp",
                    "channel_id": channel,
                    "sender": sender,
                    "text": text,
                    "occurred_at": (start + timedelta(minutes=10 * c + i)).isoformat(),
                }
            )
    return out


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def channels_in_order(results: list[dict[str, Any]]) -> list[str]:
    seen: list[str] = []
    for r in results:
        if r["channel_id"] not in seen:
            seen.append(r["channel_id"])
    return seen


async def test_an_english_query_finds_malay_chinese_and_rojak_conversations(
    database_url: str, make_settings: Callable[..., Settings], model_tier: ModelTier
) -> None:
    settings = make_settings(history_model=model_tier.history_model, **model_tier.settings)
    app = create_app(
        lambda: build_services(settings, database_url, contexts=("history",)), run_workers=False
    )
    async with running_app(app) as client:
        stored = await client.post("/v1/orgs/acme/chat-events", json={"events": events()})
        assert stored.json()["inserted"] == 15

        async def search(q: str) -> dict[str, Any]:
            response = await client.get("/v1/orgs/acme/history/search", params={"q": q})
            assert response.status_code == 200
            return response.json()

        # Full-text alone: the 'simple' configuration finds none of them.
        for query in ("how do I reset my password", "my parcel has not arrived yet"):
            off = await search(query)
            assert off["semantic"] == "off" and off["results"] == []

        await client.put(SEMANTIC, json={"enabled": True})
        swept = (await client.post("/v1/sweep")).json()
        assert (swept["windows_embedded"], swept["partitions"]) == (6, 6)

        password = await search("how do I reset my password")
        assert password["semantic"] == "on"
        assert password["model"] == stored_model_id(model_tier.history_model)
        ranked = channels_in_order(password["results"])
        assert set(ranked[:2]) == {"ms-password", "zh-password"}, ranked
        top = password["results"][0]
        assert top["matched_by"] == "semantic" and top["similarity"] > 0.8

        parcel = await search("my parcel has not arrived yet")
        assert channels_in_order(parcel["results"])[0] == "rojak-parcel"
