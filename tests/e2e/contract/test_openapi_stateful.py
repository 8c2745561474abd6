"""The contract's stateful phase against a real `memory serve`: sequences that follow the
document's links (store a policy, then read, update, delete it by the id the answer gave; list
orgs, ingest into one, then search, sweep, erase; create a key, then list and revoke it) and
the links schemathesis infers, so answers about things that exist are checked too.

A module of its own (and so a `memory serve` of its own): it is the suite's longest contract
test, and under pytest-xdist it runs on one worker while the other tests, the positive phases
in test_openapi_contract.py among them, run on the others (docs/adr/0143)."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Collection
from pathlib import Path

import pytest
from tests.e2e.contract.schemathesis_cli import CHECKS, run_schemathesis

from memory.entrypoints.http.openapi import LINKS, OPERATIONS

# Every operation is on a chain from an operation the fuzzer starts with (docs/adr/0123). The
# first pass runs over every operation; each later one only over the chains that lead to the
# operations no pass has called yet (docs/adr/0161), until every operation was called (at
# most `STATEFUL_PASSES` passes, `STATEFUL_SECONDS`). Run by schemathesis's own engine (its
# CLI): hypothesis's state machine under pytest rejects a live service, which answers a replay
# differently. Its instants come from the same hooks as the positive phases.
STATEFUL_SCENARIOS = 30
FOCUSED_SCENARIOS = 10
STATEFUL_STEPS = 12
STATEFUL_PASSES = 6
STATEFUL_SECONDS = 600


@pytest.mark.long(seconds=25)
@pytest.mark.timeout(STATEFUL_SECONDS + 120)
def test_linked_sequences_keep_the_contract(
    served: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    every = {f"{op.method} {op.path}" for op in OPERATIONS}
    deadline = time.monotonic() + STATEFUL_SECONDS
    called: Counter[str] = Counter()
    passes = 0
    while set(called) != every and passes < STATEFUL_PASSES and time.monotonic() < deadline:
        focused = chains_to(every - set(called)) if passes else set()
        # An operation no link leads to or from is outside the stateful engine's reach.
        assert not passes or linked(focused), f"on no link: {sorted(every - set(called))}"
        passes += 1
        run = run_schemathesis(
            served,
            tmp_path,
            name=f"stateful-{passes}",
            phases=("stateful",),
            checks=CHECKS,
            max_examples=FOCUSED_SCENARIOS if focused else STATEFUL_SCENARIOS,
            timeout=max(deadline - time.monotonic(), 60),
            config=f"[phases.stateful]\nmax-steps = {STATEFUL_STEPS}\n",
            operation_ids=sorted(focused),
        )
        covered = re.search(r"API Links: +(\d+) covered", run.output)
        assert covered is not None and int(covered[1]) > 0, run.output[-3000:]
        called.update(run.called)
    record_property("contract_stateful_requests", dict(called))
    missing = every - set(called)
    assert missing == set(), f"after {passes} stateful passes, never called: {sorted(missing)}"


def chains_to(labels: Collection[str]) -> set[str]:
    """The ids of the operations `labels` (`METHOD /path`) name and of every operation a link
    leads from to one of them, transitively: the chains from a start to each of them."""
    sources: dict[str, set[str]] = {}
    for source, links in LINKS.items():
        for target, _, _ in links:
            sources.setdefault(target, set()).add(source)
    wanted = [op.operation_id for op in OPERATIONS if f"{op.method} {op.path}" in labels]
    chains: set[str] = set()
    while wanted:
        operation_id = wanted.pop()
        if operation_id not in chains:
            chains.add(operation_id)
            wanted.extend(sources.get(operation_id, ()))
    return chains


def linked(operation_ids: Collection[str]) -> bool:
    """Whether a link of the document leads from one of `operation_ids` to another."""
    return any(
        target in operation_ids
        for source in operation_ids
        for target, _, _ in LINKS.get(source, ())
    )
