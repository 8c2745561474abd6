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

from collections.abc import Callable
from typing import TypeVar

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memory.application.access.service import actor_of
from memory.application.errors import DeadlineExceeded
from memory.application.policy.commands import StoreReceipt
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
from memory.contract.responses import (
    PolicyActorBody,
    PolicyDocumentBody,
    PolicyPageBody,
    PolicySearchBody,
    PolicyVersionBody,
    PolicyVersionsBody,
    SearchResultBody,
    StoredPolicyBody,
    StoreReceiptBody,
)
from memory.domain.access.scopes import Scope
from memory.domain.policy.listing import StoredPolicy
from memory.domain.policy.search import PolicyDocument, SimilarityResult
from memory.domain.policy.versions import PolicyVersion
from memory.entrypoints.http.access import Access, AccessTable, api_key
from memory.entrypoints.http.answer import AnswerResponse
from memory.entrypoints.http.database_stall import watched
from memory.entrypoints.http.parsing import RequestChecks, parse_path, parse_query

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


def policy_routes(service: PolicyService, *, search_timeout: float) -> list[BaseRoute]:
    async def store(request: Request) -> Response:
        checks = RequestChecks()
        where = checks.query(request, NamespaceQuery)
        body = await checks.body(request, StoreBody)
        await checks.rules(lambda: service.check_store(**checks.valid))
        checks.raise_any()
        assert body is not None and where is not None
        key = api_key(request.scope)
        receipt: StoreReceipt = await watched(
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
            _receipt_body(receipt),
            201,
            headers={"Location": f"/v1/embeddings/{receipt.embedding_ref}"},
        )

    async def update(request: Request) -> Response:
        policy_id = parse_path(request, PolicyPath).policy_id
        checks = RequestChecks()
        where = checks.query(request, NamespaceQuery)
        body = await checks.body(request, UpdateBody)
        await checks.rules(lambda: service.check_update(policy_id, **checks.valid))
        checks.raise_any()
        assert body is not None and where is not None
        key = api_key(request.scope)
        receipt: StoreReceipt = await watched(
            lambda: service.update(
                policy_id,
                body.content,
                body.metadata,
                actor=actor_of(key),
                reach=Reach(key.org_id),
                namespace=where.namespace,
            )
        )
        return AnswerResponse(_receipt_body(receipt))

    async def get(request: Request) -> Response:
        policy_id = parse_path(request, PolicyPath).policy_id
        namespace = parse_query(request, NamespaceQuery).namespace
        reach = _reach(request)
        policy = await watched(lambda: service.get(policy_id, reach=reach, namespace=namespace))
        return AnswerResponse(policy_body(policy))

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
        return AnswerResponse(
            PolicyPageBody(
                policies=[policy_body(p) for p in page.policies], next_cursor=page.next_cursor
            )
        )

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
        return AnswerResponse(versions_body(policy_id, history))

    async def search(request: Request) -> Response:
        checks = RequestChecks()
        where = checks.query(request, NamespaceQuery)
        body = await checks.body(request, SearchBody)
        await checks.rules(lambda: service.check_search(**checks.valid))
        checks.raise_any()
        assert body is not None and where is not None
        reach = _reach(request)
        answer: SearchAnswer = await _within(
            search_timeout,
            lambda: service.search(
                body.query,
                similarity_threshold=body.similarity_threshold,
                min_relevance=body.min_relevance,
                limit=body.limit,
                offset=body.offset,
                cursor=body.cursor,
                max_results=body.max_results,
                filter=body.filter,
                reach=reach,
                namespace=where.namespace,
            ),
        )
        return AnswerResponse(
            search_body(answer),
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
        return AnswerResponse(_document_body(document, lookup.origin == "search"))

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


def _receipt_body(receipt: StoreReceipt) -> StoreReceiptBody:
    return StoreReceiptBody(
        policy_id=receipt.policy_id,
        embedding_ref=receipt.embedding_ref,
        version=receipt.version,
        model=receipt.model,
        dimensions=receipt.dimensions,
        stored_at=receipt.stored_at,
        searchable=receipt.searchable,
        namespace=receipt.namespace.text,
    )


def versions_body(policy_id: str, history: list[PolicyVersion]) -> PolicyVersionsBody:
    """A policy's versions as `GET .../versions` and `memory policies versions` show them."""
    return PolicyVersionsBody(
        policy_id=policy_id,
        versions=[_version_body(v) for v in history],
        namespace=history[0].namespace.text,
    )


def _version_body(version: PolicyVersion) -> PolicyVersionBody:
    return PolicyVersionBody(
        version=version.version,
        embedding_ref=version.embedding_ref,
        model=version.model,
        content_sha256=version.content_sha256,
        metadata=version.metadata.to_json(),
        recorded_at=version.recorded_at,
        change=version.change.value,
        actor=(
            None
            if version.actor is None
            else PolicyActorBody(key_id=version.actor.key_id, name=version.actor.name)
        ),
    )


def policy_body(policy: StoredPolicy) -> StoredPolicyBody:
    """A stored policy as `GET /v1/policies/{policy_id}` and `memory policies get` show it."""
    return StoredPolicyBody(
        policy_id=policy.policy_id,
        embedding_ref=policy.embedding_ref,
        version=policy.version,
        model=policy.model,
        title=policy.metadata.title,
        source=policy.metadata.source,
        tags=list(policy.metadata.tags),
        metadata=policy.metadata.to_json(),
        content=policy.content,
        stored_at=policy.stored_at,
        updated_at=policy.updated_at,
        namespace=policy.namespace.text,
    )


def search_body(answer: SearchAnswer) -> PolicySearchBody:
    """The answer of `POST /v1/policies/search` (also what bench/answers.py renders)."""
    return PolicySearchBody(
        results=[_result_body(r) for r in answer.results],
        next_cursor=answer.next_cursor,
        model=answer.model,
        similarity_threshold=answer.threshold,
        min_relevance=answer.min_relevance,
    )


def _result_body(result: SimilarityResult) -> SearchResultBody:
    return SearchResultBody(
        embedding_ref=result.embedding_ref,
        policy_id=result.policy_id,
        version=result.version,
        similarity=result.similarity,
        relevance=None if result.relevance is None else round(result.relevance, 4),
        title=result.metadata.title,
        source=result.metadata.source,
        tags=list(result.metadata.tags),
        metadata=result.metadata.to_json(),
        timestamp=result.timestamp,
        namespace=result.namespace.text,
    )


def _document_body(document: PolicyDocument, with_similarity: bool) -> PolicyDocumentBody:
    return PolicyDocumentBody(
        embedding_ref=document.embedding_ref,
        policy_id=document.policy_id,
        version=document.version,
        title=document.metadata.title,
        source=document.metadata.source,
        content=document.content,
        timestamp=document.timestamp,
        metadata=document.metadata.to_json(),
        similarity=document.similarity if with_similarity else None,
        namespace=document.namespace.text,
    )
