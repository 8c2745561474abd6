from __future__ import annotations

import pytest

from memory.domain.history.feature_flags import (
    GLOBAL_DEFAULTS,
    MODULE_FLAG,
    ORG_DEFAULT,
    SEMANTIC_SEARCH_FLAG,
    FlagLayers,
    GlobalState,
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


def opt_in(org: dict[str, bool] | None = None, *, module: bool = True) -> FlagLayers:
    states = {SEMANTIC_SEARCH_FLAG: GlobalState.OPT_IN, MODULE_FLAG: GlobalState.of(module)}
    return FlagLayers.of(states, org or {})


def test_under_opt_in_only_an_org_that_set_the_flag_has_it() -> None:
    assert opt_in({SEMANTIC_SEARCH_FLAG: True}).semantic_search
    assert not opt_in().semantic_search  # every org that set nothing, present or future
    assert not opt_in({SEMANTIC_SEARCH_FLAG: False}).semantic_search
    assert not opt_in({SEMANTIC_SEARCH_FLAG: True}, module=False).semantic_search
    assert not opt_in({SEMANTIC_SEARCH_FLAG: True, MODULE_FLAG: False}).semantic_search


def test_opt_in_is_a_global_state_with_the_master_switch_on() -> None:
    lay = opt_in()
    assert lay.global_state(SEMANTIC_SEARCH_FLAG) is GlobalState.OPT_IN
    assert lay.global_value(SEMANTIC_SEARCH_FLAG) is True
    assert lay.org_value(SEMANTIC_SEARCH_FLAG) is False
    # The module flag is `on`: an org inherits it as before.
    assert lay.global_state(MODULE_FLAG) is GlobalState.ON
    assert lay.org_value(MODULE_FLAG) is True
    assert layers().global_state(SEMANTIC_SEARCH_FLAG) is GlobalState.OFF
    assert GlobalState.OPT_IN == "opt_in" and GlobalState.OPT_IN.enabled
    assert not GlobalState.OFF.enabled


def test_an_org_that_did_not_opt_in_is_named_as_what_keeps_it_off() -> None:
    source = opt_in().semantic_off_by()
    assert source is not None
    assert (source.flag, source.layer, source.default) == (SEMANTIC_SEARCH_FLAG, "org", True)
    decided = opt_in({SEMANTIC_SEARCH_FLAG: True}).semantic_decided_by()
    assert (decided.flag, decided.layer, decided.default) == (SEMANTIC_SEARCH_FLAG, "org", False)
