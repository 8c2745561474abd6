"""Log lines: JSON objects off a terminal, readable text on one, facts as fields, and the
request id of the request being handled on every line logged meanwhile."""

from __future__ import annotations

import io
import json
import logging

import pytest

from memory.entrypoints.logging_setup import REQUEST_ID, configure_logging, wants_json


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# configure_logging changes the root logger.
pytestmark = pytest.mark.usefixtures("restore_logging")


def test_off_a_terminal_each_line_is_a_json_object_with_the_fields() -> None:
    stream = io.StringIO()
    configure_logging("INFO", "auto", stream)
    logging.getLogger("memory.test").info("sweep pass", extra={"windows_embedded": 3})
    entry = json.loads(stream.getvalue().splitlines()[0])
    assert entry["message"] == "sweep pass"
    assert entry["level"] == "INFO"
    assert entry["logger"] == "memory.test"
    assert entry["windows_embedded"] == 3
    assert entry["time"].endswith("+00:00")


def test_on_a_terminal_lines_are_text_with_key_value_fields() -> None:
    stream = Terminal()
    configure_logging("INFO", "auto", stream)
    logging.getLogger("memory.test").info("sweep pass", extra={"windows_embedded": 3})
    line = stream.getvalue().strip()
    assert "INFO memory.test: sweep pass windows_embedded=3" in line
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)


def test_the_format_setting_overrides_the_terminal_check() -> None:
    assert wants_json("json", Terminal())
    assert not wants_json("text", io.StringIO())
    assert wants_json("auto", io.StringIO())
    assert not wants_json("auto", Terminal())


def test_a_line_logged_while_a_request_is_handled_carries_its_id() -> None:
    stream = io.StringIO()
    configure_logging("INFO", "json", stream)
    token = REQUEST_ID.set("req-42")
    try:
        logging.getLogger("memory.test").warning("inside")
    finally:
        REQUEST_ID.reset(token)
    logging.getLogger("memory.test").warning("outside")
    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines())
    assert inside["request_id"] == "req-42"
    assert "request_id" not in outside


def test_an_exception_is_one_json_line_with_its_traceback() -> None:
    stream = io.StringIO()
    configure_logging("INFO", "json", stream)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("memory.test").exception("failed")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    assert "RuntimeError: boom" in json.loads(lines[0])["exception"]


def test_debug_lines_are_dropped_at_info() -> None:
    stream = io.StringIO()
    configure_logging("INFO", "json", stream)
    logging.getLogger("memory.test").debug("noise")
    assert stream.getvalue() == ""
