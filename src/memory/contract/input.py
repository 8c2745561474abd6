"""The input rule every request model follows (docs/adr/0040-one-rule-for-request-input.md),
as far as it is pure: the base models, the text-typed query values and the problem list of a
failed validation. Applying it to an HTTP request is `memory.entrypoints.http.parsing`.

- Bodies are strict JSON: a boolean is not a number, a string is not a number and a number
  is not a string (`{"days": true}` and `{"days": "30"}` are refused). Date-times are the one
  exception: JSON has no date type, so they are ISO 8601 strings (and only strings).
- Query strings and path segments are text by nature: integers in them are decimal text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from memory.domain.history.chat_input import PATTERN_RULES

# NUL (PostgreSQL text refuses it) and lone UTF-16 surrogates (not encodable as UTF-8).
UNSAFE_TEXT = re.compile("[\x00\ud800-\udfff]")
# Failing fields named in a 422's message; `details.fields` lists them all.
FIELDS_IN_MESSAGE = 5
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


def _decimal_number_text(value: Any) -> Any:
    if isinstance(value, str) and not _DECIMAL_NUMBER.fullmatch(value):
        raise ValueError("must be a decimal number such as 2.5")
    return value


_DECIMAL_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
# A number in a query string: decimal digits with an optional fraction and exponent (no sign,
# "nan" or "inf").
QueryNumber = Annotated[float, BeforeValidator(_decimal_number_text)]


# Marks a field whose JSON schema the OpenAPI document replaces with a named component (or
# null): a field the domain validates itself, so that its pydantic type stays `dict`.
COMPONENT_KEY = "x-memory-component"


def nullable_ref(schema: str) -> dict[str, Any]:
    return {COMPONENT_KEY: schema}


def unsafe_text_reason(text: str) -> str | None:
    """Why `text` breaks the text rule (NUL, a lone surrogate), or None: the reason a 422
    and the command line give for the field or argument that holds it."""
    # Substring search and the UTF-8 codec run at memory speed; a regular expression over a
    # megabytes-long string would hold the GIL ten times longer.
    if "\x00" in text:
        return "must not contain NUL characters"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "must not contain lone surrogates (not valid Unicode text)"
    return None


def escaped(text: str) -> str:
    """`text` with NUL and lone surrogates written as `\\uXXXX`: safe in JSON and logs."""
    return UNSAFE_TEXT.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def field_label(parts: Iterable[Any]) -> str:
    """A dotted field path safe to put in a JSON answer and a log line (a key that holds a
    lone surrogate or NUL is shown escaped, never echoed raw)."""
    return ".".join(escaped(str(p)) for p in parts)


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


def invalid_request_message(fields: list[dict[str, str]]) -> str:
    """The message of a 422 `validation_error`, as the server words it and the client
    repeats it when it refuses an argument before sending."""
    summary = "; ".join(f"{f['field']}: {f['reason']}" for f in fields[:FIELDS_IN_MESSAGE])
    return f"invalid request: {summary}"


# Rules the use cases enforce (with their own messages, naming the field) that the schema
# states too, so that a client reading `/openapi.json` knows them (docs/adr/0110). Only
# the JSON schema carries them: validation stays with the domain's rules. Each is a regex
# in the common subset of ECMA-262 and Python. "Blank" is Python's `str.strip()`, which
# also strips U+001C-U+001F and U+0085 (ECMA's `\s` does not: the contract fuzz sent a
# sender of "\u001f" that the schema allowed and the use case refused), so those are
# named beside `\s`.
_BLANK = r"\s\x1c-\x1f\x85"
NOT_BLANK_NO_NUL = rf"^[^\x00]*[^{_BLANK}\x00][^\x00]*$"
NO_NUL = r"^[^\x00]*$"
NOT_BLANK_NO_CONTROL = rf"^[^\x00-\x1f\x7f]*[^{_BLANK}\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"


def stated(**schema: Any) -> dict[str, Any]:
    """`Field(json_schema_extra=stated(maxLength=100))`: in the schema, not in validation.
    Keys are JSON Schema's (`maxLength`, `pattern`, `minimum`, `format`)."""
    return schema
