"""Turning request bodies and query strings into pydantic models, with 422s that name the
failing fields."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from memory.entrypoints.http.errors import RequestInvalid

M = TypeVar("M", bound=BaseModel)


def _fields(exc: ValidationError, prefix: str = "") -> list[dict[str, str]]:
    out = []
    for err in exc.errors(include_url=False):
        path = ".".join(str(p) for p in err["loc"]) or "body"
        out.append({"field": f"{prefix}{path}", "reason": err["msg"]})
    return out


async def parse_body(request: Request, model: type[M]) -> M:
    raw = await request.body()
    try:
        data: Any = json.loads(raw) if raw else None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RequestInvalid([{"field": "body", "reason": f"not valid JSON: {exc}"}]) from exc
    except RecursionError as exc:
        # json.loads recurses once per nesting level; thousands of `[` exhaust the stack.
        raise RequestInvalid([{"field": "body", "reason": "JSON nested too deeply"}]) from exc
    if not isinstance(data, dict):
        raise RequestInvalid([{"field": "body", "reason": "must be a JSON object"}])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestInvalid(_fields(exc)) from exc


def parse_query(request: Request, model: type[M]) -> M:
    params = request.query_params
    data: dict[str, Any] = {}
    for key in params:
        values = params.getlist(key)
        data[key] = values if len(values) > 1 else values[0]
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestInvalid(_fields(exc)) from exc


def validate(model: type[M], data: Any) -> M:
    """Validate already-decoded data (e.g. path parameters)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestInvalid(_fields(exc)) from exc
