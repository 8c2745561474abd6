"""The contract against a real `memory serve`: schemathesis generates requests for every
operation of the service's own `/openapi.json` (its examples, coverage and fuzzing phases,
run by its CLI: `schemathesis_cli`) and checks each answer (no 5xx, a declared status, JSON
where JSON is declared, a body that matches its schema, and no refusal of a request the
schema allows). The number of cases sent per operation is reported at the end of the run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from tests.e2e.contract.fuzz_hooks import accepts_schema_valid_data
from tests.e2e.contract.schemathesis_cli import CHECKS, run_schemathesis

from memory.domain.access.api_key import MAX_KEY_LIFETIME_DAYS
from memory.entrypoints.http.openapi import OPERATIONS, openapi_document

# Cases per operation and phase: enough to reach every field's edges, few enough for a
# 2-core machine.
EXAMPLES_PER_OPERATION = 30
POSITIVE_PHASES = ("examples", "coverage", "fuzzing")
POSITIVE_SECONDS = 600


# The document the app serves (the last test checks that /openapi.json is this one); its
# instants as `fuzz_hooks` makes them (a key's expiry still often lies in the past, which the
# service refuses, and `accepts_schema_valid_data` says which refusals JSON Schema cannot
# state). Every operation must get its cases: an operation the run never reached (a schema
# schemathesis cannot generate from, a run that generated nothing) fails the test.
@pytest.mark.long(seconds=120)
@pytest.mark.timeout(POSITIVE_SECONDS + 60)
def test_every_operation_keeps_its_contract(
    served: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    every = {f"{op.method} {op.path}" for op in OPERATIONS}
    run = run_schemathesis(
        served,
        tmp_path,
        name="positive",
        phases=POSITIVE_PHASES,
        checks=(*CHECKS, accepts_schema_valid_data.__name__),
        max_examples=EXAMPLES_PER_OPERATION,
        timeout=POSITIVE_SECONDS,
    )
    # The coverage phase also sends methods a path does not declare (its answer, a 405, is
    # checked too): those are not operations.
    record_property("contract_cases", {label: run.called[label] for label in sorted(every)})
    record_property("contract_max_examples", EXAMPLES_PER_OPERATION)
    assert every - set(run.called) == set(), "operations the fuzzer never called"
    # An operation without parameters or body has next to nothing to vary (schemathesis sends
    # it a few times); every other one gets a good part of its cases.
    few = [
        label
        for op in OPERATIONS
        if run.called[label := f"{op.method} {op.path}"] < EXAMPLES_PER_OPERATION // 3
        and takes_input(op.method, op.path)
    ]
    assert few == [], {label: run.called[label] for label in few}


def takes_input(method: str, path: str) -> bool:
    operation = openapi_document()["paths"][path][method.lower()]
    return bool(operation.get("parameters")) or "requestBody" in operation


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
