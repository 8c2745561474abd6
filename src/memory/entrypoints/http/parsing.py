"""Applying the input rule (`memory.contract.input`, docs/adr/0040-one-rule-for-request-input.md)
to a Starlette request: bodies, query strings and path parameters become contract models, or a
422 that names the failing fields.

- No text anywhere in a request may hold NUL (PostgreSQL text refuses it) or a lone UTF-16
  surrogate (it cannot be encoded as UTF-8): refused up front, naming the field, before any
  model, domain rule or database sees the value.
- A body that is not JSON the service can read (malformed, nested too deeply, a number with
  more digits than Python converts, NaN/Infinity) is 422 naming the body.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from memory.contract.input import escaped, field_label, field_problems, unsafe_text_reason
from memory.entrypoints.http.errors import RequestInvalid

M = TypeVar("M", bound=BaseModel)

# Python refuses to convert longer digit strings to int (sys.get_int_max_str_digits(), a guard
# against quadratic-time conversion); a body holding one is refused before it is converted.
JSON_INTEGER_MAX_DIGITS = 4300


class _UnsafeText(Exception):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


class _NumberTooLong(ValueError):
    pass


def _check_text(value: Any, path: tuple[Any, ...]) -> None:
    """Walk decoded JSON (or query/path values) and refuse the first unsafe text, keys
    included. Iterative, so that the depth json.loads allowed cannot exhaust the stack."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            problem = unsafe_text_reason(item)
            if problem is not None:
                raise _UnsafeText(field_label(where) or "body", problem)
        elif isinstance(item, dict):
            for key, child in item.items():
                problem = unsafe_text_reason(key)
                if problem is not None:
                    raise _UnsafeText(field_label((*where, key)), f"keys {problem}")
                stack.append((child, (*where, key)))
        elif isinstance(item, list):
            stack.extend((child, (*where, i)) for i, child in enumerate(item))


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > JSON_INTEGER_MAX_DIGITS:
        raise _NumberTooLong(f"a number has more than {JSON_INTEGER_MAX_DIGITS} digits")
    return int(text)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def decode_json(raw: bytes) -> Any:
    """The JSON value of a request body, or a 422 naming the body."""
    try:
        data: Any = (
            json.loads(raw, parse_int=_parse_int, parse_constant=_refuse_constant) if raw else None
        )
    except RecursionError as exc:
        # json.loads recurses once per nesting level; thousands of `[` exhaust the stack.
        raise RequestInvalid([{"field": "body", "reason": "JSON nested too deeply"}]) from exc
    except _NumberTooLong as exc:
        raise RequestInvalid([{"field": "body", "reason": str(exc)}]) from exc
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, NaN/Infinity
        reason = f"not valid JSON: {escaped(str(exc))}"
        raise RequestInvalid([{"field": "body", "reason": reason}]) from exc
    return data


def _checked(data: Any) -> None:
    try:
        _check_text(data, ())
    except _UnsafeText as exc:
        raise RequestInvalid([{"field": exc.field, "reason": exc.reason}]) from exc


async def parse_body(request: Request, model: type[M]) -> M:
    data = decode_json(await request.body())
    if not isinstance(data, dict):
        raise RequestInvalid([{"field": "body", "reason": "must be a JSON object"}])
    _checked(data)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestInvalid(field_problems(exc)) from exc


def parse_query(request: Request, model: type[M]) -> M:
    params = request.query_params
    data: dict[str, Any] = {}
    for key in params:
        values = params.getlist(key)
        data[key] = values if len(values) > 1 else values[0]
    return validate(model, data)


def parse_path(request: Request, model: type[M]) -> M:
    """The route's path parameters as `model`."""
    return validate(model, dict(request.path_params))


def validate(model: type[M], data: Any) -> M:
    """Validate already-decoded data (query and path parameters)."""
    _checked(data)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestInvalid(field_problems(exc)) from exc
