from __future__ import annotations

import pytest

from memory.domain.history.feature_flags import (
    GLOBAL_DEFAULTS,
    MODULE_FLAG,
    ORG_DEFAULT,
    SEMANTIC_SEARCH_FLAG,
    FlagLayers,
    is_known,
)


def layers(
    global_values: dict[str, bool] | None = None, org: dict[str, bool] | None = None
) -> FlagLayers:
    return FlagLayers(global_values or {}, org or {})


def test_defaults() -> None:
    assert GLOBAL_DEFAULTS == {MODULE_FLAG: True, SEMANTIC_SEARCH_FLAG: False}
    assert ORG_DEFAULT is True
    assert MODULE_FLAG == "digital_worker"
    assert SEMANTIC_SEARCH_FLAG == "digital_worker_semantic_search"
    assert not layers().semantic_search  # dark launch: off until the global switch


def test_global_on_enables_every_org_that_did_not_opt_out() -> None:
    assert layers({SEMANTIC_SEARCH_FLAG: True}).semantic_search
    assert not layers({SEMANTIC_SEARCH_FLAG: True}, {SEMANTIC_SEARCH_FLAG: False}).semantic_search


def test_the_global_layer_is_the_master_switch() -> None:
    assert not layers({SEMANTIC_SEARCH_FLAG: False}, {SEMANTIC_SEARCH_FLAG: True}).semantic_search
    assert not layers({}, {SEMANTIC_SEARCH_FLAG: True}).semantic_search


def test_the_module_flag_gates_the_feature() -> None:
    on = {SEMANTIC_SEARCH_FLAG: True}
    assert not layers(on, {MODULE_FLAG: False}).semantic_search
    assert not layers({**on, MODULE_FLAG: False}).semantic_search
    assert layers(on, {MODULE_FLAG: True, SEMANTIC_SEARCH_FLAG: True}).semantic_search


def test_each_layer_reports_its_value() -> None:
    lay = layers({SEMANTIC_SEARCH_FLAG: True}, {MODULE_FLAG: False})
    assert lay.global_value(MODULE_FLAG) is True
    assert lay.org_value(MODULE_FLAG) is False
    assert lay.org_value(SEMANTIC_SEARCH_FLAG) is True
    assert lay.is_on(SEMANTIC_SEARCH_FLAG) and not lay.is_on(MODULE_FLAG)


def test_unknown_flags() -> None:
    assert not is_known("nope")
    with pytest.raises(KeyError):
        layers().is_on("nope")


def test_semantic_off_by_names_the_first_layer_that_is_off() -> None:
    def off_by(g: dict[str, bool], o: dict[str, bool]) -> tuple[str, str, bool] | None:
        source = FlagLayers(g, o).semantic_off_by()
        return None if source is None else (source.flag, source.layer, source.default)

    assert off_by({}, {}) == (SEMANTIC_SEARCH_FLAG, "global", True)
    assert off_by({MODULE_FLAG: False, SEMANTIC_SEARCH_FLAG: True}, {}) == (
        MODULE_FLAG,
        "global",
        False,
    )
    assert off_by({SEMANTIC_SEARCH_FLAG: True}, {MODULE_FLAG: False}) == (
        MODULE_FLAG,
        "org",
        False,
    )
    assert off_by({SEMANTIC_SEARCH_FLAG: True}, {SEMANTIC_SEARCH_FLAG: False}) == (
        SEMANTIC_SEARCH_FLAG,
        "org",
        False,
    )
    assert off_by({SEMANTIC_SEARCH_FLAG: True}, {}) is None
