"""The size rules checked on a body's bytes before it is decoded (`body_scan`)."""

from __future__ import annotations

import json

import pytest

from memory.application.history.erasure import MAX_ERASE_EVENT_IDS
from memory.contract.access_requests import NewKeyBody
from memory.contract.history_requests import EraseBody, IngestBody
from memory.contract.policy_requests import StoreBody
from memory.domain.access.scopes import Scope
from memory.domain.history.chat_event import (
    MAX_EVENTS_PER_REQUEST,
    MAX_MESSAGE_CHARS,
    MAX_NAME_CHARS,
)
from memory.entrypoints.http.body_scan import (
    MAX_BODY_VALUES,
    MAX_BYTES_PER_CHARACTER,
    MAX_JSON_DEPTH,
    SizeProblem,
    body_shape,
    scan_body,
)

INGEST = body_shape(IngestBody)
EVENT = {
    "event_id": "e1",
    "provider": "slack",
    "channel_id": "C1",
    "thread_id": "T1",
    "sender": "ali",
    "event_type": "message",
    "decision": "received",
    "text": 'a message, with: commas, colons, [brackets] and "quotes" \\ too',
    "occurred_at": "2026-11-30T10:00:00Z",
}


def events(count: int) -> bytes:
    return json.dumps({"events": [dict(EVENT, event_id=f"e{i}") for i in range(count)]}).encode()


def zeros(count: int) -> bytes:
    return b",".join([b"0"] * count)


def test_the_limits_come_from_the_contract_models() -> None:
    fields = INGEST.fields
    assert fields is not None and fields["events"].max_items == MAX_EVENTS_PER_REQUEST
    event = fields["events"].items
    assert event is not None and event.fields is not None
    assert event.fields["text"].max_chars == MAX_MESSAGE_CHARS
    # Optional fields keep the limit of the type they wrap.
    assert event.fields["thread_id"].max_chars == MAX_NAME_CHARS
    erase = body_shape(EraseBody).fields
    assert erase is not None and erase["event_ids"].max_items == MAX_ERASE_EVENT_IDS
    key = body_shape(NewKeyBody).fields
    assert key is not None and key["scopes"].max_items is not None


@pytest.mark.slow
def test_an_8_mib_array_is_refused_at_the_first_item_over_the_limit() -> None:
    hostile = b'{"events": [' + zeros(4_000_000) + b"]}"
    assert len(hostile) > 8_000_000
    assert scan_body(hostile, INGEST) == SizeProblem(
        "events", f"List should have at most {MAX_EVENTS_PER_REQUEST} items"
    )
    # It stops there: what follows is never read (here it is not even JSON).
    cut = b'{"events": [' + zeros(MAX_EVENTS_PER_REQUEST + 1) + b", ]]]} not json"
    assert scan_body(cut, INGEST) is not None


def test_a_body_within_every_limit_passes() -> None:
    assert scan_body(events(MAX_EVENTS_PER_REQUEST), INGEST) is None
    problem = scan_body(events(MAX_EVENTS_PER_REQUEST + 1), INGEST)
    assert problem is not None and problem.field == "events"


def test_items_of_nested_lists_are_counted_per_list() -> None:
    scopes = ", ".join(['"history:read"'] * (len(Scope) + 1))
    body = f'{{"name": "k", "scopes": [{scopes}]}}'.encode()
    problem = scan_body(body, body_shape(NewKeyBody))
    assert problem is not None and problem.field == "scopes"
    ids = ", ".join(f'"e{i}"' for i in range(MAX_ERASE_EVENT_IDS + 1))
    problem = scan_body(f'{{"event_ids": [{ids}]}}'.encode(), body_shape(EraseBody))
    assert problem is not None and problem.field == "event_ids"


