"""Answers on the wire: every JSON answer of a `/v1` route is a `memory.contract` response
model (docs/adr/0087-answers-built-from-the-contract.md), the models the OpenAPI document is
generated from. A field the model lacks cannot be sent (the constructors are checked by mypy
and validate at run time) and a field added to a model is on the wire once a route fills it.

Rendering keeps the bytes the routes sent before they used the models: `datetime.isoformat()`
(`+00:00`, not pydantic's `Z`) and the standard library's float text (`5e-05`), the way
Starlette's `JSONResponse` writes JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from starlette.background import BackgroundTask
from starlette.responses import Response

from memory.contract.responses import Answer


def _wire_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not part of the wire format")


def wire(body: Answer) -> dict[str, Any]:
    """`body` as JSON-ready data, as the HTTP answer holds it (the CLI's `--json`)."""
    data: dict[str, Any] = json.loads(render(body))
    return data


def render(body: Answer) -> bytes:
    """The JSON text of `body`, as Starlette's `JSONResponse` writes JSON."""
    return json.dumps(
        body.model_dump(by_alias=True),
        ensure_ascii=False,
        allow_nan=False,
        indent=None,
        separators=(",", ":"),
        default=_wire_value,
    ).encode("utf-8")


class AnswerResponse(Response):
    """A response whose body is a contract model."""

    media_type = "application/json"

    def __init__(
        self,
        body: Answer,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        background: BackgroundTask | None = None,
    ) -> None:
        super().__init__(render(body), status_code, headers, background=background)
