"""What building answers from the contract models costs (docs/adr/0087): two large answers
rendered to the bytes a route sends, four ways, measured in one run.

    .venv/bin/python bench/answers.py [--rounds 30] [--repeat 20]

Answers: `POST /v1/policies/search` with 100 hits (each with tags and metadata) and
`GET /v1/audit` with 200 entries (each with before/after documents). Ways:
- **dicts**: the hand-written dicts the routes built before, through Starlette's
  `JSONResponse` (the baseline);
- **models**: what the routes do now: the `memory.contract` models built with their
  constructors (validated), rendered by `AnswerResponse` (`model_dump` + `json.dumps`);
- **model_construct**: the same models built without validation (pydantic's fast path);
- **model_dump_json**: validated models serialised by pydantic-core alone (for reference:
  not the routes' bytes, since it writes `Z` for UTC and `5e-5` for floats).

Each cell is the median over rounds of the mean time of `--repeat` renders; the ways are
interleaved in every round so machine noise hits them alike. The bench also checks that
"dicts" and "models" give byte-identical bodies.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from starlette.responses import JSONResponse

from memory.application.audit.ports import AuditEntry, AuditPage
from memory.application.policy.queries import SearchAnswer
from memory.contract.responses import (
    AuditActorBody,
    AuditEntryBody,
    AuditPageBody,
    PolicySearchBody,
    SearchResultBody,
)
from memory.domain.audit.admin_action import Actor
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.search import SimilarityResult
from memory.entrypoints.presenters.audit import audit_page_body
from memory.entrypoints.presenters.policy import search_body
from memory.entrypoints.presenters.wire import render

SEARCH_HITS = 100
AUDIT_ENTRIES = 200
START = datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=UTC)


def search_answer() -> SearchAnswer:
    results = [
        SimilarityResult(
            embedding_ref=uuid5(NAMESPACE_URL, f"policy-{i}"),
            policy_id=f"policy-{i:04d}",
            version=1 + i % 7,
            similarity=0.9 - i * 0.0013,
            distance=0.1 + i * 0.0013,
            metadata=PolicyMetadata.parse(
                {
                    "title": f"Refunds for orders over {i * 10} EUR",
                    "source": "handbook/refunds.md",
                    "tags": ["refunds", "billing", f"tier-{i % 3}"],
                    "owner": "support",
                    "review": {"every_days": 90, "next": "2027-01-15"},
                }
            ),
            timestamp=START - timedelta(hours=i),
        )
        for i in range(SEARCH_HITS)
    ]
    return SearchAnswer(
        results=results,
        next_cursor="c" * 120,
        model="multilingual-e5-small",
        threshold=0.8,
        embed_seconds=0.01,
        database_seconds=0.002,
    )


def audit_page() -> AuditPage:
    entries = [
        AuditEntry(
            id=10_000 - i,
            recorded_at=START - timedelta(minutes=i),
            actor=Actor(f"key{i % 5:02d}", f"ops-{i % 5}"),
            action="history.flag_set" if i % 2 else "key.created",
            org_id=f"org-{i % 17}",
            target=f"digital_worker_semantic_search-{i}",
            before={"enabled": False, "scopes": ["history:read"]},
            after={"enabled": True, "scopes": ["history:read", "history:write"]},
        )
        for i in range(AUDIT_ENTRIES)
    ]
    return AuditPage(entries=entries, next_before_id=9_800)


# The baseline: the dicts the routes wrote by hand before ADR 0087 -------------------------


def search_dict(answer: SearchAnswer) -> dict[str, Any]:
    return {
        "results": [
            {
                "embedding_ref": str(r.embedding_ref),
                "policy_id": r.policy_id,
                "version": r.version,
                "similarity": r.similarity,
                "title": r.metadata.title,
                "source": r.metadata.source,
                "tags": list(r.metadata.tags),
                "metadata": r.metadata.to_json(),
                "timestamp": r.timestamp.isoformat(),
            }
            for r in answer.results
        ],
        "next_cursor": answer.next_cursor,
        "model": answer.model,
        "similarity_threshold": answer.threshold,
    }


def audit_dict(page: AuditPage) -> dict[str, Any]:
    return {
        "entries": [
            {
                "id": str(e.id),
                "recorded_at": e.recorded_at.isoformat(),
                "actor": {"key_id": e.actor.key_id, "name": e.actor.name},
                "action": e.action,
                "org_id": e.org_id,
                "target": e.target,
                "before": e.before,
                "after": e.after,
            }
            for e in page.entries
        ],
        "next_cursor": None if page.next_before_id is None else str(page.next_before_id),
    }


# The fast path: the same models, not validated --------------------------------------------


def search_constructed(answer: SearchAnswer) -> PolicySearchBody:
    return PolicySearchBody.model_construct(
        results=[
            SearchResultBody.model_construct(
                embedding_ref=r.embedding_ref,
                policy_id=r.policy_id,
                version=r.version,
                similarity=r.similarity,
                title=r.metadata.title,
                source=r.metadata.source,
                tags=list(r.metadata.tags),
                metadata=r.metadata.to_json(),
                timestamp=r.timestamp,
            )
            for r in answer.results
        ],
        next_cursor=answer.next_cursor,
        model=answer.model,
        similarity_threshold=answer.threshold,
    )


def audit_constructed(page: AuditPage) -> AuditPageBody:
    return AuditPageBody.model_construct(
        entries=[
            AuditEntryBody.model_construct(
                id=str(e.id),
                recorded_at=e.recorded_at,
                actor=AuditActorBody.model_construct(key_id=e.actor.key_id, name=e.actor.name),
                action=e.action,
                org_id=e.org_id,
                target=e.target,
                before=e.before,
                after=e.after,
            )
            for e in page.entries
        ],
        next_cursor=None if page.next_before_id is None else str(page.next_before_id),
    )


def measure(render_once: Callable[[], bytes], repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        render_once()
    return (time.perf_counter() - started) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    answer, page = search_answer(), audit_page()
    cases: dict[str, dict[str, Callable[[], bytes]]] = {
        f"policy search, {SEARCH_HITS} hits": {
            "dicts": lambda: JSONResponse(search_dict(answer)).body,
            "models": lambda: render(search_body(answer)),
            "model_construct": lambda: render(search_constructed(answer)),
            "model_dump_json": lambda: search_body(answer).model_dump_json().encode(),
        },
        f"audit page, {AUDIT_ENTRIES} entries": {
            "dicts": lambda: JSONResponse(audit_dict(page)).body,
            "models": lambda: render(audit_page_body(page)),
            "model_construct": lambda: render(audit_constructed(page)),
            "model_dump_json": lambda: audit_page_body(page).model_dump_json().encode(),
        },
    }
    for name, ways in cases.items():
        if ways["dicts"]() != ways["models"]():
            raise SystemExit(f"{name}: the models' bytes differ from the dicts'")

    samples: dict[tuple[str, str], list[float]] = {
        (case, way): [] for case, ways in cases.items() for way in ways
    }
    for _ in range(args.rounds):
        for case, ways in cases.items():
            for way, run in ways.items():
                samples[(case, way)].append(measure(run, args.repeat))

    print(f"rounds={args.rounds} repeat={args.repeat}; bodies of dicts and models byte-identical")
    print()
    print("| answer | way | bytes | ms per answer | ratio to dicts |")
    print("|---|---|---:|---:|---:|")
    for case, ways in cases.items():
        baseline = statistics.median(samples[(case, "dicts")])
        for way, run in ways.items():
            median = statistics.median(samples[(case, way)])
            print(
                f"| {case} | {way} | {len(run())} | {median * 1000:.3f} "
                f"| {median / baseline:.2f}x |"
            )


if __name__ == "__main__":
    main()
