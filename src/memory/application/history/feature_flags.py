"""Reading and setting the feature flags of history search."""

from __future__ import annotations

from dataclasses import dataclass

from memory.application.history.ports import FeatureFlagStore
from memory.domain.errors import NotFound
from memory.domain.history.feature_flags import GLOBAL_DEFAULTS, GlobalState, is_known


@dataclass(frozen=True, slots=True)
class GlobalFlag:
    """A flag's global layer: `state` (off, on or opt_in), `enabled` its master switch (on
    or opt_in), `default` the flag's value when unset, `is_set` whether someone set it."""

    flag: str
    enabled: bool
    default: bool
    is_set: bool
    state: GlobalState


@dataclass(frozen=True, slots=True)
class OrgFlag:
    """A flag for one org: the global master switch and state, the org's own value (None:
    it follows the global state) and whether the org has the flag."""

    flag: str
    global_enabled: bool
    org_override: bool | None
    effective: bool
    global_state: GlobalState


class FeatureFlags:
    def __init__(self, store: FeatureFlagStore) -> None:
        self._store = store

    def global_flags(self) -> list[GlobalFlag]:
        stored = self._store.global_states()
        states = {
            flag: stored.get(flag, GlobalState.of(default))
            for flag, default in GLOBAL_DEFAULTS.items()
        }
        return [
            GlobalFlag(flag, states[flag].enabled, default, flag in stored, states[flag])
            for flag, default in GLOBAL_DEFAULTS.items()
        ]

    def global_flag(self, flag: str) -> GlobalFlag:
        _check(flag)
        return next(f for f in self.global_flags() if f.flag == flag)

    def set_global(self, flag: str, state: GlobalState) -> GlobalFlag:
        _check(flag)
        self._store.set_global(flag, state)
        return self.global_flag(flag)

    def org_flags(self, org_id: str) -> list[OrgFlag]:
        layers = self._store.layers(org_id)
        return [
            OrgFlag(
                flag,
                layers.global_value(flag),
                layers.org_values.get(flag),
                layers.is_on(flag),
                layers.global_state(flag),
            )
            for flag in GLOBAL_DEFAULTS
        ]

    def org_flag(self, org_id: str, flag: str) -> OrgFlag:
        _check(flag)
        return next(f for f in self.org_flags(org_id) if f.flag == flag)

    def set_org(self, org_id: str, flag: str, enabled: bool | None) -> OrgFlag:
        """`None` removes the org's override: the org follows the global layer again."""
        _check(flag)
        self._store.set_org(org_id, flag, enabled)
        return self.org_flag(org_id, flag)

    def semantic_search(self, org_id: str) -> bool:
        return self._store.layers(org_id).semantic_search


def _check(flag: str) -> None:
    if not is_known(flag):
        raise NotFound(
            f"unknown feature flag {flag!r}",
            details={"flag": flag, "known": sorted(GLOBAL_DEFAULTS)},
        )
