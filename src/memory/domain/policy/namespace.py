"""Who owns a policy: nobody in particular (the global namespace, every org reads it) or one
org (only that org reads it, besides keys for every org). docs/adr/0102.

A policy id is unique per namespace; the pair is a `PolicyAddress`, and the address, not the
id alone, makes the aggregate id. A global policy's aggregate id is the one every policy had
before namespaces existed (`uuid5(POLICY_NAMESPACE, policy_id)`), so stored policies, their
embedding references and cursors stay what they were. An org's policy hashes
`<org_id>/<policy_id>`: neither an org id nor a policy id may contain `/`, so no org policy
can take a global policy's id, nor two orgs each other's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from uuid import NAMESPACE_URL, UUID, uuid5

from memory.domain.errors import InvalidInput
from memory.domain.policy.policy_id import PolicyId

POLICY_NAMESPACE = uuid5(NAMESPACE_URL, "memory:policy")
GLOBAL_TEXT = "global"
ORG_PREFIX = "org:"
# The org id rule of the whole service (memory.domain.history.chat_input): repeated, not
# imported, so the policy context does not depend on the history context's domain.
_ORG_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
NAMESPACE_RULE = (
    "must be 'global' or 'org:' followed by an org id (1 to 128 characters: letters, "
    "digits, '.', '_', ':' or '-', starting with a letter or digit)"
)


@dataclass(frozen=True, slots=True)
class PolicyNamespace:
    """`org_id` None: the global namespace. Its text (`global`, `org:<org_id>`) is how the
    API, the CLI and the answers name it."""

    org_id: str | None = None

    @classmethod
    def parse(cls, text: str, *, field: str = "namespace") -> PolicyNamespace:
        if text == GLOBAL_TEXT:
            return GLOBAL
        if text.startswith(ORG_PREFIX) and _ORG_ID.fullmatch(text[len(ORG_PREFIX) :]):
            return cls(text[len(ORG_PREFIX) :])
        raise InvalidInput(field, NAMESPACE_RULE)

    @classmethod
    def of_org(cls, org_id: str) -> PolicyNamespace:
        return cls(org_id)

    @property
    def is_global(self) -> bool:
        return self.org_id is None

    @property
    def text(self) -> str:
        return GLOBAL_TEXT if self.org_id is None else f"{ORG_PREFIX}{self.org_id}"

    def visible(self) -> tuple[PolicyNamespace, ...]:
        """What a reader standing in this namespace sees, own namespace first: an org sees
        its own policies and the global ones; the global namespace sees only itself."""
        return (self,) if self.org_id is None else (self, GLOBAL)

    def __str__(self) -> str:
        return self.text


GLOBAL = PolicyNamespace(None)


def policy_aggregate_id(policy_id: str, org_id: str | None) -> UUID:
    """The aggregate id of a policy id in a namespace (see the module's docstring)."""
    name = policy_id if org_id is None else f"{org_id}/{policy_id}"
    return uuid5(POLICY_NAMESPACE, name)


@dataclass(frozen=True, slots=True)
class PolicyAddress:
    """A policy id in its namespace: what identifies one policy."""

    namespace: PolicyNamespace
    policy_id: PolicyId

    @property
    def aggregate_id(self) -> UUID:
        return policy_aggregate_id(self.policy_id.value, self.namespace.org_id)

    def __str__(self) -> str:
        if self.namespace.is_global:
            return self.policy_id.value
        return f"{self.policy_id.value} (namespace {self.namespace.text})"
