"""Feature flags of history search: two layers, checked together with the module flag.

- Global (admin) layer: one value per flag; when unset, the flag's default.
- Org layer: an optional override per org; when unset, the org inherits (counts as on).

A flag is on for an org only if both layers are on, so the global layer is the master
switch: turning it off turns the feature off everywhere; an org can opt out while it is on.
Semantic search runs for an org only when `digital_worker` (the module) and
`digital_worker_semantic_search` are both on (docs/adr/0032-feature-flag-layers.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

MODULE_FLAG = "digital_worker"
SEMANTIC_SEARCH_FLAG = "digital_worker_semantic_search"

# Flag name -> value of the global layer when nobody has set it.
GLOBAL_DEFAULTS: Mapping[str, bool] = {
    MODULE_FLAG: True,
    SEMANTIC_SEARCH_FLAG: False,
}
# An org that never set a flag follows the global layer.
ORG_DEFAULT = True


def is_known(flag: str) -> bool:
    return flag in GLOBAL_DEFAULTS


@dataclass(frozen=True, slots=True)
class FlagSource:
    """A flag's value in one layer; `default` when nobody set it there."""

    flag: str
    layer: Literal["global", "org"]
    default: bool


@dataclass(frozen=True, slots=True)
class FlagLayers:
    """The stored values of both layers for one org: only what was explicitly set."""

    global_values: Mapping[str, bool]
    org_values: Mapping[str, bool]

    def global_value(self, flag: str) -> bool:
        return self.global_values.get(flag, GLOBAL_DEFAULTS[flag])

    def org_value(self, flag: str) -> bool:
        return self.org_values.get(flag, ORG_DEFAULT)

    def is_on(self, flag: str) -> bool:
        if not is_known(flag):
            raise KeyError(flag)
        return self.global_value(flag) and self.org_value(flag)

    def semantic_off_by(self) -> FlagSource | None:
        """Which layer of which flag keeps semantic search off for the org (the module flag
        before the feature's, the global layer before the org's); None when it is on."""
        for flag in (MODULE_FLAG, SEMANTIC_SEARCH_FLAG):
            if not self.global_value(flag):
                return FlagSource(flag, "global", flag not in self.global_values)
            if not self.org_value(flag):
                return FlagSource(flag, "org", False)
        return None

    def semantic_decided_by(self) -> FlagSource:
        """The layer that decides whether semantic search runs for the org: when off, the
        one that keeps it off (`semantic_off_by`); when on, the org's own override of the
        feature flag if it set one, else the global layer that turned it on."""
        off = self.semantic_off_by()
        if off is not None:
            return off
        if SEMANTIC_SEARCH_FLAG in self.org_values:
            return FlagSource(SEMANTIC_SEARCH_FLAG, "org", False)
        return FlagSource(
            SEMANTIC_SEARCH_FLAG, "global", SEMANTIC_SEARCH_FLAG not in self.global_values
        )

    @property
    def semantic_search(self) -> bool:
        return self.is_on(MODULE_FLAG) and self.is_on(SEMANTIC_SEARCH_FLAG)
