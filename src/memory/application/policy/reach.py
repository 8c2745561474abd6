"""Which policy namespaces a caller may read and write (docs/adr/0102).

A caller stands in one namespace: the one it names (`namespace`), or by default its home,
its org's for an org's key and the global one for a key that covers every org (and for the
operator and in-process callers). It reads what that namespace sees (its own policies and
the global ones) and writes only there. An org's key may stand in its own org or, to read,
in the global namespace; never in another org's, and it never writes global policies.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.application.access.errors import Forbidden
from memory.domain.policy.namespace import GLOBAL, PolicyNamespace

NAMESPACE_FIELD = "namespace"


class NamespaceForbidden(Forbidden):
    """A valid caller that may not use the namespace it named (HTTP 403). Its details name
    the field, as a 422 does. Whether that org has policies is never said."""

    def __init__(self, message: str) -> None:
        super().__init__(message, details={"field": NAMESPACE_FIELD})


@dataclass(frozen=True, slots=True)
class Reach:
    """The orgs a caller covers: one (`org_id`, an org's API key) or every org (None)."""

    org_id: str | None = None

    @property
    def home(self) -> PolicyNamespace:
        return GLOBAL if self.org_id is None else PolicyNamespace.of_org(self.org_id)

    def reading(self, requested: str | None) -> PolicyNamespace:
        """The namespace a read stands in. `InvalidInput` for a malformed name,
        `NamespaceForbidden` for another org's."""
        namespace = self._named(requested)
        self._refuse_other_org(namespace)
        return namespace

    def writing(self, requested: str | None) -> PolicyNamespace:
        """The namespace a write goes to; an org's key may not write global policies."""
        namespace = self._named(requested)
        self._refuse_other_org(namespace)
        if namespace.is_global and self.org_id is not None:
            raise NamespaceForbidden(
                "only an API key for every org may write global policies; this key writes "
                f"its org's (namespace org:{self.org_id})"
            )
        return namespace

    def _named(self, requested: str | None) -> PolicyNamespace:
        return self.home if requested is None else PolicyNamespace.parse(requested)

    def _refuse_other_org(self, namespace: PolicyNamespace) -> None:
        if (
            self.org_id is not None
            and namespace.org_id is not None
            and namespace.org_id != self.org_id
        ):
            raise NamespaceForbidden("this API key may not use that org's policies")


EVERY_ORG = Reach(None)
