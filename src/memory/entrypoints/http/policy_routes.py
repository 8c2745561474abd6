"""HTTP contract of policy memory:

    POST   /v1/policies                    StoreEmbedding          201
    GET    /v1/policies                    list, newest first      200
    GET    /v1/policies/{policy_id}        current version         200
    PUT    /v1/policies/{policy_id}        UpdateEmbedding         200
    DELETE /v1/policies/{policy_id}        delete                  204
    GET  /v1/policies/{policy_id}/versions version history         200
    POST /v1/policies/search               SearchEmbeddings        200
    GET  /v1/embeddings/{embedding_ref}    GetPolicyByEmbedding    200

Every route takes `?namespace=global|org:<org_id>` (omitted: the key's home) and passes the
key's reach and, for writes, its actor to the service, which decides what the key may read
and write there (docs/adr/0102, 0103).

Routes parse (bodies strictly: wrong JSON types are 422, never coerced), call
`PolicyService` in a worker thread, and answer; domain rules are the service's, metrics its
observers'. Errors become HTTP statuses in `memory.entrypoints.http.errors` only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any, TypeVar

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memory.application.access.key_administration import actor_of
from memory.application.errors import DeadlineExceeded
from memory.application.policy.queries import SearchAnswer
from memory.application.policy.reach import Reach
from memory.application.policy.service import PolicyService
from memory.contract.policy_requests import (
    EmbeddingLookup,
    EmbeddingPath,
    NamespaceQuery,
    PolicyListing,
    PolicyPath,
    SearchBody,
    StoreBody,
    UpdateBody,
)
from memory.domain.access.scopes import Scope
from memory.domain.policy.search import PolicyDocument, PolicySearch
from memory.entrypoints.http.access import Access, AccessTable, api_key
from memory.entrypoints.http.answer import AnswerResponse
from memory.entrypoints.http.database_stall import watched
from memory.entrypoints.http.parsing import RequestChecks, parse_path, parse_query
from memory.entrypoints.presenters import policy as present

T = TypeVar("T")

# Any key with the scope passes here; which namespaces it may read and write is the service's
# rule (`Reach`, docs/adr/0102), given the key's org.
ACCESS: AccessTable = {
    ("POST", "/v1/policies"): Access.any_org(Scope.POLICIES_WRITE),
    ("GET", "/v1/policies"): Access.any_org(Scope.POLICIES_READ),
    ("GET", "/v1/policies/{policy_id}"): Access.any_org(Scope.POLICIES_READ),
    ("DELETE", "/v1/policies/{policy_id}"): Access.any_org(Scope.POLICIES_WRITE),
    ("POST", "/v1/policies/search"): Access.any_org(Scope.POLICIES_READ),
    ("PUT", "/v1/policies/{policy_id}"): Access.any_org(Scope.POLICIES_WRITE),
    ("GET", "/v1/policies/{policy_id}/versions"): Access.any_org(Scope.POLICIES_READ),
    ("GET", "/v1/embeddings/{embedding_ref}"): Access.any_org(Scope.POLICIES_READ),
}


def policy_routes(
    service: PolicyService, *, search_timeout: float, max_content_chars: int
) -> list[BaseRoute]:
    # Checked on a body's bytes too: an 8 MB content is refused in its first MiB (ADR 0146).
    content_limit = {"content": max_content_chars}

    async def store(request: Request) -> Response:
        checks = RequestChecks()
        where = checks.query(request, NamespaceQuery)
        body = await checks.body(request, StoreBody, max_chars=content_limit)
        await checks.rules(lambda: service.check_store(**checks.valid))
        checks.raise_any()
        assert body is not None and where is not None
        key = api_key(request.scope)
        receipt = await watched(
            lambda: service.store(
                body.policy_id,
                body.content,
                body.metadata,
                actor=actor_of(key),
                reach=Reach(key.org_id),
                namespace=where.namespace,
            )
        )
        return AnswerResponse(
            present.receipt_body(receipt),
            201,
            headers={"Location": f"/v1/embeddings/{receipt.embedding_ref}"},
        )

    async def update(request: Request) -> Response:
        policy_id = parse_path(request, PolicyPath).policy_id
        checks = RequestChecks()
        where = checks.query(request, NamespaceQuery)
        body = await checks.body(request, UpdateBody, max_chars=content_limit)
        await checks.rules(lambda: service.check_update(policy_id, **checks.valid))
        checks.raise_any()
        assert body is not None and where is not None
        key = api_key(request.scope)
        receipt = await watched(
            lambda: service.update(
                policy_id,
                body.content,
                body.metadata,
                actor=actor_of(key),
                reach=Reach(key.org_id),
                namespace=where.namespace,
            )
        )
        return AnswerResponse(present.receipt_body(receipt))

    async def get(request: Request) -> Response:
        policy_id = parse_path(request, PolicyPath).policy_id
        namespace = parse_query(request, NamespaceQuery).namespace
        reach = _reach(request)
        policy = await watched(lambda: service.get(policy_id, reach=reach, namespace=namespace))
        return AnswerResponse(present.policy_body(policy))

    async def list_policies(request: Request) -> Response:
        checks = RequestChecks()
        listing = checks.query(request, PolicyListing)
        await checks.rules(lambda: service.check_listing(**checks.valid))
        checks.raise_any()
        assert listing is not None
        reach = _reach(request)
        page = await watched(
            lambda: service.list_policies(
                limit=listing.limit,
                cursor=listing.cursor,
                source=listing.source,
                tag=listing.tag,
                updated_since=listing.updated_since,
                reach=reach,
                namespace=listing.namespace,
            )
        )
        return AnswerResponse(present.policy_page_body(page))

    async def delete(request: Request) -> Response:
        policy_id = parse_path(request, PolicyPath).policy_id
        namespace = parse_query(request, NamespaceQuery).namespace
        key = api_key(request.scope)
        await watched(
            lambda: service.delete(
                policy_id, actor=actor_of(key), reach=Reach(key.org_id), namespace=namespace
            )
        )
        return Response(status_code=204)

    async def versions(request: Request) -> Response:
        policy_id = parse_path(request, PolicyPath).policy_id
        namespace = parse_query(request, NamespaceQuery).namespace
        reach = _reach(request)
        history = await watched(
            lambda: service.versions(policy_id, reach=reach, namespace=namespace)
        )
        return AnswerResponse(present.versions_body(policy_id, history))

    async def search(request: Request) -> Response:
        checks = RequestChecks()
        where = checks.query(request, NamespaceQuery)
        body = await checks.body(request, SearchBody)
        await checks.rules(
            lambda: service.check_search(
                search_of(checks.valid), namespace=checks.valid.get("namespace")
            )
        )
        checks.raise_any()
        assert body is not None and where is not None
        reach = _reach(request)
        asked = search_of(dict(body))
        answer: SearchAnswer = await _within(
            search_timeout,
            lambda: service.search(asked, reach=reach, namespace=where.namespace),
        )
        return AnswerResponse(
            present.search_body(answer),
            headers={
                "Server-Timing": (
                    f"embed;dur={answer.embed_seconds * 1000:.3f}, "
                    f"db;dur={answer.database_seconds * 1000:.3f}"
                )
            },
        )

    async def embedding(request: Request) -> Response:
        ref = parse_path(request, EmbeddingPath).embedding_ref
        lookup = parse_query(request, EmbeddingLookup)
        reach = _reach(request)
        document: PolicyDocument = await _within(
            search_timeout,
            lambda: service.get_by_embedding(
                ref,
                origin=lookup.origin,
                query=lookup.query,
                reach=reach,
                namespace=lookup.namespace,
            ),
        )
        return AnswerResponse(present.document_body(document, lookup.origin == "search"))

    return [
        Route("/v1/policies", store, methods=["POST"]),
        Route("/v1/policies", list_policies, methods=["GET"]),
        Route("/v1/policies/search", search, methods=["POST"]),
        Route("/v1/policies/{policy_id}", update, methods=["PUT"]),
        Route("/v1/policies/{policy_id}", get, methods=["GET"]),
        Route("/v1/policies/{policy_id}", delete, methods=["DELETE"]),
        Route("/v1/policies/{policy_id}/versions", versions, methods=["GET"]),
        Route("/v1/embeddings/{embedding_ref}", embedding, methods=["GET"]),
    ]


def _reach(request: Request) -> Reach:
    """The orgs the request's key covers."""
    return Reach(api_key(request.scope).org_id)


async def _within(seconds: float, run: Callable[[], T]) -> T:
    """Run `run` in a worker thread, answering 504 after `seconds` even if it still runs (a
    hung model server): the thread is abandoned, and its own deadline stops it before it
    touches the database."""
    with anyio.move_on_after(seconds):
        return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
    raise DeadlineExceeded(
        f"search timed out after {seconds:g}s",
        details={"timeout_seconds": seconds, "stage": "request"},
    )


SEARCH_FIELDS = tuple(f.name for f in fields(PolicySearch))


def search_of(parsed: Mapping[str, Any]) -> PolicySearch:
    """The search a request asked for, from its body's fields that parsed (the body model
    and `PolicySearch` share their field names)."""
    return PolicySearch(**{name: parsed[name] for name in SEARCH_FIELDS if name in parsed})
