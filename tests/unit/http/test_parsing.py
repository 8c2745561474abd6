from __future__ import annotations

import codecs
import json
import threading
import time

import anyio
import pytest
from pydantic import BaseModel, field_validator
from starlette.requests import Request

from memory.client import InvalidRequest, MemoryClient
from memory.contract.history_requests import IngestBody, OrgPath
from memory.contract.input import Instant, QueryInt, QueryParams, StrictBody
from memory.contract.policy_requests import StoreBody
from memory.domain.errors import InvalidInput
from memory.entrypoints.http.errors import RequestInvalid
from memory.entrypoints.http.parsing import (
    BODY_READERS,
    SCAN_AFTER_BYTES,
    RequestChecks,
    _may_hold_more_values,
    parse_body,
    parsed_body,
    validate,
    well_typed_items,
)


class Body(BaseModel):
    name: str


def request_with(body: bytes) -> Request:
    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": body, "more_body": False}

    return Request({"type": "http", "method": "POST", "headers": []}, receive)


async def parse(body: bytes) -> Body:
    return await parse_body(request_with(body), Body)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b"", "must be a JSON object"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_malformed_bodies_are_422_naming_the_body(body: bytes, reason: str) -> None:

    with pytest.raises(RequestInvalid) as caught:
        anyio.run(parse, body)
    fields = caught.value.details["fields"]
    assert fields[0]["field"] == "body"
    assert reason in fields[0]["reason"]


def test_field_errors_name_the_field() -> None:

    with pytest.raises(RequestInvalid) as caught:
        anyio.run(parse, b'{"name": 3}')
    assert caught.value.details["fields"][0]["field"] == "name"
    assert anyio.run(parse, b'{"name": "ok"}') == Body(name="ok")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"name": ' + b"7" * 4301 + b"}", "more than 4300 digits"),
        (b'{"name": -' + b"7" * 4301 + b"}", "more than 4300 digits"),
        (b'{"name": NaN}', "NaN is not a JSON number"),
        (b'{"name": -Infinity}', "-Infinity is not a JSON number"),
    ],
)
def test_numbers_python_cannot_read_are_422_naming_the_body(body: bytes, reason: str) -> None:
    with pytest.raises(RequestInvalid) as caught:
        anyio.run(parse, body)
    (problem,) = caught.value.details["fields"]
    assert problem["field"] == "body" and reason in problem["reason"]


def test_an_integer_of_4300_digits_still_reaches_the_model() -> None:
    with pytest.raises(RequestInvalid) as caught:
        anyio.run(parse, b'{"name": ' + b"7" * 4300 + b"}")
    assert caught.value.details["fields"][0]["field"] == "name"


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        (b'{"name": "a\\u0000b"}', "name", "NUL"),
        (b'{"name": "\\ud800"}', "name", "lone surrogates"),
        (b'{"name": "ok", "x": [1, {"y": "\\udfff"}]}', "x.1.y", "lone surrogates"),
        (b'{"name": "ok", "\\ud800": 1}', "\\ud800", "keys must not contain lone surrogates"),
        (b'{"name": "ok", "a\\u0000": 1}', "a\\u0000", "keys must not contain NUL"),
    ],
)
def test_unsafe_text_anywhere_is_refused_naming_the_field(
    body: bytes, field: str, reason: str
) -> None:
    with pytest.raises(RequestInvalid) as caught:
        anyio.run(parse, body)
    (problem,) = caught.value.details["fields"]
    assert problem["field"] == field and reason in problem["reason"]
    # The answer itself must be encodable: no raw surrogate is echoed.
    caught.value.message.encode("utf-8")


def test_a_surrogate_pair_is_one_valid_character() -> None:
    assert anyio.run(parse, b'{"name": "\\ud83d\\udca5"}') == Body(name="\U0001f4a5")


class Typed(StrictBody):
    days: int
    ratio: float = 0.0
    flag: bool = False
    at: Instant | None = None


class Query(QueryParams):
    limit: QueryInt = 1
    at: Instant | None = None


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"days": True}, "days"),
        ({"days": "30"}, "days"),
        ({"days": 30.0}, "days"),
        ({"days": 1, "ratio": True}, "ratio"),
        ({"days": 1, "ratio": "0.5"}, "ratio"),
        ({"days": 1, "flag": 1}, "flag"),
        ({"days": 1, "flag": "true"}, "flag"),
        ({"days": 1, "at": 1_700_000_000}, "at"),
        ({"days": 1, "at": "2026-01-01T00:00:00"}, "at"),
        ({"days": 1, "extra": 1}, "extra"),
    ],
)
def test_bodies_are_strict_json_types(data: dict[str, object], field: str) -> None:
    with pytest.raises(RequestInvalid) as caught:
        validate(Typed, data)
    assert [f["field"] for f in caught.value.details["fields"]] == [field]


