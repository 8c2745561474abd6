"""`/openapi.json` is a reference on its own (issue 22, docs/adr/0110): every property and
parameter says what it means, every operation shows an example request and answer, and
each example is one its operation's models accept."""

from __future__ import annotations

from typing import Any

import pytest

from memory.contract.descriptions import BY_PLACE, FIELDS
from memory.contract.examples import operation_examples
from memory.entrypoints.http.openapi import OPERATIONS, Operation, openapi_document

BY_ID = {op.operation_id: op for op in OPERATIONS}


def _described() -> list[tuple[str, str, dict[str, Any]]]:
    """(place, name, the property or parameter) for every field of the document."""
    document = openapi_document()
    found = [
        (model, name, prop)
        for model, schema in document["components"]["schemas"].items()
        for name, prop in schema.get("properties", {}).items()
    ]
    for operations in document["paths"].values():
        for operation in operations.values():
            found += [(operation["operationId"], p["name"], p) for p in operation["parameters"]]
    return found


def test_every_property_and_parameter_has_a_description() -> None:
    missing = [
        f"{place}.{name}" for place, name, field in _described() if not field.get("description")
    ]
    assert missing == []


def test_every_glossary_entry_describes_something_in_the_document() -> None:
    places = {f"{place}.{name}" for place, name, _ in _described()}
    names = {name for _, name, _ in _described()}
    assert sorted(set(BY_PLACE) - places) == []
    assert sorted(set(FIELDS) - names) == []


def test_examples_exist_only_for_operations() -> None:
    assert sorted(set(operation_examples()) - set(BY_ID)) == []


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.operation_id)
def test_every_operation_has_an_example_request_and_answer_its_models_accept(
    op: Operation,
) -> None:
    example = operation_examples().get(op.operation_id)
    assert example is not None, f"{op.operation_id} has no example"
    [(status, answer_model)] = op.answers.items()
    assert example.status == status
    if op.path_model is not None:
        op.path_model.model_validate(example.path)
    else:
        assert example.path == {}
    if op.query is not None:
        op.query.model_validate(example.query)
    if op.body is not None:
        assert example.body is not None, f"{op.operation_id}: no example body"
        op.body.model_validate(example.body)
    else:
        assert example.body is None
    if answer_model is not None:
        assert example.answer is not None, f"{op.operation_id}: no example answer"
        answer_model.model_validate(example.answer)
    else:
        assert example.answer is None


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.operation_id)
def test_the_document_shows_each_example(op: Operation) -> None:
    example = operation_examples()[op.operation_id]
    operation = openapi_document()["paths"][op.path][op.method.lower()]
    shown = {p["name"]: p.get("example") for p in operation["parameters"]}
    assert {**example.path, **example.query}.items() <= shown.items()
    if op.body is not None:
        assert operation["requestBody"]["content"]["application/json"]["example"] == example.body
    answer = operation["responses"][str(example.status)]
    if example.answer is not None:
        assert answer["content"]["application/json"]["example"] == example.answer


def test_number_limits_are_json_schema_keywords() -> None:
    """pydantic writes a bound on an optional number as `ge`/`le`, which JSON Schema does
    not know (a client and the fuzzer ignore it): the bound belongs inside the branch."""
    found: list[str] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("integer", "number"):
                found.extend(f"{where}.{k}" for k in ("ge", "le", "gt", "lt") if k in node)
            for key, value in node.items():
                walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}.{i}")

    walk(openapi_document(), "")
    assert found == []
