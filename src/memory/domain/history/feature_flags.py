"""Feature flags of history search: two layers, checked together with the module flag.

- Global (admin) layer: one state per flag, `off`, `on` or `opt_in`; when unset, the flag's
  default (`on` or `off`).
- Org layer: an optional override per org. When unset, the org follows the global state:
  on under `on`, off under `opt_in` (only the orgs that set `true` have the flag).

A flag is on for an org only if both layers are on, so the global layer is the master
switch: `off` turns the feature off everywhere; under `on` an org can opt out, under `opt_in`
an org must opt in, and every org that did not (present or future) stays off
(docs/adr/0131).
Semantic search runs for an org only when `digital_worker` (the module) and
`digital_worker_semantic_search` are both on (docs/adr/0032-feature-flag-layers.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

MODULE_FLAG = "digital_worker"
SEMANTIC_SEARCH_FLAG = "digital_worker_semantic_search"

# Flag name -> value of the global layer when nobody has set it.
GLOBAL_DEFAULTS: Mapping[str, bool] = {
    MODULE_FLAG: True,
    SEMANTIC_SEARCH_FLAG: False,
}
# An org that never set a flag follows the global layer (when that is `on`).
ORG_DEFAULT = True


class GlobalState(StrEnum):
    """A flag's global layer: off everywhere, on for every org that did not opt out, or on
    only for the orgs that opted in. Compares equal to its wire value (`"opt_in"`)."""

    OFF = "off"
    ON = "on"
    OPT_IN = "opt_in"

    @classmethod
    def of(cls, enabled: bool) -> GlobalState:
        return cls.ON if enabled else cls.OFF

    @property
    def enabled(self) -> bool:
        """The master switch: whether any org can have the flag."""
        return self is not GlobalState.OFF


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
    # The flags whose global state is `opt_in` (their `global_values` are True): an org that
    # set nothing for one of them does not have it.
    opt_in: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, states: Mapping[str, GlobalState], org_values: Mapping[str, bool]) -> FlagLayers:
        """From the stored global states and the org's stored values."""
        return cls(
            {flag: state.enabled for flag, state in states.items()},
            org_values,
            frozenset(flag for flag, state in states.items() if state is GlobalState.OPT_IN),
        )

    def global_value(self, flag: str) -> bool:
        return self.global_values.get(flag, GLOBAL_DEFAULTS[flag])

    def global_state(self, flag: str) -> GlobalState:
        if flag in self.opt_in and self.global_value(flag):
            return GlobalState.OPT_IN
        return GlobalState.of(self.global_value(flag))

    def org_default(self, flag: str) -> bool:
        """The org layer's value for an org that set nothing: off only under `opt_in`."""
        return ORG_DEFAULT and flag not in self.opt_in

    def org_value(self, flag: str) -> bool:
        return self.org_values.get(flag, self.org_default(flag))

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
                # `default`: the org did not opt in to a flag whose global state is opt_in.
                return FlagSource(flag, "org", flag not in self.org_values)
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
