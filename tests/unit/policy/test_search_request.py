from __future__ import annotations

import pytest

from memory.domain.errors import InvalidInput
from memory.domain.policy.filters import SearchFilter
from memory.domain.policy.pagination import PageRequest
from memory.domain.policy.search import QUERY_MAX_CHARS, SearchRequest, parse_query_text
from memory.domain.policy.threshold import SimilarityThreshold


def request(query: str = "q", threshold: float = 0.5, **filter_: object) -> SearchRequest:
    return SearchRequest(
        query, SimilarityThreshold(threshold), PageRequest.parse(), SearchFilter.parse(filter_)
    )


def test_fingerprint_identifies_the_search_not_the_page() -> None:
    base = request().fingerprint("hash:384")
    paged = SearchRequest(
        "q", SimilarityThreshold(0.5), PageRequest.parse(limit=3, offset=9), SearchFilter()
    )
    assert paged.fingerprint("hash:384") == base
    assert request("other").fingerprint("hash:384") != base
    assert request(threshold=0.6).fingerprint("hash:384") != base
    assert request(source="hr").fingerprint("hash:384") != base
    assert request().fingerprint("local:multilingual-e5-small") != base


def test_query_text_rules() -> None:
    assert QUERY_MAX_CHARS == 4096
    assert parse_query_text("x" * QUERY_MAX_CHARS)
    for bad in ("", "  ", "x" * (QUERY_MAX_CHARS + 1), "a\x00"):
        with pytest.raises(InvalidInput) as err:
            parse_query_text(bad)
        assert err.value.field == "query"
