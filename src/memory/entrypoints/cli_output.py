"""What every command prints: one JSON document with `--json`, readable text otherwise.

Commands build plain data (dicts, lists, numbers, strings, datetimes) and hand it to
`emit`; nothing is printed with `repr`, so no `PartitionMark(...)` or `datetime.datetime(...)`
ever reaches an operator. Progress bars and diagnostics go to stderr, results to stdout.
"""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any, TextIO

_mode = {"json": False}


def use_json(enabled: bool) -> None:
    """Set once by `main` from the command's `--json` flag."""
    _mode["json"] = enabled


def wants_json() -> bool:
    return _mode["json"]


def plain(value: Any) -> Any:
    """`value` as JSON-ready data: dataclass-like objects are never passed through `repr`."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "__dataclass_fields__"):
        return {name: plain(getattr(value, name)) for name in value.__dataclass_fields__}
    return str(value)


def emit(data: Mapping[str, Any], *, title: str | None = None, out: TextIO | None = None) -> None:
    """Print a command's result: JSON with `--json`, else `key: value` lines, lists of
    records as aligned tables."""
    stream = sys.stdout if out is None else out
    document = plain(data)
    if wants_json():
        print(json.dumps(document, ensure_ascii=False, indent=2), file=stream)
        return
    lines = [title] if title else []
    lines.extend(_text(document, indent=""))
    print("\n".join(lines), file=stream)


def error(message: str) -> None:
    """A failure, on stderr; as `{"error": ...}` on stdout too with `--json`, so scripts
    always get a document."""
    print(f"memory: {message}", file=sys.stderr)
    if wants_json():
        print(json.dumps({"error": message}, ensure_ascii=False))


def _text(data: Any, indent: str) -> list[str]:
    lines: list[str] = []
    if not isinstance(data, dict):
        return [indent + _scalar(data)]
    width = max((len(k) for k in data), default=0)
    for key, value in data.items():
        label = key.replace("_", " ")
        if isinstance(value, dict) and value:
            lines.append(f"{indent}{label}:")
            lines.extend(_text(value, indent + "  "))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"{indent}{label}:")
            lines.extend(_table(value, indent + "  "))
        elif isinstance(value, list):
            shown = ", ".join(_scalar(v) for v in value) if value else "none"
            lines.append(f"{indent}{label + ':':<{width + 2}}{shown}")
        else:
            lines.append(f"{indent}{label + ':':<{width + 2}}{_scalar(value)}")
    return lines


def _table(rows: list[dict[str, Any]], indent: str) -> list[str]:
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    headers = [c.replace("_", " ") for c in columns]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    out = [indent + "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for row_cells in cells:
        out.append(
            indent + "  ".join(c.ljust(w) for c, w in zip(row_cells, widths, strict=True)).rstrip()
        )
    return out


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k}={_scalar(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value) or "-"
    return _scalar(value)


def _scalar(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))
    if isinstance(value, dict):
        return _cell(value)
    return str(value)
