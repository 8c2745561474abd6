"""Applying the input rule (`memory.contract.input`, docs/adr/0040-one-rule-for-request-input.md)
to a Starlette request: bodies, query strings and path parameters become contract models, or a
422 that names the failing fields.

- No text anywhere in a request may hold NUL (PostgreSQL text refuses it) or a lone UTF-16
  surrogate (it cannot be encoded as UTF-8): refused up front, naming the field, before any
  model, domain rule or database sees the value.
- A body that is not JSON the service can read (malformed, nested too deeply, a number with
  more digits than Python converts, NaN/Infinity) is 422 naming the body.
- One 422 names every failing field of a request (`RequestChecks`): its path, query string
  and body against their contract models (types, shapes), and, when one of those failed,
  the use case's rules over the fields that passed (docs/adr/0088-one-422-for-every-field.md).
- A body is read off the event loop: the size rules its model declares are checked on its
  bytes first (`body_scan`) when it may hold more values than any valid body, then it is
  decoded, checked and validated in a worker thread, a few bodies at a time
  (docs/adr/0096-request-bodies-off-the-event-loop-and-scanned-before-decoding.md).
"""

from __future__ import annotations

import codecs
import contextlib
import json
from collections.abc import Callable, Mapping
from functools import cache
from typing import Annotated, Any, TypeVar

import anyio
from anyio.lowlevel import RunVar
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from starlette.requests import Request

from memory.contract.input import escaped, field_label, field_problems, unsafe_text_reason
from memory.domain.errors import InvalidInput
from memory.entrypoints.http.body_scan import (
    MAX_BODY_VALUES,
    Shape,
    body_shape,
    scan_body,
    with_max_chars,
)
from memory.entrypoints.http.errors import RequestInvalid

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

# Python refuses to convert longer digit strings to int (sys.get_int_max_str_digits(), a guard
# against quadratic-time conversion); a body holding one is refused before it is converted.
JSON_INTEGER_MAX_DIGITS = 4300
# Worker threads reading bodies at once. Decoding and validating hold the GIL, so more
# threads would add no throughput; fewer than the default thread pool's 40 keep hostile
# bodies queueing among themselves, never for the threads database calls run in.
BODY_READERS = 2
_readers: RunVar[anyio.CapacityLimiter] = RunVar("memory_body_readers")
# Bytes counted per call while bounding a body's values: the GIL is let go between slices.
_COUNT_SLICE_BYTES = 256 * 1024
# A body this large has its size rules checked on its bytes whatever values it may hold: one
# of few values and long strings (an 8 MB text) is checked on its first MiB as it arrives,
# rather than counted on the event loop to its end and decoded whole before a rule is
# looked at (docs/adr/0146-a-refused-body-is-not-received.md).
SCAN_AFTER_BYTES = 1024 * 1024


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


async def off_the_loop(run: Callable[..., T], *args: Any) -> T:
    """`run(*args)` in a body reader's thread (at most `BODY_READERS` at once)."""
    try:
        readers = _readers.get()
    except LookupError:
        readers = anyio.CapacityLimiter(BODY_READERS)
        _readers.set(readers)
    return await anyio.to_thread.run_sync(run, *args, limiter=readers)


async def received_body(request: Request, shape: Shape) -> bytes:
    """The body's bytes, received chunk by chunk. As soon as what has arrived may hold more
    values than any valid body (`MAX_BODY_VALUES`, counted per chunk in C) or reaches
    `SCAN_AFTER_BYTES`, its size rules are checked on those bytes, once, in a body reader's
    thread: a body that breaks one in its first bytes (an 8 MiB array breaks the 1,000-item
    rule in its first 4 KiB) is refused then, with the rest never received (the answer
    closes the connection, `body_limit`). What the scan finds in a prefix it finds in the
    whole body: every limit it checks only grows as it reads on (a string cut by the end of
    the prefix is at least as long as its part there), and what it cannot follow (a token
    cut there) it leaves alone. Bodies in UTF-16 or UTF-32 are only checked whole
    (`read_json`)."""
    chunks: list[bytes] = []
    values = 1
    size = 0
    checked = False
    # Closed on a refusal too: a generator left half-read is finalised by the event loop
    # later (trio warns about it).
    async with contextlib.aclosing(request.stream()) as stream:
        async for chunk in stream:
            chunks.append(chunk)
            if checked:
                continue
            size += len(chunk)
            values += chunk.count(b",") + chunk.count(b"[") + chunk.count(b"{")
            if values > MAX_BODY_VALUES or size >= SCAN_AFTER_BYTES:
                checked = True
                prefix = b"".join(chunks)
                if values <= MAX_BODY_VALUES:
                    prefix = prefix[:SCAN_AFTER_BYTES]  # as `read_json` reads the whole body
                if _plain_utf8(prefix):
                    problem = await off_the_loop(scan_body, prefix, shape)
                    if problem is not None:
                        raise RequestInvalid([{"field": problem.field, "reason": problem.reason}])
    return b"".join(chunks)


