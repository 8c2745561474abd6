from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.domain.history.chat_event import (
    ChatEvent,
    derive_event_id,
)

EVENT = ChatEvent(
    event_id=None,
    provider="slack",
    channel_id="C1",
    sender="ali",
    text="boleh reset password?",
    occurred_at=datetime(2026, 3, 2, 9, 0, tzinfo=UTC),
)


def test_a_derived_id_is_the_same_on_retry() -> None:
    assert EVENT.with_id("acme").event_id == EVENT.with_id("acme").event_id
    assert EVENT.with_id("acme").event_id == derive_event_id("acme", EVENT)


def test_a_derived_id_does_not_depend_on_the_utc_offset_of_the_same_instant() -> None:
    plus8 = timezone(timedelta(hours=8))
    same_instant = replace(EVENT, occurred_at=datetime(2026, 3, 2, 17, 0, tzinfo=plus8))
    assert derive_event_id("acme", same_instant) == derive_event_id("acme", EVENT)


@pytest.mark.parametrize(
    "change",
    [
        {"provider": "whatsapp"},
        {"channel_id": "C2"},
        {"thread_id": "T1"},
        {"sender": "mei"},
        {"event_type": "reaction"},
        {"decision": "denied"},
        {"text": "boleh reset password??"},
        {"occurred_at": datetime(2026, 3, 2, 9, 0, 0, 1, tzinfo=UTC)},
    ],
)
def test_a_derived_id_changes_with_any_field(change: dict[str, object]) -> None:
    assert derive_event_id("acme", replace(EVENT, **change)) != derive_event_id("acme", EVENT)  # type: ignore[arg-type]


def test_a_derived_id_depends_on_the_org() -> None:
    assert derive_event_id("acme", EVENT) != derive_event_id("globex", EVENT)


def test_a_client_id_is_kept() -> None:
    assert replace(EVENT, event_id="slack:123").with_id("acme").event_id == "slack:123"


def test_occurred_at_needs_a_timezone() -> None:
    with pytest.raises(ValueError):
        replace(EVENT, occurred_at=datetime(2026, 3, 2, 9, 0))
