"""Authentication and authorisation of every request, in one place (docs/adr/0059).

Each routes module declares, next to its routes, one table `ACCESS` from (method, path
template) to the `Access` a request needs: a scope, and which path parameter names the org
the request acts on. `AccessControl` (a pure ASGI middleware in front of the router) matches
the request to its route, looks the rule up, and answers 401/403/429 before any handler
runs. A route without a rule is refused to every key (fail closed), and a test walks every
registered route to keep it so. `Access.refusal` is the one rule both for a request and for
telling a key which routes it may call (`permitted`, `GET /v1/api-keys/self`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from memory.application.access.authentication import Miss
from memory.application.access.rate_limits import FailedAuthentications, RateLimits
from memory.application.access.service import AccessService
from memory.domain.access.api_key import ApiKey
from memory.domain.access.rate_limit import retry_after_header
from memory.domain.access.scopes import Scope as KeyScope
from memory.domain.errors import DomainError
from memory.entrypoints.http.database_stall import watched
from memory.entrypoints.http.errors import error_body, handle_domain_error

log = logging.getLogger(__name__)

BEARER = "bearer"


@dataclass(frozen=True, slots=True)
class Access:
    """What a request to one route needs. `scope` None: open to anyone (only /healthz,
    and /metrics when configured public), unless `any_key`: any valid key, whatever its
    scopes and org. `org_param`: the path parameter naming the org, which the key must
    cover. `all_orgs`: only a key for every org may call it. `lists_orgs`: any key with the
    scope may call it, and the answer lists only the orgs the key covers (the handler
    narrows its listing by `visible_orgs`, which fails on a route with any other rule)."""

    scope: KeyScope | None
    org_param: str | None = None
    all_orgs: bool = False
    lists_orgs: bool = False
    any_key: bool = False

    @classmethod
    def public(cls) -> Access:
        return cls(None)

    @classmethod
    def key_holder(cls) -> Access:
        """Any valid key: for what a key may learn about itself (it holds the secret)."""
        return cls(None, any_key=True)

    @property
    def is_public(self) -> bool:
        return self.scope is None and not self.any_key

    @classmethod
    def any_org(cls, scope: KeyScope) -> Access:
        """The scope, whichever org the key belongs to; the service checks the org where
        it is not in the path (a policy's namespace, docs/adr/0102; key management)."""
        return cls(scope)

    @classmethod
    def org(cls, scope: KeyScope, param: str = "org_id") -> Access:
        return cls(scope, org_param=param)

    @classmethod
    def every_org(cls, scope: KeyScope) -> Access:
        return cls(scope, all_orgs=True)

    @classmethod
    def own_orgs(cls, scope: KeyScope) -> Access:
        """A listing of orgs: every key with the scope, each seeing only its own orgs."""
        return cls(scope, lists_orgs=True)

    def refusal(self, key: ApiKey, org_id: str | None = None) -> str | None:
        """Why `key` may not call a route with this rule, or None. `org_id`: the org a
        request names (for a rule with `org_param`); None asks whether the key may call the
        route at all, on the orgs it covers. The reason for an org the key does not cover is
        the same whether that org exists or not."""
        if self.scope is None:
            return None
        if not key.has(self.scope):
            return f"this API key lacks the {self.scope.value} scope"
        if self.all_orgs and not key.all_orgs:
            return "only an API key for every org may do this"
        if self.org_param is not None and org_id is not None and not key.covers(org_id):
            return "this API key may not act on that org"
        return None


RouteKey = tuple[str, str]  # (method, path template)
AccessTable = Mapping[RouteKey, Access]


def api_key(scope: Scope) -> ApiKey:
    """The key `AccessControl` authenticated for this request (a handler behind a rule
    with a scope always has one)."""
    key = scope.get("state", {}).get("api_key")
    assert isinstance(key, ApiKey)
    return key


def visible_orgs(scope: Scope) -> frozenset[str] | None:
    """The orgs this request's key may see in a listing of orgs (None: every org). Only for
    routes whose rule is `Access.own_orgs`: anywhere else it fails (closed) instead of
    narrowing a listing the rule did not promise to narrow."""
    rule = scope.get("state", {}).get("access_rule")
    if not isinstance(rule, Access) or not rule.lists_orgs:
        raise AssertionError("visible_orgs on a route whose access rule does not list orgs")
    key = api_key(scope)
    return None if key.org_id is None else frozenset({key.org_id})


def permitted(table: AccessTable, key: ApiKey) -> frozenset[RouteKey]:
    """The routes `key` may call (a route on an org: on the orgs the key covers), by the
    same rule that admits or refuses its requests."""
    return frozenset(route for route, rule in table.items() if rule.refusal(key) is None)


class AccessControl:
    def __init__(
        self,
        app: ASGIApp,
        *,
        routes: Callable[[], list[BaseRoute]],
        table: Callable[[], AccessTable],
        keys: Callable[[], AccessService],
        rate_limits: Callable[[], RateLimits | None],
        failed_authentications: Callable[[], FailedAuthentications | None] = lambda: None,
    ) -> None:
        self.app = app
        self._routes = routes
        self._table = table
        self._keys = keys
        self._rate_limits = rate_limits
        self._failed = failed_authentications

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route, params = self._match(scope)
        rule = self._rule(scope, route)
        if rule is not None and rule.is_public:
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        if token is None:
            await _refuse(scope, receive, send, 401, "unauthenticated", "an API key is required")
            return
        address = _client_address(scope)
        try:
            key = await self._authenticate(token, address)
        # The key store is unreachable (503, as for any route) or the key expired (401).
        except DomainError as exc:
            response = await handle_domain_error(Request(scope), exc)
            await response(scope, receive, send)
            return
        except _TooManyFailures as exc:
            await _refuse(
                scope,
                receive,
                send,
                429,
                "rate_limited",
                "too many failed authentications from this address",
                {"Retry-After": retry_after_header(exc.wait)},
            )
            return
        if key is None:
            failed = self._failed()
            if failed is not None:
                failed.failed(address)
            await _refuse(
                scope, receive, send, 401, "unauthenticated", "unknown or revoked API key"
            )
            return
        # Known from here on, so the access line of a 403 or 429 names the key too (the
        # handler below reads it from the same place).
        scope.setdefault("state", {})["api_key"] = key
        denied = _denied(rule, key, params, scope, route)
        if denied is not None:
            await _refuse(scope, receive, send, 403, "forbidden", denied)
            return
        limits = self._rate_limits()
        if limits is not None:
            wait = limits.take(key.key_id)
            if wait > 0:
                await _refuse(
                    scope,
                    receive,
                    send,
                    429,
                    "rate_limited",
                    "too many requests for this API key",
                    {"Retry-After": retry_after_header(wait)},
                )
                return
        scope["state"]["access_rule"] = rule
        await self.app(scope, receive, send)

    def _match(self, scope: Scope) -> tuple[BaseRoute | None, dict[str, object]]:
        for route in self._routes():
            match, child = route.matches(scope)
            if match is Match.FULL:
                return route, dict(child.get("path_params", {}))
        return None, {}

    def _rule(self, scope: Scope, route: BaseRoute | None) -> Access | None:
        """None for a request that matches no route (it still needs a valid key; the app
        then answers 404 or 405) and for a route without a rule (refused below)."""
        if route is None:
            return None
        method = "GET" if scope["method"] == "HEAD" else scope["method"]
        return self._table().get((method, str(getattr(route, "path", ""))))

    async def _authenticate(self, token: str, address: str) -> ApiKey | None:
        """The key (None: malformed, unknown or revoked). A key the cache does not know is
        looked up only for an address that has failed authentications left
        (`_TooManyFailures` otherwise)."""
        keys = self._keys()
        found = keys.cached(token)
        if not isinstance(found, Miss):
            return found
        failed = self._failed()
        wait = 0.0 if failed is None else failed.wait(address)
        if wait > 0:
            raise _TooManyFailures(wait)
        return await watched(lambda: keys.authenticate(token))


class _TooManyFailures(Exception):
    def __init__(self, wait: float) -> None:
        super().__init__(wait)
        self.wait = wait


def _client_address(scope: Scope) -> str:
    """The client's address as the server saw it (behind a reverse proxy on this machine,
    uvicorn puts the proxy's X-Forwarded-For there; docs/security.md)."""
    client = scope.get("client")
    return "unknown" if not client else str(client[0])


def _denied(
    rule: Access | None,
    key: ApiKey,
    params: Mapping[str, object],
    scope: Scope,
    route: BaseRoute | None,
) -> str | None:
    """Why `key` may not make this request, or None."""
    if route is None:
        return None
    if rule is None:
        log.error("refused %s %s: the route has no access rule", scope["method"], scope["path"])
        return "this route has no access rule"
    org_id = None if rule.org_param is None else str(params.get(rule.org_param, ""))
    return rule.refusal(key, org_id)


def _bearer(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            header = bytes(value).decode("latin-1")
            scheme, _, rest = header.partition(" ")
            token = rest.strip()
            if scheme.lower() == BEARER and token:
                return token
            return None
    return None


async def _refuse(
    scope: Scope,
    receive: Receive,
    send: Send,
    status: int,
    code: str,
    message: str,
    headers: dict[str, str] | None = None,
) -> None:
    all_headers = dict(headers or {})
    if status == 401:
        all_headers["WWW-Authenticate"] = "Bearer"
    response = JSONResponse(error_body(code, message), status, headers=all_headers)
    await response(scope, receive, send)
