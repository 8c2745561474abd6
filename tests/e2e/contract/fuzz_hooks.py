"""What the contract fuzzer generates beyond the schema, for both of its runs: the pytest
phases (imported by test_openapi_contract.py) and the stateful phase, which runs in
schemathesis's own CLI and loads this module through `SCHEMATHESIS_HOOKS`.

Instants from a month ago to a little ahead: most fall where the service accepts them, so
requests get past the clock rules to what they are about (an event's time, a key's expiry,
a filter's bounds), and a chain of linked requests gets past its first step (an ingest that
succeeds) to the operations its answer leads to."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import schemathesis
from hypothesis import strategies as st

schemathesis.openapi.format(
    "date-time",
    st.integers(-30 * 86_400, 240).map(
        lambda seconds: (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()
    ),
)
