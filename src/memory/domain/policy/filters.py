"""MetadataFiltering: the shapes a search may filter on, validated before any SQL exists.

    {"source": "hr", "title": "Leave policy",
     "tags": {"any": ["travel", "expenses"]} | {"all": [...]},
     "metadata": {"department": "finance", "level": 2},
     "timestamp": {"gte": "2026-01-01T00:00:00Z", "lt": "2027-01-01T00:00:00Z"}}

Every key is optional; all given conditions must hold. Anything else is refused.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import partial
from typing import Any

from memory.domain.errors import FieldChecks, InvalidInput
from memory.domain.time_range import AcceptedTimeRange

FILTER_KEYS = ("source", "title", "tags", "metadata", "timestamp")
TIME_BOUNDS = ("gte", "gt", "lte", "lt")
MAX_FILTER_TAGS = 50
MAX_FILTER_METADATA_KEYS = 20
MAX_FILTER_TEXT_CHARS = 500

Scalar = str | int | float | bool | None


class TagMode(StrEnum):
    ANY = "any"
    ALL = "all"


@dataclass(frozen=True, slots=True)
class TagMatch:
    mode: TagMode
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TimeRange:
    """Bounds on a result's `timestamp` (when its current version was recorded)."""

    gte: datetime | None = None
    gt: datetime | None = None
    lte: datetime | None = None
    lt: datetime | None = None


@dataclass(frozen=True)
class SearchFilter:
    source: str | None = None
    title: str | None = None
    tags: TagMatch | None = None
    metadata: Mapping[str, Scalar] = field(default_factory=dict)
    timestamp: TimeRange | None = None

    @classmethod
    def parse(
        cls, data: Any, *, field: str = "filter", accepted: AcceptedTimeRange | None = None
    ) -> SearchFilter:
        """`accepted`: the range time bounds must lie in (docs/adr/0041); the use case
        passes it with the server's clock."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise InvalidInput(field, "must be a JSON object")
        checks = FieldChecks()
        for key in sorted(set(data) - set(FILTER_KEYS)):
            checks.fail(f"{field}.{key}", f"unknown filter; known: {', '.join(FILTER_KEYS)}")
        source = checks.run(lambda: _text(data.get("source"), f"{field}.source"))
        title = checks.run(lambda: _text(data.get("title"), f"{field}.title"))
        tags = checks.run(lambda: _tags(data.get("tags"), f"{field}.tags"))
        metadata = checks.run(lambda: _metadata(data.get("metadata"), f"{field}.metadata"))
        timestamp = checks.run(
            lambda: _time_range(data.get("timestamp"), f"{field}.timestamp", accepted)
        )
        checks.raise_any()
        return cls(
            source=source, title=title, tags=tags, metadata=metadata or {}, timestamp=timestamp
        )

    def canonical(self) -> str:
        """Equal filters give equal text (part of a cursor's search fingerprint)."""
        data: dict[str, Any] = {"source": self.source, "title": self.title}
        if self.tags is not None:
            data["tags"] = {self.tags.mode.value: sorted(self.tags.tags)}
        data["metadata"] = dict(self.metadata)
        if self.timestamp is not None:
            data["timestamp"] = {
                bound: value.isoformat()
                for bound in TIME_BOUNDS
                if (value := getattr(self.timestamp, bound)) is not None
            }
        return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _text(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(field, "must be a string")
    if len(value) > MAX_FILTER_TEXT_CHARS:
        raise InvalidInput(field, f"must be at most {MAX_FILTER_TEXT_CHARS} characters")
    if "\x00" in value:
        raise InvalidInput(field, "must not contain NUL characters")
    return value


def _tags(value: Any, field: str) -> TagMatch | None:
    if value is None:
        return None
    modes = [m.value for m in TagMode]
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in modes:
        raise InvalidInput(field, 'must be {"any": [tags]} or {"all": [tags]}')
    mode, tags = next(iter(value.items()))
    if not isinstance(tags, list) or not tags:
        raise InvalidInput(f"{field}.{mode}", "must be a non-empty list of strings")
    if len(tags) > MAX_FILTER_TAGS:
        raise InvalidInput(f"{field}.{mode}", f"must have at most {MAX_FILTER_TAGS} tags")
    checks = FieldChecks()
    checked: list[str] = []
    for i, tag in enumerate(tags):
        path = f"{field}.{mode}.{i}"
        if tag is None:  # `_text` lets None through (an absent filter); a tag must be there
            checks.fail(path, "must be a string")
        elif (text := checks.run(partial(_text, tag, path))) is not None:
            checked.append(text)
    checks.raise_any()
    return TagMatch(TagMode(mode), tuple(checked))


def _metadata(value: Any, field: str) -> dict[str, Scalar]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not value:
        raise InvalidInput(field, "must be a non-empty object of key: value pairs")
    if len(value) > MAX_FILTER_METADATA_KEYS:
        raise InvalidInput(field, f"must have at most {MAX_FILTER_METADATA_KEYS} keys")
    checks = FieldChecks()
    out: dict[str, Scalar] = {}
    for key, item in value.items():
        reason = _metadata_value_problem(key, item)
        if reason is None:
            out[key] = item
        else:
            checks.fail(f"{field}.{key}", reason)
    checks.raise_any()
    return out


def _metadata_value_problem(key: str, item: Any) -> str | None:
    if not key or "\x00" in key:
        return "keys must be non-empty and free of NUL"
    if isinstance(item, dict | list):
        return "must be a string, number, boolean or null (equality)"
    if isinstance(item, float) and not math.isfinite(item):
        return "numbers must be finite"
    if isinstance(item, str) and "\x00" in item:
        return "must not contain NUL characters"
    if item is not None and not isinstance(item, str | int | float | bool):
        return "must be a string, number, boolean or null"
    return None


def _time_range(value: Any, field: str, accepted: AcceptedTimeRange | None) -> TimeRange | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not value:
        raise InvalidInput(field, f"must be an object with any of {', '.join(TIME_BOUNDS)}")
    checks = FieldChecks()
    for key in sorted(set(value) - set(TIME_BOUNDS)):
        checks.fail(f"{field}.{key}", f"unknown bound; known: {', '.join(TIME_BOUNDS)}")
    bounds: dict[str, datetime] = {}
    for key, text in value.items():
        if key not in TIME_BOUNDS:
            continue
        instant = checks.run(partial(_bound, text, f"{field}.{key}", accepted))
        if instant is not None:
            bounds[key] = instant
    checks.raise_any()
    if "gte" in bounds and "gt" in bounds:
        raise InvalidInput(field, "give gte or gt, not both")
    if "lte" in bounds and "lt" in bounds:
        raise InvalidInput(field, "give lte or lt, not both")
    lower = bounds.get("gte") or bounds.get("gt")
    upper = bounds.get("lte") or bounds.get("lt")
    if lower is not None and upper is not None and lower > upper:
        raise InvalidInput(field, "lower bound is after upper bound")
    return TimeRange(**bounds)


def _bound(text: Any, field: str, accepted: AcceptedTimeRange | None) -> datetime:
    instant = _instant(text, field)
    return instant if accepted is None else accepted.check(instant, field)


def _instant(text: Any, field: str) -> datetime:
    if not isinstance(text, str):
        raise InvalidInput(field, "must be an ISO 8601 date-time string")
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(field, "must be an ISO 8601 date-time string") from None
    if value.tzinfo is None:
        raise InvalidInput(field, "must include a time zone (e.g. Z or +02:00)")
    return value
