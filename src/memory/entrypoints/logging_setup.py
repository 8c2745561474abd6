"""Log format for every entrypoint: one line per event, its facts as fields.

A log call states what happened in a short message and passes its numbers as fields
(`log.info("sweep pass", extra={"windows_embedded": 3})`). On a terminal a line reads
`12:00:01 INFO memory.service: sweep pass windows_embedded=3`; anywhere else (a file, a
container's log driver, journald) it is one JSON object per line, so that a log pipeline
reads the fields without parsing prose. `MEMORY_LOG_FORMAT` overrides the choice.

Lines logged while an HTTP request is handled carry its `request_id` (also in worker
threads: anyio copies the context into them).
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

LogFormat = Literal["auto", "json", "text"]

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "memory_request_id", default=None
)

# Attributes every LogRecord has; anything else on a record came from `extra=` and is a field
# (except uvicorn's `color_message`, the message again with terminal colours).
_RECORD_ATTRIBUTES = frozenset(
    vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None)).keys()
) | {"message", "asctime", "taskName", "color_message"}


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields of a record: what the call passed as `extra`."""
    return {k: v for k, v in vars(record).items() if k not in _RECORD_ATTRIBUTES}


class RequestIdFilter(logging.Filter):
    """Adds the request id of the HTTP request being handled, if any, to each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = REQUEST_ID.get()
        if request_id is not None and not hasattr(record, "request_id"):
            record.request_id = request_id
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, then the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in fields_of(record).items():
            entry.setdefault(key, value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """For a person at a terminal: the message, then `key=value` for each field."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        fields = fields_of(record)
        if fields:
            line += " " + " ".join(f"{k}={_text_value(v)}" for k, v in fields.items())
        return line


def _text_value(value: object) -> str:
    text = str(value)
    return json.dumps(text, ensure_ascii=False) if (" " in text or not text) else text


def wants_json(log_format: LogFormat, stream: TextIO) -> bool:
    if log_format != "auto":
        return log_format == "json"
    isatty = getattr(stream, "isatty", None)
    return not (callable(isatty) and isatty())


def configure_logging(
    level: str, log_format: LogFormat = "auto", stream: TextIO | None = None
) -> None:
    stream = sys.stderr if stream is None else stream
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if wants_json(log_format, stream) else TextFormatter())
    handler.addFilter(RequestIdFilter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    # httpx logs every request at INFO; that is noise for an embedding client.
    logging.getLogger("httpx").setLevel(logging.WARNING)