def read_json(raw: bytes, shape: Shape) -> Any:
    """The JSON value of a body of `shape`, or a 422: naming the field whose size rule it
    breaks (`body_scan`: the whole body when it may hold more values than any valid one,
    else its first `SCAN_AFTER_BYTES`, as `received_body` checks them while they arrive), or
    naming the body when it is not JSON the service can read. Blocking: call it in a worker
    thread."""
    problem = None
    if _may_hold_more_values(raw, MAX_BODY_VALUES):
        problem = scan_body(_as_utf8(raw), shape)
    elif len(raw) >= SCAN_AFTER_BYTES:
        problem = scan_body(_as_utf8(raw)[:SCAN_AFTER_BYTES], shape)
    if problem is not None:
        raise RequestInvalid([{"field": problem.field, "reason": problem.reason}])
    return decode_json(raw)


def _may_hold_more_values(raw: bytes, limit: int) -> bool:
    """Whether `raw` may hold more than `limit` JSON values, counted in C a slice at a time.

    Every value but the top one is an item of a list or an object; the items of a container
    are one more than the commas between them, so there are at most as many as commas, `[`
    and `{` together (those inside strings make this an overestimate, never an
    underestimate; UTF-16 and UTF-32 bodies hold each of those bytes too)."""
    values = 1
    for start in range(0, len(raw), _COUNT_SLICE_BYTES):
        end = start + _COUNT_SLICE_BYTES
        values += raw.count(b",", start, end) + raw.count(b"[", start, end)
        values += raw.count(b"{", start, end)
        if values > limit:
            return True
    return False


def _as_utf8(raw: bytes) -> bytes:
    """The body as UTF-8 without a byte order mark, as the scan reads it; `json.loads`
    takes UTF-16 and UTF-32 too. Undecodable bytes are left for the decoder to name."""
    if _plain_utf8(raw):
        return raw
    try:
        return raw.decode(json.detect_encoding(raw), "surrogatepass").encode(
            "utf-8", "surrogatepass"
        )
    except ValueError:
        return raw


def _plain_utf8(raw: bytes) -> bool:
    """Whether `raw` is read as it is: no byte order mark, no NUL in its first 4 bytes (a
    UTF-16 or UTF-32 body has one there)."""
    return raw[:4].count(0) == 0 and not raw.startswith(codecs.BOM_UTF8)


def may_hold_unsafe_text(raw: bytes) -> bool:
    """Whether decoding `raw` can give text with NUL or a lone surrogate: only through a
    `\\u` escape, a UTF-8 sequence starting with 0xED (the surrogates' lead byte, which
    `json.loads` decodes with "surrogatepass") or a UTF-16/32 body (which has NUL bytes).
    A body with none of them skips the walk over its values."""
    return b"\\u" in raw or b"\xed" in raw or b"\x00" in raw


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


async def parse_body(request: Request, model: type[M], *, when_empty: M | None = None) -> M:
    """The body as `model`, read off the event loop, or a 422 naming the failing fields.
    `when_empty`: the value of an empty (or blank) body, for a route whose body is
    optional."""
    raw = await received_body(request, body_shape(model))
    return await off_the_loop(parsed_body, raw, model, when_empty)


def parsed_body(raw: bytes, model: type[M], when_empty: M | None = None) -> M:
    """`parse_body` once the bytes are in. Blocking: call it in a worker thread."""
    if when_empty is not None and not raw.strip():
        return when_empty
    data = _json_object(raw, body_shape(model))
    if may_hold_unsafe_text(raw):
        _checked(data)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestInvalid(field_problems(exc)) from exc


def _json_object(raw: bytes, shape: Shape) -> dict[str, Any]:
    data = read_json(raw, shape)
    if not isinstance(data, dict):
        raise RequestInvalid([{"field": "body", "reason": "must be a JSON object"}])
    return data


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


