"""Policy results as answer models: what `/v1/policies` and `/v1/embeddings` answer, and what
`memory policies get|list|versions --json` print."""

from __future__ import annotations

from memory.application.policy.commands import StoreReceipt
from memory.application.policy.queries import PolicyPage, SearchAnswer
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
from memory.domain.policy.listing import StoredPolicy
from memory.domain.policy.search import PolicyDocument, SimilarityResult
from memory.domain.policy.versions import PolicyVersion


def receipt_body(receipt: StoreReceipt) -> StoreReceiptBody:
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


def policy_page_body(page: PolicyPage) -> PolicyPageBody:
    return PolicyPageBody(
        policies=[policy_body(p) for p in page.policies], next_cursor=page.next_cursor
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


def document_body(document: PolicyDocument, with_similarity: bool) -> PolicyDocumentBody:
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
