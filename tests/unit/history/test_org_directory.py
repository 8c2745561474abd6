"""The org directory's rules without a database: page sizes, prefixes and their byte
ranges, signed cursors bound to their listing, the deciding flag layer, and the service's
paging over the in-memory adapters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tests.fakes import (
    TEST_ACTOR,
    FakeClock,
    FakeModel,
    InMemoryAuditTrail,
    InMemoryHistory,
    chat_message,
)

from memory.application.history.service import HistoryService
from memory.domain.errors import InvalidInput
from memory.domain.history.feature_flags import (
    MODULE_FLAG,
    SEMANTIC_SEARCH_FLAG,
    FlagLayers,
    FlagSource,
)
from memory.domain.history.org_directory import (
    DIRECTORY_LIMIT_DEFAULT,
    DIRECTORY_LIMIT_MAX,
    OrgListing,
    position_from_payload,
    position_payload,
    prefix_range,
)
from memory.domain.policy.cursor import CursorCodec

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
CODEC = CursorCodec(b"k" * 32)
ERASURE_KEY = b"e" * 32


def field_of(excinfo: pytest.ExceptionInfo[InvalidInput]) -> str:
    return excinfo.value.field


@pytest.mark.parametrize("limit", [0, -1, DIRECTORY_LIMIT_MAX + 1])
def test_a_page_size_outside_its_range_is_refused_naming_limit(limit: int) -> None:
    with pytest.raises(InvalidInput) as refused:
        OrgListing.parse(limit=limit)
    assert field_of(refused) == "limit"


def test_the_page_size_defaults_and_reaches_its_maximum() -> None:
    assert OrgListing.parse().limit == DIRECTORY_LIMIT_DEFAULT
    assert OrgListing.parse(limit=DIRECTORY_LIMIT_MAX).limit == DIRECTORY_LIMIT_MAX


@pytest.mark.parametrize("prefix", ["", "-a", "a b", "a/b", "é", "a" * 129])
def test_a_prefix_that_no_org_id_could_start_with_is_refused(prefix: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        OrgListing.parse(prefix=prefix)
    assert field_of(refused) == "prefix"


def test_an_empty_cursor_is_refused() -> None:
    with pytest.raises(InvalidInput) as refused:
        OrgListing.parse(cursor="")
    assert field_of(refused) == "cursor"


@pytest.mark.parametrize("prefix", ["a", "acme-", "x.9", "Z:"])
def test_a_prefix_range_holds_exactly_the_ids_that_start_with_it(prefix: str) -> None:
    low, high = prefix_range(prefix)
    alphabet = "-.09:AZ_az"
    candidates = [prefix[:-1] + c + tail for c in alphabet for tail in ("", "0", "zz", "-")]
    candidates += [prefix + tail for tail in ("", "0", "zz", "-", "~")]
    for org in candidates:
        inside = low <= org < high
        assert inside == org.startswith(prefix), org


def test_a_cursor_names_the_last_org_and_its_listing() -> None:
    listing = OrgListing.parse(prefix="ac")
    token = CODEC.seal(position_payload("acme", listing.fingerprint()))
    data = CODEC.unseal(token)
    assert position_from_payload(data, fingerprint=listing.fingerprint()) == "acme"
    with pytest.raises(InvalidInput, match="different listing") as other:
        position_from_payload(data, fingerprint=OrgListing.parse(prefix="b").fingerprint())
    assert field_of(other) == "cursor"
    # The page size is not part of the listing: it may change between pages.
    assert OrgListing.parse(prefix="ac", limit=3).fingerprint() == listing.fingerprint()


def test_a_cursor_of_another_kind_or_an_edited_one_is_refused() -> None:
    fingerprint = OrgListing.parse().fingerprint()
    for payload in (
        {"v": 2, "o": "acme", "f": fingerprint},
        {"v": 1, "o": 7, "f": fingerprint},
        {"v": 1, "o": "not an org", "f": fingerprint},
        {"v": 1, "d": 0.5, "r": "00", "f": fingerprint},  # a search cursor's payload
    ):
        with pytest.raises(InvalidInput) as refused:
            position_from_payload(CODEC.unseal(CODEC.seal(payload)), fingerprint=fingerprint)
        assert field_of(refused) == "cursor"
    token = CODEC.seal(position_payload("acme", fingerprint))
    with pytest.raises(InvalidInput, match="bad signature"):
        CursorCodec(b"o" * 32).unseal(token)
    with pytest.raises(InvalidInput):
        CODEC.unseal("e30." + token.partition(".")[2])  # another payload, the same mac


def test_the_deciding_layer_of_semantic_search() -> None:
    on = {MODULE_FLAG: True, SEMANTIC_SEARCH_FLAG: True}
    assert FlagLayers({}, {}).semantic_decided_by() == FlagSource(
        SEMANTIC_SEARCH_FLAG, "global", True
    )
    assert FlagLayers(on, {}).semantic_decided_by() == FlagSource(
        SEMANTIC_SEARCH_FLAG, "global", False
    )
    assert FlagLayers(on, {SEMANTIC_SEARCH_FLAG: True}).semantic_decided_by() == FlagSource(
        SEMANTIC_SEARCH_FLAG, "org", False
    )
    assert FlagLayers(on, {MODULE_FLAG: False}).semantic_decided_by() == FlagSource(
        MODULE_FLAG, "org", False
    )


@pytest.fixture
def service():
    history = InMemoryHistory.create()
    svc = HistoryService(
        history.ports(),
        FakeModel(dimensions=1024),
        clock=FakeClock(T0 + timedelta(days=1)),
        query_embed_timeout=2.0,
        default_retention_days=30,
        audit=InMemoryAuditTrail(),
        cursors=CODEC,
        erasure_key=ERASURE_KEY,
    )
    yield svc
    svc.close()


def test_the_service_pages_through_every_org_once(service: HistoryService) -> None:
    for org in ["c", "a", "b", "d", "e"]:
        service.ingest(org, [chat_message(f"{org}1", T0)])
    service.set_retention("f", 9, actor=TEST_ACTOR)
    seen, cursor, pages = [], None, 0
    while True:
        page = service.orgs(limit=2, cursor=cursor)
        seen += [o.org_id for o in page.orgs]
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert (seen, pages) == (["a", "b", "c", "d", "e", "f"], 3)
    # A full last page has no next page either.
    assert service.orgs(limit=3, cursor=service.orgs(limit=3).next_cursor).next_cursor is None


def test_the_service_refuses_bad_arguments_naming_them(service: HistoryService) -> None:
    for kwargs, field in (
        ({"limit": 0}, "limit"),
        ({"prefix": "a b"}, "prefix"),
        ({"cursor": "nonsense"}, "cursor"),
    ):
        with pytest.raises(InvalidInput) as refused:
            service.orgs(**kwargs)
        assert field_of(refused) == field
