from __future__ import annotations

import math
from typing import Any

import pytest

from memory.domain.errors import InvalidInput
from memory.domain.policy.metadata import (
    MAX_TAGS,
    METADATA_MAX_BYTES,
    METADATA_MAX_DEPTH,
    SOURCE_MAX_CHARS,
    TAG_MAX_CHARS,
    TITLE_MAX_CHARS,
    PolicyMetadata,
)


def test_well_known_keys_get_fields_and_the_rest_is_kept() -> None:
    meta = PolicyMetadata.parse(
        {"title": "Leave", "source": "hr", "tags": ["a", "b"], "level": 2, "owner": {"x": [1]}}
    )
    assert (meta.title, meta.source, meta.tags) == ("Leave", "hr", ("a", "b"))
    assert meta.extra == {"level": 2, "owner": {"x": [1]}}
    assert meta.to_json() == {
        "title": "Leave",
        "source": "hr",
        "tags": ["a", "b"],
        "level": 2,
        "owner": {"x": [1]},
    }


def test_none_means_no_metadata() -> None:
    assert PolicyMetadata.parse(None) == PolicyMetadata()
    assert PolicyMetadata().to_json() == {}


def test_canonical_text_ignores_key_order_and_round_trips() -> None:
    a = PolicyMetadata.parse({"title": "T", "z": 1, "a": 2})
    b = PolicyMetadata.parse({"a": 2, "z": 1, "title": "T"})
    assert a.canonical() == b.canonical()
    assert PolicyMetadata.from_canonical(a.canonical()) == a


def test_the_documented_limits_hold_at_their_boundaries() -> None:
    """docs/policy.md promises these numbers to clients: 500-character title and source,
    50 tags of at most 100 characters, 16 KiB in all."""
    at_limit = {"title": "t" * 500, "source": "s" * 500, "tags": ["x" * 100, "a", "b"]}
    assert PolicyMetadata.parse(at_limit).title == "t" * 500
    assert len(PolicyMetadata.parse({"tags": [f"t{i}" for i in range(50)]}).tags) == 50
    over = [
        ({"title": "t" * 501}, "metadata.title"),
        ({"source": "s" * 501}, "metadata.source"),
        ({"tags": ["x" * 101]}, "metadata.tags.0"),
        ({"tags": [f"t{i}" for i in range(51)]}, "metadata.tags"),
        ({"blob": "x" * 16_384}, "metadata"),
    ]
    for data, field in over:
        with pytest.raises(InvalidInput) as err:
            PolicyMetadata.parse(data)
        assert err.value.field == field


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ([], "metadata"),
        ({"title": 3}, "metadata.title"),
        ({"title": "  "}, "metadata.title"),
        ({"title": "x" * (TITLE_MAX_CHARS + 1)}, "metadata.title"),
        ({"source": "x" * (SOURCE_MAX_CHARS + 1)}, "metadata.source"),
        ({"tags": "hr"}, "metadata.tags"),
        ({"tags": ["ok", 5]}, "metadata.tags.1"),
        ({"tags": ["a", "a"]}, "metadata.tags.1"),
        ({"tags": ["x" * (TAG_MAX_CHARS + 1)]}, "metadata.tags.0"),
        ({"tags": [f"t{i}" for i in range(MAX_TAGS + 1)]}, "metadata.tags"),
        ({"deep": {"list": [1, "a\x00"]}}, "metadata.deep.list.1"),
        ({"n": math.inf}, "metadata.n"),
        ({"n": math.nan}, "metadata.n"),
    ],
)
def test_bad_metadata_is_refused_naming_the_field(data: Any, field: str) -> None:
    with pytest.raises(InvalidInput) as err:
        PolicyMetadata.parse(data)
    assert err.value.field == field


def test_boundaries_of_title_and_tag_count_are_accepted() -> None:
    meta = PolicyMetadata.parse(
        {"title": "x" * TITLE_MAX_CHARS, "tags": [f"t{i}" for i in range(MAX_TAGS)]}
    )
    assert len(meta.tags) == MAX_TAGS


def test_total_size_is_limited() -> None:
    with pytest.raises(InvalidInput) as err:
        PolicyMetadata.parse({"blob": "x" * METADATA_MAX_BYTES})
    assert err.value.field == "metadata"
    assert str(METADATA_MAX_BYTES) in err.value.reason


def _nested(depth: int) -> Any:
    nested: Any = "leaf"
    for _ in range(depth):
        nested = [nested]
    return nested


def test_nesting_depth_is_limited_without_exhausting_the_stack() -> None:
    assert METADATA_MAX_DEPTH == 32
    assert PolicyMetadata.parse({"deep": _nested(METADATA_MAX_DEPTH)}).extra
    with pytest.raises(InvalidInput, match="deeper than 32"):
        PolicyMetadata.parse({"deep": _nested(METADATA_MAX_DEPTH + 1)})
    with pytest.raises(InvalidInput):
        PolicyMetadata.parse({"deep": _nested(50_000)})
