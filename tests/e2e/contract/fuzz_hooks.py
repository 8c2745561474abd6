"""What the contract fuzzer generates and checks beyond schemathesis's own, for both of its
runs (the positive phases and the stateful one), which run in schemathesis's CLI and load
this module through `SCHEMATHESIS_HOOKS` (`schemathesis_cli.run_schemathesis`).

Instants from a month ago to a little ahead: most fall where the service accepts them, so
requests get past the clock rules to what they are about (an event's time, a key's expiry,
a filter's bounds), and a chain of linked requests gets past its first step (an ingest that
succeeds) to the operations its answer leads to."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import schemathesis
from hypothesis import strategies as st
from schemathesis.checks import positive_data_acceptance
from schemathesis.core.failures import Failure

schemathesis.openapi.format(
    "date-time",
    st.integers(-30 * 86_400, 240).map(
        lambda seconds: (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()
    ),
)

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


@schemathesis.check
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