def test_a_string_is_refused_only_when_its_bytes_cannot_hold_so_few_characters() -> None:
    at_most = MAX_BYTES_PER_CHARACTER * MAX_MESSAGE_CHARS

    def with_text(text: bytes) -> bytes:
        return b'{"events": [{"sender": "a"}, {"text": "' + text + b'"}]}'

    # 32,001 escaped surrogate pairs would be 32,001 characters: too long, but only the
    # decoder can tell, so the model refuses it.
    assert scan_body(with_text(b"\\ud83d\\ude00" * (MAX_MESSAGE_CHARS // 2)), INGEST) is None
    assert scan_body(with_text(b"a" * at_most), INGEST) is None
    assert scan_body(with_text(b"a" * (at_most + 1)), INGEST) == SizeProblem(
        "events.1.text", f"String should have at most {MAX_MESSAGE_CHARS} characters"
    )
    # Escaped quotes and backslashes do not end a string early.
    escapes = b'\\"\\\\' * (at_most // 4 + 1)
    assert scan_body(with_text(escapes), INGEST) is not None


def test_a_string_the_bytes_end_in_is_refused_once_what_arrived_of_it_is_too_long() -> None:
    """The first bytes of a body still arriving: a string they cut is at least as long as
    its part in them."""
    at_most = MAX_BYTES_PER_CHARACTER * MAX_MESSAGE_CHARS
    cut = b'{"events": [{"sender": "a", "text": "'
    assert scan_body(cut + b"a" * (at_most + 1), INGEST) == SizeProblem(
        "events.0.text", f"String should have at most {MAX_MESSAGE_CHARS} characters"
    )
    assert scan_body(cut + b"\\\\" * (at_most // 2 + 1), INGEST) is not None
    # Within the limit so far: the rest of the body decides.
    assert scan_body(cut + b"a" * at_most, INGEST) is None
    # A key or a field without a length limit cut there is left alone.
    assert scan_body(b'{"events": [{"' + b"a" * (at_most + 1), INGEST) is None
    assert scan_body(b'{"x": "' + b"a" * (at_most + 1), INGEST) is None


def test_nesting_deeper_than_the_limit_is_refused_naming_the_top_level_field() -> None:
    def nested(levels: int) -> bytes:
        return b'{"metadata": {"a": ' + b"[" * levels + b"]" * levels + b"}}"

    store = body_shape(StoreBody)
    assert scan_body(nested(MAX_JSON_DEPTH - 2), store) is None
    problem = scan_body(nested(MAX_JSON_DEPTH), store)
    assert problem == SizeProblem(
        "metadata", f"JSON nested too deeply (more than {MAX_JSON_DEPTH} levels)"
    )
    deep_array = scan_body(b"[" * 100_000 + b"]" * 100_000, store)
    assert deep_array is not None and deep_array.field == "body"


def test_values_the_contract_does_not_limit_count_against_the_body() -> None:
    unknown = b'{"events": [], "x": [' + zeros(MAX_BODY_VALUES) + b"]}"
    assert scan_body(unknown, INGEST) == SizeProblem(
        "x", f"the body holds more than {MAX_BODY_VALUES} JSON values"
    )
    metadata = b'{"policy_id": "p", "metadata": {"a": [' + zeros(MAX_BODY_VALUES) + b"]}}"
    problem = scan_body(metadata, body_shape(StoreBody))
    assert problem is not None and problem.field == "metadata"
    top_level_array = scan_body(b"[" + zeros(MAX_BODY_VALUES) + b"]", INGEST)
    assert top_level_array is not None and top_level_array.field == "body"
    assert scan_body(b'{"x": [' + zeros(MAX_BODY_VALUES - 2) + b"]}", INGEST) is None


def test_a_key_is_read_as_json_text() -> None:
    escaped_key = b'{"ev\\u0065nts": [' + zeros(MAX_EVENTS_PER_REQUEST + 1) + b"]}"
    problem = scan_body(escaped_key, INGEST)
    assert problem is not None and problem.field == "events"


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"   ",
        b"{not json",
        b'{"events": [1,,2]}',
        b'{"events": [1,]}',
        b'{"events" [1]}',
        b'{"events": [1}',
        b'{"events": "unterminated',
        b'{"events": "bad escape at the end\\',
        b'{"\xff": 1}',
        b'"a string"',
    ],
)
def test_what_is_not_json_is_left_to_the_decoder(body: bytes) -> None:
    assert scan_body(body, INGEST) is None


@pytest.mark.parametrize(
    "item",
    [
        b'{"text": "a", "sender": "s"}',  # simple members, matched whole
        b'{ "t\\u0065xt" : "\\u0061" ,"sender":"s" }',  # escapes: read token by token
        b'{"text": ["x"], "sender": {"a": 1}}',  # containers as values
        b'"\\"quoted\\""',
        b"  -1.5e3  ",
    ],
)
def test_items_are_counted_alike_however_they_are_written(item: bytes) -> None:
    def body(count: int) -> bytes:
        return b'{"events": [' + b",".join([item] * count) + b"]}"

    assert scan_body(body(MAX_EVENTS_PER_REQUEST), INGEST) is None
    assert scan_body(body(MAX_EVENTS_PER_REQUEST + 1), INGEST) == SizeProblem(
        "events", f"List should have at most {MAX_EVENTS_PER_REQUEST} items"
    )
