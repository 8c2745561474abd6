"""HTTP contract of policy memory:

    POST   /v1/policies                    StoreEmbedding          201
    GET    /v1/policies                    list, newest first      200
    GET    /v1/policies/{policy_id}        current version         200
    PUT    /v1/policies/{policy_id}        UpdateEmbedding         200
    DELETE /v1/policies/{policy_id}        delete                  204
    GET  /v1/policies/{policy_id}/versions version history         200
    POST /v1/policies/search               SearchEmbeddings        200
    GET  /v1/embeddings/{embedding_ref}    GetPolicyByEmbedding    200

Routes parse (bodies strictly: wrong JSON types are 422, never coerced), call
`PolicyService` in a worker thread, and answer; domain rules are the service's, metrics its
observers'. Errors become HTTP statuses in `memory.entrypoints.http.errors` only.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from memory.application.access.service import actor_of
from memory.application.errors import DeadlineExceeded
from memory.application.policy.commands import StoreReceipt
from memory.application.policy.queries import SearchAnswer
from memory.application.policy.service import PolicyService
from memory.contract.policy_requests import (
    EmbeddingLookup,
    EmbeddingPath,
    PolicyListing,
    PolicyPath,
    SearchBody,
    StoreBody,
    UpdateBody,
)
from memory.domain.access.scopes import Scope
from memory.domain.policy.listing import StoredPolicy
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.search import PolicyDocument, SimilarityResult
from memory.domain.policy.versions import PolicyVersion
from memory.entrypoints.http.access import Access, AccessTable, api_key
from memory.entrypoints.http.database_stall import watched
from memory.entrypoints.http.parsing import parse_body, parse_path, parse_query

T = TypeVar("T")

# Policies belong to no org: a key of any org with the scope may read or write them.
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
        body = await parse_body(request, StoreBody)
        receipt: StoreReceipt = await watched(
            lambda: service.store(body.policy_id, body.content, body.metadata)
        )
        return JSONResponse(
            _receipt_json(receipt),
            201,
            headers={"Location": f"/v1/embeddings/{receipt.embedding_ref}"},
        )

    async def update(request: Request) -> Response:
        policy_id = parse_path(request, PolicyPath).policy_id
        body = await parse_body(request, UpdateBody)
        receipt: StoreReceipt = await watched(
            lambda: service.update(policy_id, body.content, body.metadata)
        )
        return JSONResponse(_receipt_json(receipt), 200)

    async def get(request: Request) -> Response:
        policy_id = parse_path(request, PolicyPath).policy_id
        policy = await watched(lambda: service.get(policy_id))
        return JSONResponse(policy_json(policy))

    async def list_policies(request: Request) -> Response:
        listing = parse_query(request, PolicyListing)
        page = await watched(
            lambda: service.list_policies(
                limit=listing.limit,
                cursor=listing.cursor,
                source=listing.source,
                tag=listing.tag,
                updated_since=listing.updated_since,
            )
        )
        return JSONResponse(
            {"policies": [policy_json(p) for p in page.policies], "next_cursor": page.next_cursor}
        )

    async def delete(request: Request) -> Response:
        policy_id = parse_path(request, PolicyPath).policy_id
        actor = actor_of(api_key(request.scope))
        await watched(lambda: service.delete(policy_id, actor=actor))
        return Response(status_code=204)

    async def versions(request: Request) -> Response:
        policy_id = parse_path(request, PolicyPath).policy_id
        history = await watched(lambda: service.versions(policy_id))
        return JSONResponse(
            {"policy_id": policy_id, "versions": [_version_json(v) for v in history]}
        )

    async def search(request: Request) -> Response:
        body = await parse_body(request, SearchBody)
        answer: SearchAnswer = await _within(
            search_timeout,
            lambda: service.search(
                body.query,
                similarity_threshold=body.similarity_threshold,
                limit=body.limit,
                offset=body.offset,
                cursor=body.cursor,
                max_results=body.max_results,
                filter=body.filter,
            ),
        )
        return JSONResponse(
            {
                "results": [_result_json(r) for r in answer.results],
                "next_cursor": answer.next_cursor,
                "model": answer.model,
                "similarity_threshold": answer.threshold,
            },
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
        document: PolicyDocument = await _within(
            search_timeout,
            lambda: service.get_by_embedding(ref, origin=lookup.origin, query=lookup.query),
        )
        return JSONResponse(_document_json(document, lookup.origin == "search"))

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


def _iso(value: datetime) -> str:
    return value.isoformat()


def _receipt_json(receipt: StoreReceipt) -> dict[str, Any]:
    return {
        "policy_id": receipt.policy_id,
        "embedding_ref": str(receipt.embedding_ref),
        "version": receipt.version,
        "model": receipt.model,
        "dimensions": receipt.dimensions,
        "stored_at": _iso(receipt.stored_at),
        "searchable": receipt.searchable,
    }


def _version_json(version: PolicyVersion) -> dict[str, Any]:
    return {
        "version": version.version,
        "embedding_ref": str(version.embedding_ref),
        "model": version.model,
        "content_sha256": version.content_sha256,
        "metadata": version.metadata.to_json(),
        "recorded_at": _iso(version.recorded_at),
        "change": version.change.value,
    }


def policy_json(policy: StoredPolicy) -> dict[str, Any]:
    """A stored policy as `GET /v1/policies/{policy_id}` and `memory policies get` show it."""
    return {
        "policy_id": policy.policy_id,
        "embedding_ref": str(policy.embedding_ref),
        "version": policy.version,
        "model": policy.model,
        **_described(policy.metadata),
        "tags": list(policy.metadata.tags),
        "metadata": policy.metadata.to_json(),
        "content": policy.content,
        "stored_at": _iso(policy.stored_at),
        "updated_at": _iso(policy.updated_at),
    }


def _described(metadata: PolicyMetadata) -> dict[str, Any]:
    return {"title": metadata.title, "source": metadata.source}


def _result_json(result: SimilarityResult) -> dict[str, Any]:
    return {
        "embedding_ref": str(result.embedding_ref),
        "policy_id": result.policy_id,
        "version": result.version,
        "similarity": result.similarity,
        **_described(result.metadata),
        "tags": list(result.metadata.tags),
        "metadata": result.metadata.to_json(),
        "timestamp": _iso(result.timestamp),
    }


def _document_json(document: PolicyDocument, with_similarity: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "embedding_ref": str(document.embedding_ref),
        "policy_id": document.policy_id,
        "version": document.version,
        **_described(document.metadata),
        "content": document.content,
        "timestamp": _iso(document.timestamp),
        "metadata": document.metadata.to_json(),
    }
    if with_similarity:
        body["similarity"] = document.similarity
    return body
