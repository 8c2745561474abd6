from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel
from starlette.requests import Request

from memory.entrypoints.http.errors import RequestInvalid
from memory.entrypoints.http.parsing import parse_body


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
