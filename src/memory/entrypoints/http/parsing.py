"""Turning request bodies, query strings and path parameters into pydantic models, with 422s
that name the failing fields. One rule for every route of both contexts
(docs/adr/0040-one-rule-for-request-input.md):

- Bodies are strict JSON: a boolean is not a number, a string is not a number and a number
  is not a string (`{"days": true}` and `{"days": "30"}` are 422). Date-times are the one
  exception: JSON has no date type, so they are ISO 8601 strings (and only strings).
- Query strings and path segments are text by nature: integers in them are decimal text.
- No text anywhere in a request may hold NUL (PostgreSQL text refuses it) or a lone UTF-16
  surrogate (it cannot be encoded as UTF-8): refused up front, naming the field, before any
  model, domain rule or database sees the value.
- A body that is not JSON the service can read (malformed, nested too deeply, a number with
  more digits than Python converts, NaN/Infinity) is 422 naming the body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Any, TypeVar

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from starlette.requests import Request

from memory.domain.history.chat_input import PATTERN_RULES
from memory.entrypoints.http.errors import RequestInvalid

M = TypeVar("M", bound=BaseModel)

# Python refuses to convert longer digit strings to int (sys.get_int_max_str_digits(), a guard
# against quadratic-time conversion); a body holding one is refused before it is converted.
JSON_INTEGER_MAX_DIGITS = 4300
_UNSAFE_TEXT = re.compile("[\x00\ud800-\udfff]")
_DECIMAL = re.compile(r"-?[0-9]+")
# pydantic would read "1700000000" as Unix seconds: an instant must be written as a date.
_ISO_DATE_START = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class StrictBody(BaseModel):
    """Base of every request body model: strict JSON types, unknown fields refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class QueryParams(BaseModel):
    """Base of every query-string and path model: values are text, converted by the field
    types (`QueryInt`, `Instant`); unknown parameters are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _iso_text(value: Any) -> Any:
    # A datetime object never comes out of JSON: it is Python code (`memory.client`)
    # building the model, and is taken as it is.
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _ISO_DATE_START.match(value):
        raise ValueError("must be an ISO 8601 date-time string")
    return value


def _decimal_text(value: Any) -> Any:
    if isinstance(value, str) and not _DECIMAL.fullmatch(value):
        raise ValueError("must be an integer in decimal digits")
    return value


# A timezone-aware ISO 8601 string (the one non-strict type of a body); the accepted range of
# instants is a domain rule (memory.domain.time_range), checked by the use cases.
Instant = Annotated[AwareDatetime, Field(strict=False), BeforeValidator(_iso_text)]
# An integer in a query string: decimal digits only (no "+1", "1_000", "1.0" or spaces).
QueryInt = Annotated[int, BeforeValidator(_decimal_text)]


# Marks a field whose JSON schema the OpenAPI document replaces with a named component (or
# null): a field the domain validates itself, so that its pydantic type stays `dict`.
COMPONENT_KEY = "x-memory-component"


def nullable_ref(schema: str) -> dict[str, Any]:
    return {COMPONENT_KEY: schema}


class _UnsafeText(Exception):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


class _NumberTooLong(ValueError):
    pass


def field_label(parts: Iterable[Any]) -> str:
    """A dotted field path safe to put in a JSON answer and a log line (a key that holds a
    lone surrogate or NUL is shown escaped, never echoed raw)."""
    return ".".join(_escaped(str(p)) for p in parts)


def _escaped(text: str) -> str:
    return _UNSAFE_TEXT.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _text_problem(text: str) -> str | None:
    found = _UNSAFE_TEXT.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "must not contain NUL characters"
    return "must not contain lone surrogates (not valid Unicode text)"


def _check_text(value: Any, path: tuple[Any, ...]) -> None:
    """Walk decoded JSON (or query/path values) and refuse the first unsafe text, keys
    included. Iterative, so that the depth json.loads allowed cannot exhaust the stack."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            problem = _text_problem(item)
            if problem is not None:
                raise _UnsafeText(field_label(where) or "body", problem)
        elif isinstance(item, dict):
            for key, child in item.items():
                problem = _text_problem(key)
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


def field_problems(exc: ValidationError, prefix: str = "") -> list[dict[str, str]]:
    """Every failing field, each with a reason a person reads: a pattern is described in
    words (`PATTERN_RULES`), never shown as a regex; no pydantic URLs."""
    out = []
    for err in exc.errors(include_url=False):
        path = field_label(err["loc"]) or "body"
        reason = err["msg"]
        if err["type"] == "string_pattern_mismatch":
            pattern = str((err.get("ctx") or {}).get("pattern", ""))
            reason = PATTERN_RULES.get(pattern, "has a form this field does not allow")
        out.append({"field": f"{prefix}{path}", "reason": reason})
    return out


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
        reason = f"not valid JSON: {_escaped(str(exc))}"
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
