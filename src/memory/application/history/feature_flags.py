"""Reading and setting the feature flags of history search."""

from __future__ import annotations

from dataclasses import dataclass

from memory.application.history.ports import FeatureFlagStore
from memory.domain.errors import NotFound
from memory.domain.history.feature_flags import GLOBAL_DEFAULTS, is_known


@dataclass(frozen=True, slots=True)
class GlobalFlag:
    flag: str
    enabled: bool
    default: bool
    is_set: bool


@dataclass(frozen=True, slots=True)
class OrgFlag:
    flag: str
    global_enabled: bool
    org_override: bool | None
    effective: bool


class FeatureFlags:
    def __init__(self, store: FeatureFlagStore) -> None:
        self._store = store

    def global_flags(self) -> list[GlobalFlag]:
        stored = self._store.global_layer()
        return [
            GlobalFlag(flag, stored.get(flag, default), default, flag in stored)
            for flag, default in GLOBAL_DEFAULTS.items()
        ]

    def global_flag(self, flag: str) -> GlobalFlag:
        _check(flag)
        return next(f for f in self.global_flags() if f.flag == flag)

    def set_global(self, flag: str, enabled: bool) -> GlobalFlag:
        _check(flag)
        self._store.set_global(flag, enabled)
        return self.global_flag(flag)

    def org_flags(self, org_id: str) -> list[OrgFlag]:
        layers = self._store.layers(org_id)
        return [
            OrgFlag(
                flag,
                layers.global_value(flag),
                layers.org_values.get(flag),
                layers.is_on(flag),
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
