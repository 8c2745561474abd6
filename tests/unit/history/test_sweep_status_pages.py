"""The sweep status' partition pages without a database: page sizes, signed cursors bound
to their org, and the service's paging and totals over the in-memory adapters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tests.fakes import FakeClock, FakeModel, InMemoryAuditTrail, InMemoryHistory, chat_message

from memory.application.history.service import HistoryService
from memory.domain.errors import InvalidInput
from memory.domain.history.org_directory import OrgListing, position_payload
from memory.domain.history.partition_listing import (
    PARTITION_PAGE_DEFAULT,
    PARTITION_PAGE_MAX,
    PartitionKey,
    PartitionListing,
    partition_fingerprint,
    partition_from_payload,
    partition_payload,
)
from memory.domain.policy.cursor import CursorCodec

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
CODEC = CursorCodec(b"k" * 32)
ERASURE_KEY = b"e" * 32


@pytest.mark.parametrize("limit", [0, -1, PARTITION_PAGE_MAX + 1])
def test_a_page_size_outside_its_range_is_refused_naming_limit(limit: int) -> None:
    with pytest.raises(InvalidInput) as refused:
        PartitionListing.parse(limit=limit)
    assert refused.value.field == "limit"


def test_the_page_size_defaults_and_reaches_its_maximum() -> None:
    assert PartitionListing.parse().limit == PARTITION_PAGE_DEFAULT
    assert PartitionListing.parse(limit=PARTITION_PAGE_MAX).limit == PARTITION_PAGE_MAX


def test_an_empty_cursor_is_refused() -> None:
    with pytest.raises(InvalidInput) as refused:
        PartitionListing.parse(cursor="")
    assert refused.value.field == "cursor"


def test_a_cursor_names_the_last_partition_and_is_bound_to_its_org() -> None:
    key = PartitionKey("slack", "C 7/ü")
    data = CODEC.unseal(CODEC.seal(partition_payload(key, partition_fingerprint("acme"))))
    assert partition_from_payload(data, fingerprint=partition_fingerprint("acme")) == key
    with pytest.raises(InvalidInput, match="another org") as other:
        partition_from_payload(data, fingerprint=partition_fingerprint("globex"))
    assert other.value.field == "cursor"


def test_a_cursor_of_another_kind_is_refused() -> None:
    fingerprint = partition_fingerprint("acme")
    for payload in (
        {"v": 2, "p": "slack", "c": "C1", "f": fingerprint},
        {"v": 1, "p": 7, "c": "C1", "f": fingerprint},
        {"v": 1, "p": "slack", "f": fingerprint},
        # The org directory's cursor (same codec, same version number).
        position_payload("acme", OrgListing.parse().fingerprint()),
    ):
        with pytest.raises(InvalidInput) as refused:
            partition_from_payload(CODEC.unseal(CODEC.seal(payload)), fingerprint=fingerprint)
        assert refused.value.field == "cursor"


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


def test_the_service_pages_through_every_partition_once_with_the_org_totals(
    service: HistoryService,
) -> None:
    channels = ["C3", "C1", "C5", "C2", "C4"]
    service.ingest("acme", [chat_message(f"m{c}", T0, channel_id=c) for c in channels])
    service.ingest("acme", [chat_message("t1", T0, provider="teams", channel_id="C0")])
    service.ingest("globex", [chat_message("g1", T0)])
    seen, cursor, pages = [], None, 0
    while True:
        page = service.sweep_status("acme", limit=4, cursor=cursor)
        seen += [(s.partition.provider, s.partition.channel_id) for s in page.partitions]
        assert (page.totals.partitions, page.totals.messages) == (6, 6)
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert pages == 2
    assert seen == [("slack", f"C{i}") for i in range(1, 6)] + [("teams", "C0")]
    with pytest.raises(InvalidInput) as refused:
        service.sweep_status("globex", cursor=service.sweep_status("acme", limit=1).next_cursor)
    assert refused.value.field == "cursor"