def test_a_strict_body_takes_json_numbers_and_iso_strings() -> None:
    typed = validate(Typed, {"days": 30, "ratio": 1, "flag": True, "at": "2026-01-01T00:00:00Z"})
    assert (typed.days, typed.ratio, typed.flag, typed.at is not None) == (30, 1.0, True, True)


@pytest.mark.parametrize("text", ["1700000000", "1700000000.5", "-62135596800", "2026-01-01"])
def test_instants_are_iso_dates_never_unix_seconds_in_a_string(text: str) -> None:
    with pytest.raises(RequestInvalid) as caught:
        validate(Query, {"at": text})
    assert caught.value.details["fields"][0]["field"] == "at"
    assert validate(Query, {"at": "2026-01-01 08:00:00+08:00"}).at is not None


@pytest.mark.parametrize("text", ["+5", "5.0", "1_0", " 5", "0x5", "five", ""])
def test_query_integers_are_decimal_text_only(text: str) -> None:
    with pytest.raises(RequestInvalid) as caught:
        validate(Query, {"limit": text})
    assert caught.value.details["fields"][0]["field"] == "limit"
    assert validate(Query, {"limit": "-12"}).limit == -12


def test_every_failing_field_is_reported_in_words_never_as_a_regex_or_url() -> None:
    from memory.contract.history_requests import ChatEventBody

    with pytest.raises(RequestInvalid) as err:
        validate(
            ChatEventBody,
            {"provider": "Not Valid", "channel_id": "", "sender": "s", "text": 5},
        )
    fields = {f["field"]: f["reason"] for f in err.value.details["fields"]}
    assert set(fields) == {"provider", "channel_id", "text", "occurred_at"}
    assert fields["provider"].startswith("must be 1 to 64 characters: lower-case letters")
    assert not any("^" in r or "http" in r for r in fields.values())


def test_a_422_message_names_the_first_five_failing_fields_and_details_list_all() -> None:
    async def parse_events() -> IngestBody:
        return await parse_body(request_with(b'{"events": [{}, {}]}'), IngestBody)

    with pytest.raises(RequestInvalid) as caught:
        anyio.run(parse_events)
    fields = caught.value.details["fields"]
    assert len(fields) > 5  # provider, channel_id, sender, text, occurred_at: twice
    named = [f["field"] for f in fields]
    assert caught.value.message == "invalid request: " + "; ".join(
        f"{f['field']}: {f['reason']}" for f in fields[:5]
    )
    assert named[5] not in caught.value.message

    # The client refuses the same events before sending, in the server's words.
    with pytest.raises(InvalidRequest) as refused, MemoryClient("http://memory.test") as client:
        client.ingest("acme", [{}, {}])
    assert refused.value.message == caught.value.message
    assert refused.value.details == {"fields": fields}


class Threshold(StrictBody):
    query: str
    threshold: float
    limit: int | None = None


def checked_request(body: bytes) -> Request:
    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {"type": "http", "method": "POST", "headers": [], "path_params": {"org_id": "B A D"}}
    return Request(scope, receive)


def test_one_422_names_the_type_errors_and_the_rules_the_well_typed_fields_break() -> None:
    seen: list[dict[str, object]] = []

    def rules() -> None:
        seen.append(dict(checks.valid))
        checks_of_rules = [("threshold", "must be between 0 and 1"), ("query", "too short")]
        raise InvalidInput.every([InvalidInput(f, r) for f, r in checks_of_rules])

    checks = RequestChecks()

    async def run() -> Threshold | None:
        return await checks.body(
            checked_request(b'{"query": 5, "threshold": 7.5, "limit": 3}'), Threshold
        )

    assert anyio.run(run) is None
    anyio.run(checks.rules, rules)
    # The query's rule is not checked against a value of the wrong type.
    assert seen == [{"threshold": 7.5, "limit": 3}]
    with pytest.raises(RequestInvalid) as refused:
        checks.raise_any()
    assert refused.value.details["fields"] == [
        {"field": "query", "reason": "Input should be a valid string"},
        {"field": "threshold", "reason": "must be between 0 and 1"},
    ]


def test_path_problems_join_the_bodys_and_rules_run_only_after_a_failure() -> None:
    checks = RequestChecks()
    request = checked_request(b'{"query": "q", "threshold": 0.5}')

    async def run() -> Threshold | None:
        return await checks.body(request, Threshold)

    body = anyio.run(run)
    assert body is not None
    anyio.run(
        checks.rules, lambda: pytest.fail("the use case checks its own rules when all parts passed")
    )
    checks.raise_any()

    assert checks.path(request, OrgPath) is None
    anyio.run(checks.rules, lambda: None)
    with pytest.raises(RequestInvalid) as refused:
        checks.raise_any()
    assert [f["field"] for f in refused.value.details["fields"]] == ["org_id"]


