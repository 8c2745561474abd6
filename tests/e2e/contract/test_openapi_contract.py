"""The contract against a real `memory serve`: schemathesis generates requests for every
operation of the service's own `/openapi.json` and checks each answer (no 5xx, a declared
status, JSON where JSON is declared, a body that matches its schema). The number of cases
generated per operation is reported at the end of the run."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.failures import Failure
from tests.conftest import TEST_ADMIN_TOKEN
from tests.e2e.contract import fuzz_hooks

from memory.domain.access.api_key import MAX_KEY_LIFETIME_DAYS
from memory.entrypoints.http.openapi import OPERATIONS, openapi_document

ROOT = Path(__file__).resolve().parents[3]
# Cases per operation: enough to reach every field's edges, few enough for a 2-core machine.
EXAMPLES_PER_OPERATION = 30
CASES: Counter[str] = Counter()


# What the service refuses although the schema allows it: only rules JSON Schema cannot state,
# each said in its field's description (docs/adr/0110): instants relative to the server's
# clock (an event's time, a key's expiry, a filter's or listing's bounds, and their order),
# `query`, which `GET /v1/embeddings/{ref}` takes only with `origin=search`, a cursor, which
# must be one the service issued (signed), and `max_results`, at most the request's `limit`.
# And JSON Schema's `integer` includes `1.0`, which a body here refuses. Any other 422 to a
# request the schema allows is a contract failure.
UNSTATABLE = re.compile(
    r"(expires_at|events\.\d+\.occurred_at|filter\.timestamp(\.(gte|gt|lte|lt))?|updated_since"
    r"|since|until|query|cursor|max_results)"
)
NOT_AN_INTEGER = "Input should be a valid integer"
# The schema states it (`propertyNames`), but schemathesis's generator does not apply it.
NUL_IN_KEY = "keys must not contain NUL characters"
# A number in a query string is written in decimal digits (`2.5`, not `25e-1`): how a value
# is spelled in a URL, which JSON Schema's `number` does not describe.
QUERY_DECIMAL = "Value error, must be a decimal number such as 2.5"
AUTH = {"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"}
REQUEST_SECONDS = 30


def accepts_schema_valid_data(ctx: Any, response: Any, case: schemathesis.Case) -> bool | None:
    """schemathesis's `positive_data_acceptance`, except for the rules above."""
    try:
        return positive_data_acceptance(ctx, response, case)
    except Failure:
        if response.status_code == 422:
            fields = response.json()["error"].get("details", {}).get("fields", [])
            if fields and all(
                UNSTATABLE.fullmatch(f["field"])
                or f["reason"] in (NOT_AN_INTEGER, NUL_IN_KEY, QUERY_DECIMAL)
                for f in fields
            ):
                return None
        raise


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    accepts_schema_valid_data,
]


# The document the app serves (the last test checks that /openapi.json is this one), loaded
# at collection so that each operation is its own test; instants as `fuzz_hooks` makes them
# (a key's expiry still often lies in the past, which the service refuses). A copy: loading
# a schema changes it.
schema = schemathesis.openapi.from_dict(copy.deepcopy(openapi_document()))


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_keeps_its_contract(served: str, case: schemathesis.Case) -> None:
    CASES[case.operation.label] += 1
    case.call_and_validate(base_url=served, headers=AUTH, checks=CHECKS, timeout=REQUEST_SECONDS)


# The stateful phase: sequences that follow the document's links (store a policy, then read,
# update, delete it by the id the answer gave; list orgs, ingest into one, then search, sweep,
# erase; create a key, then list and revoke it) and the links schemathesis infers, so answers
# about things that exist are checked too. Every operation is on a chain from an operation
# the fuzzer starts with (docs/adr/0123), and the phase runs again, with new sequences, until
# every operation was called (at most `STATEFUL_SECONDS`). Run by schemathesis's own engine
# (its CLI): hypothesis's state machine under pytest rejects a live service, which answers a
# replay differently. Its instants come from the same hooks as the cases above.
STATEFUL_SCENARIOS = 30
STATEFUL_STEPS = 12
STATEFUL_SECONDS = 600
STATEFUL_CALLED: Counter[str] = Counter()


# Passes until every operation was called, and the slowest one's own time limit.
@pytest.mark.timeout(STATEFUL_SECONDS + 120)
def test_linked_sequences_keep_the_contract(served: str, tmp_path: Path) -> None:
    every = {f"{op.method} {op.path}" for op in OPERATIONS}
    config = tmp_path / "schemathesis.toml"
    config.write_text(f"[phases.stateful]\nmax-steps = {STATEFUL_STEPS}\n", "utf-8")
    environment = {**os.environ, "SCHEMATHESIS_HOOKS": fuzz_hooks.__name__}
    environment["PYTHONPATH"] = os.pathsep.join([str(ROOT), environment.get("PYTHONPATH", "")])
    deadline = time.monotonic() + STATEFUL_SECONDS
    passes = 0
    while set(STATEFUL_CALLED) != every and time.monotonic() < deadline:
        passes += 1
        events = tmp_path / f"stateful-{passes}.ndjson"
        run = subprocess.run(
            [
                str(Path(sys.executable).with_name("schemathesis")),
                f"--config-file={config}",
                "run",
                f"{served}/openapi.json",
                "--phases=stateful",
                "--checks=" + ",".join(check.__name__ for check in CHECKS[:-1]),
                f"--header=Authorization: Bearer {TEST_ADMIN_TOKEN}",
                f"--max-examples={STATEFUL_SCENARIOS}",
                "--report=ndjson",
                f"--report-ndjson-path={events}",
                "--no-color",
            ],
            cwd=tmp_path,  # its cache goes there, not into the repository
            env=environment,
            capture_output=True,
            text=True,
            timeout=max(deadline - time.monotonic(), 60),
            check=False,
        )
        assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-2000:]
        covered = re.search(r"API Links: +(\d+) covered", run.stdout)
        assert covered is not None and int(covered[1]) > 0, run.stdout[-3000:]
        STATEFUL_CALLED.update(called_operations(events))
    missing = every - set(STATEFUL_CALLED)
    assert missing == set(), f"after {passes} stateful passes, never called: {sorted(missing)}"


def called_operations(events: Path) -> Counter[str]:
    """`METHOD /path` of every request the stateful phase sent, from its NDJSON report."""
    called: Counter[str] = Counter()
    for line in events.read_text("utf-8").splitlines():
        finished = json.loads(line).get("ScenarioFinished")
        if finished is None:
            continue
        for case in (finished["recorder"].get("cases") or {}).values():
            called[f"{case['value']['method']} {case['value']['path']}"] += 1
    return called


def test_the_fuzzer_reached_every_operation() -> None:
    """Runs after the two above (file order): each operation got its cases."""
    every = {f"{op.method} {op.path}" for op in OPERATIONS}
    assert every - set(CASES) == set(), "operations the fuzzer never called"
    assert all(CASES[label] >= EXAMPLES_PER_OPERATION // 3 for label in every), CASES


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