class RequestChecks:
    """Every failing field of one request, found before any is reported.

    The contract models check types and shapes; the use cases check their rules (a
    threshold's range, a filter's keys, an instant in the future) once the types are right.
    Run one after the other, a request with a type error in one field and a rule error in
    another would be told about the first only, fix it, and be refused again. So the route
    parses every part of the request here, and when any part failed it runs the use case's
    rule check (pure, no I/O) over the fields that passed, then raises one `RequestInvalid`
    naming them all. When every part passed, nothing is checked twice: the use case checks
    its rules as it runs.
    """

    def __init__(self) -> None:
        self._problems: list[dict[str, str]] = []
        self._typed: set[str] = set()
        self.valid: dict[str, Any] = {}
        """Validated values of the body's or query string's fields that passed."""
        self.raw: dict[str, Any] = {}
        """The decoded body, for a rule check over the well-typed items of a list field."""

    @property
    def failed(self) -> bool:
        return bool(self._problems)

    def path(self, request: Request, model: type[M]) -> M | None:
        """The path parameters `model` names (a route's path may have more)."""
        names = model.model_fields
        data = {k: v for k, v in request.path_params.items() if k in names}
        return self._checked(model, data, keep=False)

    def query(self, request: Request, model: type[M]) -> M | None:
        params = request.query_params
        data: dict[str, Any] = {}
        for key in params:
            values = params.getlist(key)
            data[key] = values if len(values) > 1 else values[0]
        return self._checked(model, data, keep=True)

    async def body(
        self, request: Request, model: type[M], *, max_chars: Mapping[str, int] | None = None
    ) -> M | None:
        """The body as `model` (read off the event loop), or None and its problems kept.
        `max_chars`: length limits of top-level string fields that a setting decides (the
        use case checks them; given here, its size rules check them on the bytes too)."""
        shape = with_max_chars(body_shape(model), max_chars or {})
        try:
            raw = await received_body(request, shape)
        except RequestInvalid as exc:
            self._unread(exc)
            return None
        return await off_the_loop(self._body, raw, model, shape)

    def _unread(self, exc: RequestInvalid) -> None:
        self._problems.extend(exc.details["fields"])
        # Not read (or too large to read): no rule check runs over it.
        self._typed.add("body")

    def _body(self, raw: bytes, model: type[M], shape: Shape) -> M | None:
        try:
            data = _json_object(raw, shape)
        except RequestInvalid as exc:
            self._unread(exc)
            return None
        self.raw = data
        return self._checked(model, data, keep=True, text=may_hold_unsafe_text(raw))

    async def rules(self, check: Callable[[], object]) -> None:
        """Run a use case's rule check (in a worker thread: it may look at every item of a
        list) if an earlier part failed. Its problems on a field that already has one (a
        rule over a value of the wrong type) are left out."""
        if not self.failed or "body" in self._typed:
            return
        await off_the_loop(self._rules, check)

    def _rules(self, check: Callable[[], object]) -> None:
        try:
            check()
        except InvalidInput as exc:
            self._problems.extend(
                {"field": field, "reason": reason}
                for field, reason in exc.problems
                if not self._names_a_failed_field(field)
            )

    def raise_any(self) -> None:
        if self._problems:
            raise RequestInvalid(self._problems)

    def _checked(
        self, model: type[M], data: dict[str, Any], *, keep: bool, text: bool = True
    ) -> M | None:
        try:
            if text:
                _check_text(data, ())
        except _UnsafeText as exc:
            self._problems.append({"field": exc.field, "reason": exc.reason})
            self._typed.add(exc.field)
            return None
        try:
            parsed = model.model_validate(data)
        except ValidationError as exc:
            problems = field_problems(exc)
            self._problems.extend(problems)
            self._typed.update(p["field"] for p in problems)
            if keep:
                self.valid.update(well_typed_fields(model, data, exc))
            return None
        if keep:
            self.valid.update({name: getattr(parsed, name) for name in type(parsed).model_fields})
        return parsed

    def _names_a_failed_field(self, field: str) -> bool:
        return any(
            field == typed or field.startswith(f"{typed}.") or typed.startswith(f"{field}.")
            for typed in self._typed
        )


@cache
def _field_types(model: type[BaseModel]) -> Mapping[str, TypeAdapter[Any]]:
    # Each field alone, under its model's strictness, so that the fields that passed can be
    # had without the ones that failed.
    config = ConfigDict(strict=model.model_config.get("strict", False))
    types: dict[str, TypeAdapter[Any]] = {}
    for name, field in model.model_fields.items():
        annotated: Any = Annotated[field.annotation, field]
        types[name] = TypeAdapter(annotated, config=config)
    return types


def well_typed_fields(
    model: type[BaseModel], data: Mapping[str, Any], exc: ValidationError
) -> dict[str, Any]:
    """The validated values of the top-level fields of `data` that `exc` does not name."""
    failed = {err["loc"][0] for err in exc.errors() if err["loc"]}
    types = _field_types(model)
    out: dict[str, Any] = {}
    for name, value in data.items():
        if name in types and name not in failed:
            try:
                out[name] = types[name].validate_python(value)
            except ValidationError:
                continue
    return out


def well_typed_items(model: type[M], items: Any) -> dict[int, M]:
    """The items of a JSON list that pass `model`, by their index (the others are reported
    by the list's own model)."""
    if not isinstance(items, list):
        return {}
    out: dict[int, M] = {}
    for index, item in enumerate(items):
        try:
            out[index] = model.model_validate(item)
        except ValidationError:
            continue
    return out
