"""An example request and answer for every operation of the contract, shown by `/docs` and
`/openapi.json` (docs/adr/0110).

The examples in `examples.json` are what a real `memory serve` (hash models) answered to
those requests, with the one secret replaced; `scripts/openapi_examples.py` records them
again. Tests hold each to its operation's models, and the contract fuzzer sends every
example request to a running service as its first cases.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class OperationExample:
    """`path` and `query`: parameter values; `body`: the request body (None: none);
    `status` and `answer`: the success status and its body (None for 204)."""

    status: int
    path: dict[str, Any] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    answer: Any = None


@functools.cache
def operation_examples() -> dict[str, OperationExample]:
    text = resources.files("memory.contract").joinpath("examples.json").read_text("utf-8")
    return {op: OperationExample(**example) for op, example in json.loads(text).items()}
