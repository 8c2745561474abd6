from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memory.domain.errors import InvalidInput
from memory.domain.policy.filters import (
    MAX_FILTER_METADATA_KEYS,
    MAX_FILTER_TAGS,
    SearchFilter,
    TagMatch,
    TagMode,
    TimeRange,
)


def test_every_supported_shape_parses() -> None:
    parsed = SearchFilter.parse(
        {
            "source": "hr",
            "title": "Leave",
            "tags": {"all": ["a", "b"]},
            "metadata": {"dept": "finance", "level": 2, "active": True, "gone": None},
            "timestamp": {"gte": "2026-01-01T00:00:00Z", "lt": "2027-01-01T00:00:00+02:00"},
        }
    )
    assert parsed.source == "hr"
    assert parsed.title == "Leave"
    assert parsed.tags == TagMatch(TagMode.ALL, ("a", "b"))
    assert parsed.metadata == {"dept": "finance", "level": 2, "active": True, "gone": None}
    assert parsed.timestamp == TimeRange(
        gte=datetime(2026, 1, 1, tzinfo=UTC),
        lt=datetime.fromisoformat("2027-01-01T00:00:00+02:00"),
    )
    assert parsed != SearchFilter()


def test_no_filter_is_the_empty_filter() -> None:
    assert SearchFilter.parse(None) == SearchFilter()
    assert SearchFilter.parse({}) == SearchFilter()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ("hr", "filter"),
        ({"author": "me"}, "filter.author"),
        ({"source": 1}, "filter.source"),
        ({"tags": ["a"]}, "filter.tags"),
        ({"tags": {"some": ["a"]}}, "filter.tags"),
        ({"tags": {"any": ["a"], "all": ["b"]}}, "filter.tags"),
        ({"tags": {"any": []}}, "filter.tags.any"),
        ({"tags": {"any": ["a", 2]}}, "filter.tags.any.1"),
        ({"tags": {"any": [f"t{i}" for i in range(MAX_FILTER_TAGS + 1)]}}, "filter.tags.any"),
        ({"metadata": {"k": {"nested": 1}}}, "filter.metadata.k"),
        ({"metadata": {"k": [1]}}, "filter.metadata.k"),
        ({"metadata": {}}, "filter.metadata"),
        (
            {"metadata": {f"k{i}": i for i in range(MAX_FILTER_METADATA_KEYS + 1)}},
            "filter.metadata",
        ),
        ({"timestamp": {"after": "2026-01-01T00:00:00Z"}}, "filter.timestamp.after"),
        ({"timestamp": {"gte": "yesterday"}}, "filter.timestamp.gte"),
        ({"timestamp": {"gte": "2026-01-01T00:00:00"}}, "filter.timestamp.gte"),
        ({"timestamp": {"gte": 1700000000}}, "filter.timestamp.gte"),
        (
            {"timestamp": {"gte": "2026-01-02T00:00:00Z", "gt": "2026-01-01T00:00:00Z"}},
            "filter.timestamp",
        ),
        (
            {"timestamp": {"gte": "2026-02-01T00:00:00Z", "lt": "2026-01-01T00:00:00Z"}},
            "filter.timestamp",
        ),
        ({"timestamp": {}}, "filter.timestamp"),
    ],
)
def test_unknown_or_malformed_shapes_are_refused_naming_the_field(data: Any, field: str) -> None:
    with pytest.raises(InvalidInput) as err:
        SearchFilter.parse(data)
    assert err.value.field == field


def test_canonical_form_ignores_tag_order() -> None:
    a = SearchFilter.parse({"tags": {"any": ["b", "a"]}, "metadata": {"x": 1, "y": 2}})
    b = SearchFilter.parse({"metadata": {"y": 2, "x": 1}, "tags": {"any": ["a", "b"]}})
    assert a.canonical() == b.canonical()
    assert a.canonical() != SearchFilter.parse({"tags": {"all": ["a", "b"]}}).canonical()


def fields(error: InvalidInput) -> list[str]:
    return [f["field"] for f in error.details["fields"]]


def test_every_failing_field_of_a_filter_is_reported_not_only_the_first() -> None:
    with pytest.raises(InvalidInput) as err:
        SearchFilter.parse(
            {
                "colour": "red",
                "source": 7,
                "title": "x" * 501,
                "tags": {"any": ["ok", 3, None]},
                "metadata": {"dept": ["a"], "level": float("nan"), "fine": 1},
                "timestamp": {"gte": "yesterday", "lt": "2026-01-01T00:00:00", "after": "x"},
            }
        )
    assert fields(err.value) == [
        "filter.colour",
        "filter.source",
        "filter.title",
        "filter.tags.any.1",
        "filter.tags.any.2",
        "filter.metadata.dept",
        "filter.metadata.level",
        "filter.timestamp.after",
        "filter.timestamp.gte",
        "filter.timestamp.lt",
    ]
    assert err.value.field == "filter.colour"
    assert "filter.source: must be a string" in err.value.message
    assert "filter.timestamp.lt: must include a time zone" in err.value.message
