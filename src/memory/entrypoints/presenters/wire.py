"""An answer model as the bytes on the wire (docs/adr/0087-answers-built-from-the-contract.md).

Rendering keeps the bytes the routes sent before they used the models: `datetime.isoformat()`
(`+00:00`, not pydantic's `Z`) and the standard library's float text (`5e-05`), the way
Starlette's `JSONResponse` writes JSON. The HTTP answer and the CLI's `--json` both use it.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from uuid import UUID

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
