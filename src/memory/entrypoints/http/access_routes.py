"""HTTP of access control: API keys and the audit log.

POST   /v1/api-keys            create a key; the secret is in this answer only   201
GET    /v1/api-keys            the keys the caller may manage (no secrets)       200
                                (?created_by=KEY_ID: the keys it created)
GET    /v1/api-keys/self       the caller's own key and what it may call         200
DELETE /v1/api-keys/{key_id}   revoke                                            204
GET    /v1/audit               administrative changes, newest first              200
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memory.application.access.service import AccessService
from memory.application.audit.ports import AuditQuery, AuditTrail
from memory.contract.access_requests import AuditParams, KeyPath, KeysParams, NewKeyBody
from memory.domain.access.scopes import Scope
from memory.entrypoints.http.access import Access, AccessTable, api_key, permitted
from memory.entrypoints.http.answer import AnswerResponse
from memory.entrypoints.http.database_stall import watched
from memory.entrypoints.http.openapi import OPERATIONS
from memory.entrypoints.http.parsing import RequestChecks, parse_path, parse_query
from memory.entrypoints.presenters.access import keys_body, new_key_body, own_key_body
from memory.entrypoints.presenters.audit import audit_page_body

ACCESS: AccessTable = {
    ("POST", "/v1/api-keys"): Access.any_org(Scope.ADMIN),
    ("GET", "/v1/api-keys"): Access.any_org(Scope.ADMIN),
    # Every key, even a read-only one for one org: its holder has the secret already.
    ("GET", "/v1/api-keys/self"): Access.key_holder(),
    ("DELETE", "/v1/api-keys/{key_id}"): Access.any_org(Scope.ADMIN),
    ("GET", "/v1/audit"): Access.every_org(Scope.ADMIN),
}


def access_routes(
    keys: AccessService, audit: AuditTrail, table: Callable[[], AccessTable]
) -> list[BaseRoute]:
    """`table`: every route's access rule, which `GET /v1/api-keys/self` reads to say
    which operations the caller may call."""

    async def create(request: Request) -> Response:
        checks = RequestChecks()
        body = await checks.body(request, NewKeyBody)
        valid = checks.valid
        await checks.rules(
            lambda: keys.check_new_key(
                valid.get("name"),
                valid.get("scopes"),
                expires_at=valid.get("expires_at"),
                expires_in_days=valid.get("expires_in_days"),
            )
        )
        checks.raise_any()
        assert body is not None
        caller = api_key(request.scope)
        created = await watched(
            lambda: keys.create(
                caller,
                body.name,
                body.org_id,
                body.scopes,
                expires_at=body.expires_at,
                expires_in_days=body.expires_in_days,
            )
        )
        return AnswerResponse(
            new_key_body(created.key, created.secret),
            201,
            headers={"Cache-Control": "no-store"},
        )

    async def listing(request: Request) -> Response:
        params = parse_query(request, KeysParams)
        caller = api_key(request.scope)
        found = await watched(lambda: keys.keys(caller, created_by=params.created_by))
        return AnswerResponse(keys_body(found))

    async def own(request: Request) -> Response:
        caller = api_key(request.scope)
        allowed = permitted(table(), caller)
        operations = [op.operation_id for op in OPERATIONS if (op.method, op.path) in allowed]
        return AnswerResponse(
            own_key_body(keys.own_key(caller), operations),
            headers={"Cache-Control": "no-store"},
        )

    async def revoke(request: Request) -> Response:
        key_id = parse_path(request, KeyPath).key_id
        caller = api_key(request.scope)
        await watched(lambda: keys.revoke(caller, key_id))
        return Response(status_code=204)

    async def audit_log(request: Request) -> Response:
        params = parse_query(request, AuditParams)
        query = AuditQuery(
            since=params.since,
            until=params.until,
            org_id=params.org_id,
            limit=params.limit,
            before_id=params.cursor,
        )
        page = await watched(lambda: audit.entries(query))
        return AnswerResponse(audit_page_body(page))

    return [
        Route("/v1/api-keys", create, methods=["POST"]),
        Route("/v1/api-keys", listing, methods=["GET"]),
        Route("/v1/api-keys/self", own, methods=["GET"]),
        Route("/v1/api-keys/{key_id}", revoke, methods=["DELETE"]),
        Route("/v1/audit", audit_log, methods=["GET"]),
    ]