def test_a_body_that_is_not_json_skips_the_rules() -> None:
    checks = RequestChecks()

    async def run() -> Threshold | None:
        return await checks.body(checked_request(b"{nope"), Threshold)

    assert anyio.run(run) is None
    anyio.run(checks.rules, lambda: pytest.fail("no values to check"))
    with pytest.raises(RequestInvalid) as refused:
        checks.raise_any()
    assert [f["field"] for f in refused.value.details["fields"]] == ["body"]


def test_the_items_of_a_list_that_pass_their_model_are_kept_by_index() -> None:
    items = [{"name": "a"}, {"name": 5}, {"name": "c"}]
    assert {i: b.name for i, b in well_typed_items(Body, items).items()} == {0: "a", 2: "c"}
    assert well_typed_items(Body, "not a list") == {}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        # Lone surrogates written as raw UTF-8 (json.loads decodes them "surrogatepass").
        (b'{"name": "\xed\xa0\x80"}', "lone surrogates"),
        ('{"name": "a\\u0000"}'.encode("utf-16"), "NUL"),
        ('{"name": "\ud800"}'.encode("utf-32", "surrogatepass"), "lone surrogates"),
    ],
)
def test_unsafe_text_is_found_without_an_escape_and_in_any_encoding(
    body: bytes, reason: str
) -> None:
    with pytest.raises(RequestInvalid) as caught:
        anyio.run(parse, body)
    (problem,) = caught.value.details["fields"]
    assert problem["field"] == "name" and reason in problem["reason"]


class Watched(StrictBody):
    """Records the thread each body is validated in, and how many at once."""

    name: str

    @field_validator("name")
    @classmethod
    def _seen(cls, value: str) -> str:
        with _lock:
            _threads.append(threading.get_ident())
            _running[0] += 1
            _running[1] = max(_running[1], _running[0])
        time.sleep(0.05)
        with _lock:
            _running[0] -= 1
        return value


_lock = threading.Lock()
_threads: list[int] = []
_running = [0, 0]  # now, most at once


def test_bodies_are_read_in_worker_threads_a_few_at_a_time() -> None:
    _threads.clear()
    _running[:] = [0, 0]

    async def many() -> int:
        async with anyio.create_task_group() as tg:
            for _ in range(3 * BODY_READERS):
                tg.start_soon(parse_body, request_with(b'{"name": "ok"}'), Watched)
            checks = RequestChecks()
            tg.start_soon(checks.body, request_with(b'{"name": "ok"}'), Watched)
        return threading.get_ident()

    loop_thread = anyio.run(many)
    assert len(_threads) == 3 * BODY_READERS + 1
    assert loop_thread not in _threads
    assert _running[1] == BODY_READERS


def test_rules_after_a_failure_run_in_a_worker_thread() -> None:
    checks = RequestChecks()
    ran_in: list[int] = []

    async def run() -> int:
        await checks.body(checked_request(b'{"query": 5, "threshold": 0.5}'), Threshold)
        await checks.rules(lambda: ran_in.append(threading.get_ident()))
        return threading.get_ident()

    loop_thread = anyio.run(run)
    assert ran_in and ran_in != [loop_thread]


@pytest.mark.slow
def test_an_8_mib_array_is_refused_naming_the_field_and_its_limit() -> None:
    hostile = b'{"events": [' + b",".join([b"0"] * 4_000_000) + b"]}"

    async def ingest(body: bytes) -> IngestBody:
        return await parse_body(request_with(body), IngestBody)

    for body in (hostile, hostile.decode().encode("utf-16"), codecs.BOM_UTF8 + hostile):
        with pytest.raises(RequestInvalid) as caught:
            anyio.run(ingest, body)
        assert caught.value.details["fields"] == [
            {"field": "events", "reason": "List should have at most 1000 items"}
        ]
    # A body of few values is decoded and validated whole: the model's own words.
    few = b'{"events": [' + b",".join([b"0"] * 1001) + b"]}"
    with pytest.raises(RequestInvalid) as caught:
        anyio.run(ingest, few)
    (problem,) = caught.value.details["fields"]
    assert problem["field"] == "events" and "not 1001" in problem["reason"]


