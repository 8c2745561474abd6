"""The route table's helpers: what they derive from an operation's route."""

from __future__ import annotations

import pytest

from memory.contract import history_requests as h
from memory.contract import responses as s
from memory.entrypoints.http.openapi import _v1


def test_an_operation_takes_its_path_model_and_its_422_from_its_route() -> None:
    op = _v1("flags", "GET /v1/orgs/{org_id}/feature-flags/{flag}", "x", "x", s.OrgFlagBody)
    assert (op.method, op.path, op.path_model) == (
        "GET",
        "/v1/orgs/{org_id}/feature-flags/{flag}",
        h.OrgFlagPath,
    )
    assert op.errors[422] == ["validation_error"]
    assert 422 not in _v1("flags", "GET /v1/feature-flags", "x", "x", s.GlobalFlagsBody).errors


def test_a_path_no_model_describes_is_refused() -> None:
    with pytest.raises(LookupError, match=r"\['thing_id'\]"):
        _v1("things", "GET /v1/things/{thing_id}", "getThing", "A thing", None)
