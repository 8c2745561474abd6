"""The contract against a real `memory serve`: schemathesis generates requests for every
operation of the service's own `/openapi.json` and checks each answer (no 5xx, a declared
status, JSON where JSON is declared, a body that matches its schema). The number of cases
generated per operation is reported at the end of the run."""

from __future__ import annotations

import json
from collections import Counter

import httpx
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from tests.conftest import TEST_ADMIN_TOKEN

from memory.domain.access.api_key import MAX_KEY_LIFETIME_DAYS
from memory.entrypoints.http.openapi import OPERATIONS, openapi_document

# Cases per operation: enough to reach every field's edges, few enough for a 2-core machine.
EXAMPLES_PER_OPERATION = 30
CASES: Counter[str] = Counter()


# The document the app serves (the last test checks that /openapi.json is this one), loaded
# at collection so that each operation is its own test.
schema = schemathesis.openapi.from_dict(openapi_document())


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_keeps_its_contract(served: str, case: schemathesis.Case) -> None:
    CASES[case.operation.label] += 1
    case.call_and_validate(
        base_url=served,
        headers={"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"},
        checks=[
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
        ],
        timeout=30,
    )


def test_the_document_lists_every_operation_and_docs_are_served_locally(served: str) -> None:
    document = httpx.get(f"{served}/openapi.json", timeout=10).json()
    assert document == json.loads(json.dumps(openapi_document()))
    assert document["openapi"].startswith("3.1")
    listed = {(m.upper(), path) for path, ops in document["paths"].items() for m in ops}
    assert listed == {(op.method, op.path) for op in OPERATIONS}
    store = document["paths"]["/v1/policies"]["post"]["responses"]
    assert store["409"]["x-error-codes"] == ["conflict"]
    schemas = document["components"]["schemas"]
    metadata = schemas["StoreBody"]["properties"]["metadata"]["anyOf"][0]
    assert metadata == {"$ref": "#/components/schemas/PolicyMetadataShape"}
    assert "tags" in schemas["PolicyFilterShape"]["properties"]
    new_key = schemas["NewKeyBody"]["properties"]
    assert new_key["expires_in_days"]["anyOf"][0]["maximum"] == MAX_KEY_LIFETIME_DAYS
    assert new_key["expires_at"]["anyOf"][0]["format"] == "date-time"
    assert "expires_at" in schemas["ApiKeyBody"]["required"]
    listing = document["paths"]["/v1/api-keys"]["get"]["responses"]
    assert listing["401"]["x-error-codes"] == ["unauthenticated", "key_expired"]
    # Any valid key may ask about itself: refused only as unauthenticated or expired.
    own = document["paths"]["/v1/api-keys/self"]["get"]["responses"]
    assert own["401"]["x-error-codes"] == ["unauthenticated", "key_expired"]
    assert "403" not in own
    assert own["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/OwnApiKeyBody")
    assert "secret" not in schemas["OwnApiKeyBody"]["properties"]

    page = httpx.get(f"{served}/docs", timeout=10)
    assert page.status_code == 200 and "/docs/swagger-ui-bundle.js" in page.text
    assert "http" not in page.text.replace("http-equiv", "")  # nothing from elsewhere
    bundle = httpx.get(f"{served}/docs/swagger-ui-bundle.js", timeout=10)
    assert bundle.status_code == 200 and len(bundle.content) > 100_000
    for other in ("index.html", "swagger-ui.js"):  # only the listed files
        assert httpx.get(f"{served}/docs/{other}", timeout=10).status_code == 404
