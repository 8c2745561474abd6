"""The size rules of a request body, checked on its bytes before it is decoded
(docs/adr/0096-request-bodies-off-the-event-loop-and-scanned-before-decoding.md).

Decoding and validating JSON cost time in proportion to a body's values, and `json.loads`
and pydantic hold the GIL in C while they run: an 8 MiB array of 4 million items kept the
whole process busy for 18 s before the 1,000-event rule refused it. `scan_body` reads the
bytes token by token (a simple object member or list item in one match) against the limits
the body's contract model declares (a list's
`max_length`, a string's `max_length`), a nesting depth and a budget of values for the whole
body, and stops at the first limit broken, so that the refusal costs what the body holds up
to that point. A body within every limit holds few enough values that decoding and
validating it is short.

The scan refuses only what is certain: a list with one item too many, a string whose bytes
cannot hold so few characters, more values than any valid body holds. Anything else,
malformed JSON included, is left to the decoder and the model, whose messages are exact.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin

from annotated_types import MaxLen
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from memory.contract.input import field_label

# Objects and lists inside one another: a valid body nests at most ~35 levels (a policy's
# metadata value may nest 32, METADATA_MAX_DEPTH), and the decoder recurses once per level.
MAX_JSON_DEPTH = 64
# Values (scalars, strings, objects, lists; keys not counted) in one body. The largest valid
# bodies hold ~10,000 (an ingest of 1,000 events with every field) and fewer than 8,200 (a
# policy whose metadata is at its 16 KiB cap); this is twice the larger, and bounds what
# fields the contract does not limit (free-form metadata, unknown keys) can make the
# decoder do.
MAX_BODY_VALUES = 20_000
# A JSON string's bytes per character are at most 12 (`\ud83d\ude00`, a surrogate pair
# written as two escapes), so a string of more bytes than 12 x its limit is certainly longer.
MAX_BYTES_PER_CHARACTER = 12
# Escape sequences read per call while finding the end of a string: a string of escapes
# is read in C a slice at a time, never holding the GIL for the whole of it.
_ESCAPES_PER_STEP = 4096

_TOKEN = re.compile(rb'[ \t\n\r]*+(?:([{\[])|([}\]])|(,)|(:)|(")|([^ \t\n\r{}\[\],:"]++))')
_OPEN, _CLOSE, _COMMA, _COLON, _STRING, _SCALAR = range(1, 7)
_ESCAPE_RUN = re.compile(rb'(?:\\.[^"\\]*+){1,%d}+' % _ESCAPES_PER_STEP, re.DOTALL)
# The common case in one match: an object member whose key has no escape and whose value is
# a scalar or a string without escapes, or such a list item, with the comma or bracket after
# it. Groups: 1 key (empty for an item), 2 string value, 3 scalar value, 4 what follows.
_MEMBER = re.compile(
    rb'[ \t\n\r]*+"([^"\\]*+)"[ \t\n\r]*+:[ \t\n\r]*+'
    rb'(?:"([^"\\]*+)"|([^ \t\n\r{}\[\],:"]++))[ \t\n\r]*+([,}])'
)
_ITEM = re.compile(rb'[ \t\n\r]*+()(?:"([^"\\]*+)"|([^ \t\n\r{}\[\],:"]++))[ \t\n\r]*+([,\]])')

# What the scanner expects next.
_VALUE, _KEY, _KEY_OR_END, _AFTER_KEY, _AFTER_VALUE, _VALUE_OR_END = range(6)
# When `_MEMBER` (in an object) or `_ITEM` (in a list) may match, by `_Frame.is_object`.
_SIMPLE_NEXT = {True: (_KEY, _KEY_OR_END), False: (_VALUE, _VALUE_OR_END)}


@dataclass(frozen=True, slots=True)
class Shape:
    """What the contract allows at one place of a body: the fields of an object (None: any
    keys), the shape of a list's items and how many it may hold, a string's length. A
    limit of None is not checked here (the model or the use case checks it)."""

    fields: Mapping[str, Shape] | None = None
    items: Shape | None = None
    max_items: int | None = None
    max_chars: int | None = None


ANY = Shape()
"""Any JSON value: only the depth and the body's value budget apply."""


def with_max_chars(shape: Shape, max_chars: Mapping[str, int]) -> Shape:
    """`shape` with length limits on the top-level string fields `max_chars` names: limits a
    setting decides (a policy's content), which the contract model cannot declare."""
    if not max_chars:
        return shape
    fields = dict(shape.fields or {})
    for name, limit in max_chars.items():
        fields[name] = replace(fields.get(name, ANY), max_chars=limit)
    return replace(shape, fields=fields)


