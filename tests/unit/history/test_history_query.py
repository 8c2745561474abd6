from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.domain.errors import InvalidInput
from memory.domain.history.search import (
    MAX_QUERY_CHARS,
    SEARCH_LIMIT_DEFAULT,
    SEARCH_LIMIT_MAX,
    HistoryQuery,
)

T = datetime(2026, 3, 2, tzinfo=UTC)


def test_limits() -> None:
    assert (SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX, MAX_QUERY_CHARS) == (20, 100, 1000)
    assert HistoryQuery("x").limit == 20
    HistoryQuery("x", limit=1)
    HistoryQuery("x", limit=100)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"text": "   "}, "q"),
        ({"text": "x" * 1001}, "q"),
        ({"text": "x", "limit": 0}, "limit"),
        ({"text": "x", "limit": 101}, "limit"),
        ({"text": "x", "since": datetime(2026, 3, 2)}, "since"),
        ({"text": "x", "since": T, "until": T}, "until"),
    ],
)
def test_invalid_queries_name_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        HistoryQuery(**kwargs)  # type: ignore[arg-type]
    assert caught.value.field == field
