"""What a policy administrator says about a policy besides its text: title, source, tags and
any other JSON. Filterable in search; changing it alone never re-embeds the content."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from memory.domain.errors import FieldChecks, InvalidInput

TITLE_MAX_CHARS = 500
SOURCE_MAX_CHARS = 500
TAG_MAX_CHARS = 100
MAX_TAGS = 50
# Canonical JSON of the whole metadata object, in UTF-8 bytes. Metadata is for filtering and
# display, not a document store: the policy text belongs in `content`.
METADATA_MAX_BYTES = 16_384
# Nesting depth of objects and lists inside a metadata value.
METADATA_MAX_DEPTH = 32
WELL_KNOWN_KEYS = ("title", "source", "tags")


@dataclass(frozen=True)
class PolicyMetadata:
    """`title`, `source` and `tags` have columns of their own in the read model; `extra` holds
    the other keys as given. `to_json()` is the object clients sent (keys left out stay out)."""

    title: str | None = None
    source: str | None = None
    tags: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, data: Any, *, field: str = "metadata") -> PolicyMetadata:
        """Validate metadata from a request. `None` means no metadata."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise InvalidInput(field, "must be a JSON object")
        checks = FieldChecks()
        title = checks.run(
            partial(_optional_text, data.get("title"), f"{field}.title", TITLE_MAX_CHARS)
        )
        source = checks.run(
            partial(_optional_text, data.get("source"), f"{field}.source", SOURCE_MAX_CHARS)
        )
        tags = checks.run(partial(_tags, data.get("tags"), f"{field}.tags"))
        extra = {k: v for k, v in data.items() if k not in WELL_KNOWN_KEYS}
        for key, value in extra.items():
            checks.run(partial(_check_json, key, value, field))
        checks.raise_any()  # every bad key at once
        metadata = cls(title, source, tags or (), extra)
        size = len(metadata.canonical().encode("utf-8"))
        if size > METADATA_MAX_BYTES:
            raise InvalidInput(
                field, f"must be at most {METADATA_MAX_BYTES} bytes as JSON, got {size}"
            )
        return metadata

    @classmethod
    def from_canonical(cls, text: str) -> PolicyMetadata:
        """Rebuild metadata recorded in an event (validated when it was recorded; limits
        that changed since do not apply to the past)."""
        return cls.from_json(json.loads(text))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PolicyMetadata:
        """Rebuild metadata from its own `to_json()` output (events, the read model)."""
        extra = {k: v for k, v in data.items() if k not in WELL_KNOWN_KEYS}
        tags = tuple(data.get("tags") or ())
        return cls(data.get("title"), data.get("source"), tags, extra)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.extra)
        if self.title is not None:
            out["title"] = self.title
        if self.source is not None:
            out["source"] = self.source
        if self.tags:
            out["tags"] = list(self.tags)
        return out

    def canonical(self) -> str:
        """Sorted-key compact JSON: equal metadata gives equal text."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _optional_text(value: Any, field: str, max_chars: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(field, "must be a string")
    if not value.strip():
        raise InvalidInput(field, "must not be empty or blank")
    if len(value) > max_chars:
        raise InvalidInput(field, f"must be at most {max_chars} characters, got {len(value)}")
    if "\x00" in value:
        raise InvalidInput(field, "must not contain NUL characters")
    return value


def _tags(value: Any, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidInput(field, "must be a list of strings")
    if len(value) > MAX_TAGS:
        raise InvalidInput(field, f"must have at most {MAX_TAGS} tags, got {len(value)}")
    tags: list[str] = []
    for i, tag in enumerate(value):
        if not isinstance(tag, str):
            raise InvalidInput(f"{field}.{i}", "must be a string")
        text = _optional_text(tag, f"{field}.{i}", TAG_MAX_CHARS)
        if text in tags:
            raise InvalidInput(f"{field}.{i}", f"duplicate tag {tag!r}")
        tags.append(tag)
    return tuple(tags)


def _check_json(key: str, value: Any, field: str) -> None:
    """Keys and strings without NUL (PostgreSQL text cannot hold it), finite numbers only
    (JSON has no NaN or Infinity), bounded nesting. Iterative, so no input exhausts the
    stack."""
    if "\x00" in key or not key:
        raise InvalidInput(f"{field}.{key!r}", "keys must be non-empty and free of NUL")
    stack: list[tuple[str, Any, int]] = [(f"{field}.{key}", value, 1)]
    while stack:
        path, item, depth = stack.pop()
        if isinstance(item, dict | list) and depth > METADATA_MAX_DEPTH:
            raise InvalidInput(path, f"nests deeper than {METADATA_MAX_DEPTH} levels")
        if isinstance(item, str):
            if "\x00" in item:
                raise InvalidInput(path, "must not contain NUL characters")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidInput(path, "numbers must be finite")
        elif isinstance(item, dict):
            for k, v in item.items():
                if not isinstance(k, str) or "\x00" in k:
                    raise InvalidInput(path, "keys must be strings free of NUL")
                stack.append((f"{path}.{k}", v, depth + 1))
        elif isinstance(item, list):
            stack.extend((f"{path}.{i}", v, depth + 1) for i, v in enumerate(item))
        elif item is not None and not isinstance(item, bool | int):
            raise InvalidInput(path, f"is not a JSON value ({type(item).__name__})")
