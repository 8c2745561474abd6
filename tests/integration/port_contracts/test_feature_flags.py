"""`FeatureFlagStore`: the two stored layers, against the in-memory store and the
PostgreSQL one (docs/adr/0125)."""

from __future__ import annotations

from memory.application.history.ports import FeatureFlagStore
from memory.domain.history.feature_flags import MODULE_FLAG, SEMANTIC_SEARCH_FLAG, GlobalState


def test_only_what_was_set_is_stored_and_an_org_value_can_be_removed(
    flag_store: FeatureFlagStore,
) -> None:
    empty = flag_store.layers("acme")
    assert (dict(empty.global_values), dict(empty.org_values), empty.opt_in) == ({}, {}, set())
    assert flag_store.global_states() == {} and flag_store.global_layer() == {}
    flag_store.set_global(SEMANTIC_SEARCH_FLAG, GlobalState.OPT_IN)
    flag_store.set_global(MODULE_FLAG, GlobalState.ON)
    flag_store.set_global(MODULE_FLAG, GlobalState.OFF)
    assert flag_store.global_states() == {
        SEMANTIC_SEARCH_FLAG: GlobalState.OPT_IN,
        MODULE_FLAG: GlobalState.OFF,
    }
    assert flag_store.global_layer() == {SEMANTIC_SEARCH_FLAG: True, MODULE_FLAG: False}
    flag_store.set_org("acme", SEMANTIC_SEARCH_FLAG, True)
    flag_store.set_org("acme", MODULE_FLAG, False)
    flag_store.set_org("acme", MODULE_FLAG, None)
    flag_store.set_org("globex", SEMANTIC_SEARCH_FLAG, False)
    acme = flag_store.layers("acme")
    assert dict(acme.org_values) == {SEMANTIC_SEARCH_FLAG: True}
    assert acme.opt_in == {SEMANTIC_SEARCH_FLAG}
    both = flag_store.layers_of(["acme", "globex", "initech"])
    assert {org: dict(layers.org_values) for org, layers in both.items()} == {
        "acme": {SEMANTIC_SEARCH_FLAG: True},
        "globex": {SEMANTIC_SEARCH_FLAG: False},
        "initech": {},
    }
    assert all(dict(layers.global_values) == dict(acme.global_values) for layers in both.values())
