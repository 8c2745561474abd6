"""`AccessService`: the access context's one application service, what HTTP (`/v1/api-keys`
and the authentication in front of every route) and `memory keys` call.

It builds its two parts from the ports: `Authentication` (a secret -> its key, with this
process's caches) and `KeyAdministration` (create, list, revoke, the first admin key), and
reports every operation that may do I/O to its observers as the other contexts' services do
(`application/observer.py`). `cached` is not reported: it is a dictionary read on the event
loop in front of every request, and its answers are the lookups `authenticate` reported
(docs/adr/0127).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime

from memory.application.access.authentication import Authentication, Miss, OwnKey
from memory.application.access.key_administration import CreatedKey, KeyAdministration
from memory.application.access.ports import KeyStore
from memory.application.audit.ports import AuditTrail
from memory.application.observer import Observed, ServiceObserver
from memory.domain.access.api_key import ApiKey

CONTEXT = "access"


class AccessService:
    def __init__(
        self,
        store: KeyStore,
        audit: AuditTrail,
        *,
        admin_token: str | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
        random_bytes: Callable[[int], bytes] = secrets.token_bytes,
        observers: Sequence[ServiceObserver] = (),
    ) -> None:
        """Raises `InvalidInput` for an `admin_token` shorter than `MIN_ADMIN_TOKEN_CHARS`."""
        self.authentication = Authentication(
            store, admin_token=admin_token, now=now, monotonic=monotonic
        )
        self.administration = KeyAdministration(
            store, audit, self.authentication, now=now, random_bytes=random_bytes
        )
        self._observed = Observed(CONTEXT, observers)

    def observe(self, observer: ServiceObserver) -> None:
        self._observed.add(observer)

    # Authentication ---------------------------------------------------------------------

    def cached(self, secret: str) -> ApiKey | Miss | None:
        """`Authentication.cached`: no I/O, not reported."""
        return self.authentication.cached(secret)

    def authenticate(self, secret: str) -> ApiKey | None:
        """`Authentication.authenticate`: the live key, None, or `KeyExpired`."""
        return self._observed.run("authenticate", lambda: self.authentication.authenticate(secret))

    def own_key(self, caller: ApiKey) -> OwnKey:
        return self.authentication.own_key(caller)

    # Key administration -----------------------------------------------------------------

    def create(
        self,
        caller: ApiKey,
        name: str,
        org_id: str | None,
        scopes: Iterable[str],
        *,
        expires_at: datetime | None = None,
        expires_in_days: int | None = None,
    ) -> CreatedKey:
        """`KeyAdministration.create`."""
        return self._observed.run(
            "create_key",
            lambda: self.administration.create(
                caller,
                name,
                org_id,
                scopes,
                expires_at=expires_at,
                expires_in_days=expires_in_days,
            ),
        )

    def check_new_key(
        self,
        name: str | None = None,
        scopes: Iterable[str] | None = None,
        *,
        expires_at: datetime | None = None,
        expires_in_days: int | None = None,
    ) -> None:
        """`KeyAdministration.check_new_key`: pure, not reported (as the other services'
        `check_*`)."""
        self.administration.check_new_key(
            name, scopes, expires_at=expires_at, expires_in_days=expires_in_days
        )

    def keys(self, caller: ApiKey, *, created_by: str | None = None) -> list[ApiKey]:
        """`KeyAdministration.keys`."""
        return self._observed.run(
            "keys", lambda: self.administration.keys(caller, created_by=created_by)
        )

    def revoke(self, caller: ApiKey, key_id: str) -> ApiKey:
        """`KeyAdministration.revoke`."""
        return self._observed.run("revoke_key", lambda: self.administration.revoke(caller, key_id))

    def bootstrap(self, name: str = "bootstrap admin") -> CreatedKey | None:
        """`KeyAdministration.bootstrap`."""
        return self._observed.run("bootstrap", lambda: self.administration.bootstrap(name))
