"""Every enum a `memory.api` service takes or returns is a `StrEnum` exported by
`memory.api`, equal to its wire value, and the HTTP contract (what the client returns)
spells the same values: `result.semantic == "on"` holds in process as over HTTP."""

from __future__ import annotations

import dataclasses
import enum
import inspect
import typing
from typing import Any, Literal

import memory.api as api
from memory.contract import responses as wire


def _reachable_enums() -> dict[type[enum.Enum], str]:
    """Each enum type found in the exported dataclasses' fields and the exported services'
    public signatures (followed through dataclasses, containers and unions), with a path
    to where it was found."""
    found: dict[type[enum.Enum], str] = {}
    seen: set[type] = set()

    def walk(tp: Any, path: str) -> None:
        if typing.get_origin(tp) is not None:
            for arg in typing.get_args(tp):
                walk(arg, path)
        elif isinstance(tp, type) and issubclass(tp, enum.Enum):
            found.setdefault(tp, path)
        elif isinstance(tp, type) and dataclasses.is_dataclass(tp) and tp not in seen:
            seen.add(tp)
            hints = typing.get_type_hints(tp)
            for field in dataclasses.fields(tp):
                walk(hints[field.name], f"{path}.{field.name}")

    for name in api.__all__:
        exported = getattr(api, name)
        if not inspect.isclass(exported):
            continue
        walk(exported, name)
        for method_name, method in inspect.getmembers(exported, inspect.isfunction):
            # The project's own methods (a `Settings` also has pydantic's).
            if not method_name.startswith("_") and method.__module__.startswith("memory."):
                for param, hint in typing.get_type_hints(method).items():
                    walk(hint, f"{name}.{method_name}({param})")
    return found


def test_every_enum_of_the_api_is_an_exported_str_enum() -> None:
    found = _reachable_enums()
    # The ones known today; the walk finds any added later.
    assert {e.__name__ for e in found} >= {
        "SemanticState",
        "MatchedBy",
        "GlobalState",
        "VersionChange",
        "ScriptGroup",
    }
    for kind, where in found.items():
        assert issubclass(kind, enum.StrEnum), f"{kind.__name__} ({where}) is not a StrEnum"
        assert getattr(api, kind.__name__, None) is kind, f"memory.api lacks {kind.__name__}"
        assert kind.__name__ in api.__all__
        for member in kind:
            assert member == member.value and str(member) == member.value


def test_a_search_result_compares_equal_to_the_wire_values() -> None:
    result = api.HistorySearchResult(hits=[], semantic=api.SemanticState.ON, org_known=True)
    assert result.semantic == "on" and result.semantic != "off"
    assert {api.MatchedBy.FTS: 1}["fts"] == 1  # and hashes like its value


def _literal_values(model: type[Any], field: str) -> set[str]:
    annotation = model.model_fields[field].annotation
    assert typing.get_origin(annotation) is Literal, f"{model.__name__}.{field}"
    return set(typing.get_args(annotation))


def test_the_contract_spells_each_enum_as_the_api_does() -> None:
    pairs = [
        (wire.HistorySearchBody, "semantic", api.SemanticState),
        (wire.HistoryHitBody, "matched_by", api.MatchedBy),
        (wire.PolicyVersionBody, "change", api.VersionChange),
        (wire.GlobalFlagBody, "state", api.GlobalState),
        (wire.OrgFlagBody, "global_state", api.GlobalState),
        (wire.OrgFlagEntryBody, "global_state", api.GlobalState),
    ]
    for model, field, kind in pairs:
        assert _literal_values(model, field) == {m.value for m in kind}, model.__name__
