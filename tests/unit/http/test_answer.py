"""Answers built from the contract models keep the bytes the hand-written dicts had."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID

import pytest
from pydantic import ValidationError
from starlette.responses import JSONResponse

from memory.contract.responses import (
    HistoryHitBody,
    HistorySearchBody,
    OrgFlagBody,
    PolicyDocumentBody,
)
from memory.entrypoints.http.answer import AnswerResponse
from memory.entrypoints.presenters.wire import render, wire

REF = UUID("2f1c3a52-0d5e-4c1b-9a51-9d0f1e2a3b4c")
INSTANTS = [
    datetime(2026, 11, 30, 12, 0, tzinfo=UTC),
    datetime(2026, 11, 30, 12, 0, 0, 5, tzinfo=UTC),
    datetime(2026, 11, 30, 12, 0, tzinfo=timezone(timedelta(hours=5, minutes=30))),
]


@pytest.mark.parametrize("instant", INSTANTS)
@pytest.mark.parametrize("similarity", [0.5, 5e-05, 1.0, 0.1 + 0.2])
def test_an_answer_has_the_bytes_jsonresponse_wrote_for_the_same_dict(
    instant: datetime, similarity: float
) -> None:
    body = PolicyDocumentBody(
        embedding_ref=REF,
        policy_id="refunds-ü",
        version=3,
        title="Rückerstattung 退款",
        source=None,
        content='line\n"quoted"\t\u2028',
        timestamp=instant,
        metadata={"tags": ["a"], "score": similarity, "nested": {"none": None}},
        similarity=similarity,
        namespace="org:acme",
    )
    by_hand = {
        "embedding_ref": str(REF),
        "policy_id": "refunds-ü",
        "version": 3,
        "title": "Rückerstattung 退款",
        "source": None,
        "content": 'line\n"quoted"\t\u2028',
        "timestamp": instant.isoformat(),
        "metadata": {"tags": ["a"], "score": similarity, "nested": {"none": None}},
        "similarity": similarity,
        "namespace": "org:acme",
    }
    assert render(body) == JSONResponse(by_hand).body
    response = AnswerResponse(body, 201)
    assert response.status_code == 201
    assert response.headers["content-type"] == "application/json"


def test_optional_parts_that_say_nothing_are_left_out_and_nulls_elsewhere_stay() -> None:
    hit = HistoryHitBody(
        event_id="e1",
        provider="slack",
        channel_id="c",
        sender="s",
        text="t",
        occurred_at=INSTANTS[0],
        matched_by="fts",
    )
    answer = HistorySearchBody(results=[hit], semantic="off", org_known=False, model=None)
    assert wire(answer) == {
        "results": [
            {
                "event_id": "e1",
                "provider": "slack",
                "channel_id": "c",
                "sender": "s",
                "text": "t",
                "occurred_at": INSTANTS[0].isoformat(),
                "matched_by": "fts",
            }
        ],
        "semantic": "off",
        "org_known": False,
    }
    direct = PolicyDocumentBody(
        embedding_ref=REF,
        policy_id="p",
        version=1,
        title=None,
        source=None,
        content="c",
        timestamp=INSTANTS[0],
        metadata={},
    )
    assert "similarity" not in wire(direct)
    assert wire(direct)["title"] is None


def test_a_field_goes_on_the_wire_by_its_contract_name() -> None:
    flag = OrgFlagBody.model_validate(
        {
            "org_id": "acme",
            "flag": "f",
            "global": True,
            "org": None,
            "effective": True,
            "global_state": "on",
        }
    )
    assert wire(flag) == {
        "org_id": "acme",
        "flag": "f",
        "global": True,
        "org": None,
        "effective": True,
        "global_state": "on",
    }


def test_a_value_the_contract_refuses_is_never_rendered() -> None:
    with pytest.raises(ValidationError):
        HistorySearchBody(results=[], semantic="maybe", org_known=True)  # type: ignore[arg-type]