@dataclass(frozen=True, slots=True)
class SizeProblem:
    """A limit the body breaks: the field (as a 422 names it) and why."""

    field: str
    reason: str


@cache
def body_shape(model: type[BaseModel]) -> Shape:
    """The limits `model` declares, field by field (nested models and lists included)."""
    return Shape(fields={name: _field_shape(info) for name, info in model.model_fields.items()})


def _field_shape(info: FieldInfo) -> Shape:
    return _shape(info.annotation, _max_length(info.metadata))


def _shape(annotation: Any, limit: int | None) -> Shape:
    annotation, limit = _unwrapped(annotation, limit)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return body_shape(annotation)
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        return Shape(items=_shape(item, None), max_items=limit)
    if annotation is str:
        return Shape(max_chars=limit)
    return ANY


def _unwrapped(annotation: Any, limit: int | None) -> tuple[Any, int | None]:
    """The type under `Annotated[...]` and `X | None`, with the length limit found on the
    way. A union of several types is taken as any value."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation, *metadata = get_args(annotation)
            limit = _max_length(metadata) if limit is None else limit
        elif origin is Union or origin is types.UnionType:
            options = [a for a in get_args(annotation) if a is not type(None)]
            if len(options) != 1:
                return Any, None
            annotation = options[0]
        else:
            return annotation, limit


def _max_length(metadata: Any) -> int | None:
    for item in metadata:
        if isinstance(item, MaxLen):
            return item.max_length
        if isinstance(item, FieldInfo):
            found = _max_length(item.metadata)
            if found is not None:
                return found
    return None


class _Frame:
    """An object or a list being read: its shape, where it is, how many items so far."""

    __slots__ = ("count", "is_object", "key", "path", "shape")

    def __init__(self, shape: Shape, path: tuple[str | int, ...], is_object: bool) -> None:
        self.shape = shape
        self.path = path
        self.is_object = is_object
        self.count = 0
        self.key: str = ""


def scan_body(raw: bytes, shape: Shape) -> SizeProblem | None:
    """The first size rule `raw` breaks against `shape`, or None: within every limit, or not
    JSON the scan can follow (the decoder says what is wrong with it)."""
    scan = _Scan(raw)
    try:
        return scan.run(shape)
    except _NotJson:
        return None


class _NotJson(Exception):
    pass


class _Scan:
    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.values = 0
        self.top_is_object = raw.lstrip().startswith(b"{")

    def run(self, top: Shape) -> SizeProblem | None:
        raw, match = self.raw, _TOKEN.match
        stack: list[_Frame] = []
        expect = _VALUE
        pos = 0
        while True:
            if stack and expect in _SIMPLE_NEXT[stack[-1].is_object]:
                inner = stack[-1]
                simple = (_MEMBER if inner.is_object else _ITEM).match(raw, pos)
                if simple is not None:
                    problem = self._simple(inner, simple)
                    if problem is not None:
                        return problem
                    pos = simple.end()
                    if simple[4] == b",":
                        expect = _KEY if inner.is_object else _VALUE
                        continue
                    stack.pop()
                    if not stack:
                        return None
                    expect = _AFTER_VALUE
                    continue
            token = match(raw, pos)
            if token is None:
                raise _NotJson
            kind, start, pos = token.lastindex, token.start(token.lastindex or 0), token.end()
            if expect in (_VALUE, _VALUE_OR_END) and kind not in (_CLOSE, _COMMA, _COLON):
                frame = stack[-1] if stack else None
                shape, path = self._child(frame, top)
                problem = self._counted(frame, shape, path)
                if problem is not None:
                    return problem
                if kind == _OPEN:
                    if len(stack) >= MAX_JSON_DEPTH:
                        return self._too_deep(path)
                    is_object = raw[start] == ord("{")
                    stack.append(_Frame(shape, path, is_object))
                    expect = _KEY_OR_END if is_object else _VALUE_OR_END
                    continue
                if kind == _STRING:
                    end = _string_end(raw, pos)
                    # A string the bytes end in (a prefix of a body that is still
                    # arriving) is at least as long as what they hold of it.
                    size = len(raw) - pos if end is None else end - pos - 1
                    problem = _string_problem(shape, path, size)
                    if problem is not None:
                        return problem
                    if end is None:
                        raise _NotJson
                    pos = end
                expect = _AFTER_VALUE
            elif expect in (_KEY, _KEY_OR_END) and kind == _STRING:
                end = _string_end(raw, pos)
                if end is None:
                    raise _NotJson
                stack[-1].key = _key(raw[start:end])
                pos = end
                expect = _AFTER_KEY
            elif expect == _AFTER_KEY and kind == _COLON:
                expect = _VALUE
            elif expect == _AFTER_VALUE and kind == _COMMA and stack:
                expect = _KEY if stack[-1].is_object else _VALUE
            elif kind == _CLOSE and stack and expect in (_AFTER_VALUE, _KEY_OR_END, _VALUE_OR_END):
                if stack.pop().is_object != (raw[start] == ord("}")):
                    raise _NotJson
                expect = _AFTER_VALUE
            else:
                raise _NotJson
            if expect == _AFTER_VALUE and not stack:
                return None

    def _simple(self, frame: _Frame, member: re.Match[bytes]) -> SizeProblem | None:
        """Count a member or item `_MEMBER` or `_ITEM` matched, as `_counted` would."""
        self.values += 1
        where: str | int
        if frame.is_object:
            try:
                key = member[1].decode()
            except UnicodeDecodeError as exc:
                raise _NotJson from exc
            fields = frame.shape.fields
            shape = ANY if fields is None else fields.get(key, ANY)
            where = key
        else:
            where = frame.count
            shape = frame.shape.items or ANY
        if self.values > MAX_BODY_VALUES:
            return SizeProblem(
                self._top_field((*frame.path, where)),
                f"the body holds more than {MAX_BODY_VALUES} JSON values",
            )
        if not frame.is_object:
            frame.count += 1
            limit = frame.shape.max_items
            if limit is not None and frame.count > limit:
                return SizeProblem(
                    field_label(frame.path) or "body", f"List should have at most {limit} items"
                )
        if shape.max_chars is not None and member.start(2) >= 0:
            return _string_problem(shape, (*frame.path, where), member.end(2) - member.start(2))
        return None

    def _child(self, frame: _Frame | None, top: Shape) -> tuple[Shape, tuple[str | int, ...]]:
        if frame is None:
            return top, ()
        if frame.is_object:
            fields = frame.shape.fields
            shape = ANY if fields is None else fields.get(frame.key, ANY)
            return shape, (*frame.path, frame.key)
        return frame.shape.items or ANY, (*frame.path, frame.count)

    def _counted(
        self, frame: _Frame | None, shape: Shape, path: tuple[str | int, ...]
    ) -> SizeProblem | None:
        self.values += 1
        if self.values > MAX_BODY_VALUES:
            return SizeProblem(
                self._top_field(path), f"the body holds more than {MAX_BODY_VALUES} JSON values"
            )
        if frame is not None and not frame.is_object:
            frame.count += 1
            limit = frame.shape.max_items
            if limit is not None and frame.count > limit:
                return SizeProblem(
                    field_label(frame.path) or "body",
                    f"List should have at most {limit} items",
                )
        return None

    def _too_deep(self, path: tuple[str | int, ...]) -> SizeProblem:
        return SizeProblem(
            self._top_field(path), f"JSON nested too deeply (more than {MAX_JSON_DEPTH} levels)"
        )

    def _top_field(self, path: tuple[str | int, ...]) -> str:
        """The top-level field a problem is in (a path as deep as the nesting limit is no
        name a person reads), or the body when it is not an object."""
        return field_label(path[:1]) if self.top_is_object and path else "body"


def _string_problem(shape: Shape, path: tuple[str | int, ...], size: int) -> SizeProblem | None:
    limit = shape.max_chars
    if limit is not None and size > MAX_BYTES_PER_CHARACTER * limit:
        return SizeProblem(
            field_label(path) or "body", f"String should have at most {limit} characters"
        )
    return None


def _string_end(raw: bytes, pos: int) -> int | None:
    """Where the string whose opening quote ends at `pos` ends (after its closing quote), or
    None if it does not end in `raw`."""
    while True:
        quote = raw.find(b'"', pos)
        if quote < 0:
            return None
        escape = raw.find(b"\\", pos, quote)
        if escape < 0:
            return quote + 1
        escapes = _ESCAPE_RUN.match(raw, escape)
        if escapes is None:
            return None
        pos = escapes.end()


def _key(token: bytes) -> str:
    try:
        key = json.loads(token) if b"\\" in token else token[1:-1].decode()
    except ValueError as exc:  # invalid UTF-8 or escape: the decoder names it
        raise _NotJson from exc
    assert isinstance(key, str)
    return key