def chunked_request(body: bytes, chunk: int) -> tuple[Request, list[int]]:
    """A request whose body arrives in chunks of `chunk` bytes, and the sizes of those the
    reader has taken so far."""
    taken: list[int] = []

    async def receive() -> dict[str, object]:
        start = sum(taken)
        part = body[start : start + chunk]
        taken.append(len(part))
        return {"type": "http.request", "body": part, "more_body": sum(taken) < len(body)}

    return Request({"type": "http", "method": "POST", "headers": []}, receive), taken


def test_a_body_that_breaks_a_size_rule_in_its_first_bytes_is_refused_before_the_rest_arrives() -> (
    None
):
    chunk = 64 * 1024
    bodies = {
        "events": b'{"events": [' + b",".join([b"0"] * 4_000_000) + b"]}",
        "x": b'{"events": [], "x": [' + b",".join([b"0"] * 4_000_000) + b"]}",
    }
    for field, body in bodies.items():
        request, taken = chunked_request(body, chunk)
        checks = RequestChecks()

        async def read(request: Request = request, checks: RequestChecks = checks) -> None:
            assert await checks.body(request, IngestBody) is None

        anyio.run(read)
        (problem,) = checks._problems
        assert problem["field"] == field
        # The limit broke in the first chunk: none of the other 121 was received.
        assert taken == [chunk]
        assert len(body) > 120 * chunk
    # A valid body arrives whole, however many chunks it takes and values it may hold by
    # the count (commas inside its texts).
    events = [
        {
            "event_id": f"e{i}",
            "provider": "slack",
            "channel_id": "C1",
            "sender": "ali",
            "event_type": "message",
            "decision": "received",
            "text": "a, b, " * 30,
            "occurred_at": "2026-12-01T10:00:00+00:00",
        }
        for i in range(1_000)
    ]
    valid = json.dumps({"events": events}).encode()
    request, taken = chunked_request(valid, 4 * 1024)

    async def ingest() -> IngestBody:
        return await parse_body(request, IngestBody)

    assert len(anyio.run(ingest).events) == 1_000
    assert sum(taken) == len(valid)


def test_a_body_of_few_values_and_long_strings_is_checked_on_its_first_mib() -> None:
    """An 8 MB text in a body of a handful of values: never counted past, nor received
    beyond, the first `SCAN_AFTER_BYTES`, where the text's bytes already break its limit."""
    chunk = 64 * 1024
    text = b"a" * 8_000_000
    body = b'{"events": [{"sender": "ali", "text": "' + text + b'"}]}'
    request, taken = chunked_request(body, chunk)
    checks = RequestChecks()

    async def read() -> None:
        assert await checks.body(request, IngestBody) is None

    anyio.run(read)
    assert checks._problems == [
        {"field": "events.0.text", "reason": "String should have at most 32000 characters"}
    ]
    assert sum(taken) == SCAN_AFTER_BYTES < len(body) // 7
    # Sent whole, the same body gets the same answer.
    with pytest.raises(RequestInvalid) as whole:
        parsed_body(body, IngestBody)
    assert whole.value.details["fields"] == checks._problems


def test_a_length_limit_a_setting_decides_is_checked_on_the_bytes_too() -> None:
    """A policy's content limit is a setting, not in the contract model: the route gives it,
    and an 8 MB content is refused in the body's first MiB, as a declared limit would be."""
    body = b'{"policy_id": "p", "content": "\\u0041' + b"a" * 8_000_000 + b'"}'
    request, taken = chunked_request(body, 64 * 1024)
    checks = RequestChecks()

    async def read() -> None:
        assert await checks.body(request, StoreBody, max_chars={"content": 20_000}) is None

    anyio.run(read)
    assert checks._problems == [
        {"field": "content", "reason": "String should have at most 20000 characters"}
    ]
    assert sum(taken) == SCAN_AFTER_BYTES


def json_values(value: object) -> int:
    if isinstance(value, dict):
        return 1 + sum(json_values(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(json_values(v) for v in value)
    return 1


@pytest.mark.parametrize(
    "text",
    [
        "0",
        '"a, [b], {c}"',
        "[]",
        "{}",
        "[[], [[]], {}, [{}]]",
        '{"a": {"b": [1, {"c": []}, "d"]}, "e": null}',
        "[1, 2, 3, [4, 5], {}]",
        '{"events": [{"text": "x", "sender": "s"}, {"text": "y"}]}',
    ],
)
def test_the_count_that_decides_the_scan_never_counts_fewer_values_than_a_body_holds(
    text: str,
) -> None:
    # A body the count takes for smaller than it is would be decoded whole, unchecked.
    held = json_values(json.loads(text))
    for raw in (text.encode(), text.encode("utf-16"), text.encode("utf-32")):
        assert _may_hold_more_values(raw, held - 1)
