from __future__ import annotations

import pytest

from memory.domain.errors import InvalidInput
from memory.domain.policy.pagination import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET, PageRequest


def test_defaults_and_caps_are_the_specified_ones() -> None:
    assert (DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET) == (50, 200, 10_000)
    page = PageRequest.parse()
    assert (page.limit, page.offset, page.cursor, page.size) == (50, 0, None, 50)


def test_limit_bounds_are_enforced_not_clamped() -> None:
    assert PageRequest.parse(limit=MAX_LIMIT).size == 200
    assert PageRequest.parse(limit=1).size == 1
    for bad in (0, -1, MAX_LIMIT + 1):
        with pytest.raises(InvalidInput) as err:
            PageRequest.parse(limit=bad)
        assert err.value.field == "limit"


def test_max_results_caps_the_answer_and_may_not_exceed_limit() -> None:
    assert PageRequest.parse(limit=20, max_results=5).size == 5
    assert PageRequest.parse(limit=20, max_results=20).size == 20
    assert PageRequest.parse(max_results=50).size == 50
    for bad in (0, 21):
        with pytest.raises(InvalidInput) as err:
            PageRequest.parse(limit=20, max_results=bad)
        assert err.value.field == "max_results"


def test_offset_and_cursor_are_alternatives() -> None:
    with pytest.raises(InvalidInput) as err:
        PageRequest.parse(offset=0, cursor="abc")
    assert err.value.field == "cursor"


def test_offset_bounds() -> None:
    assert PageRequest.parse(offset=MAX_OFFSET).offset == MAX_OFFSET
    for bad in (-1, MAX_OFFSET + 1):
        with pytest.raises(InvalidInput) as err:
            PageRequest.parse(offset=bad)
        assert err.value.field == "offset"


def test_every_failing_page_field_is_reported() -> None:
    with pytest.raises(InvalidInput) as err:
        PageRequest.parse(limit=0, offset=10_001, cursor="", max_results=0)
    assert [f["field"] for f in err.value.details["fields"]] == [
        "limit",
        "cursor",
        "offset",
        "cursor",
        "max_results",
    ]
