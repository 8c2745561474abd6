"""`memory demo`: load the built-in multilingual data set, turn semantic search on for its
orgs, sweep them with a progress bar, and show three example searches, one of them across
languages. Safe to run again: policies and chat events are keyed, so nothing doubles."""

from __future__ import annotations

import argparse
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG, GlobalState
from memory.entrypoints.cli_output import emit, wants_json

if TYPE_CHECKING:
    from memory.datasets.demo import DemoData, DemoSearch
    from memory.domain.history.chat_event import ChatEvent
    from memory.entrypoints.bootstrap import Services
    from memory.infrastructure.settings import Settings


# Hits shown per example search.
DEMO_RESULTS = 3
# Policy results are shown whatever their score, so that the demo shows how they rank.
DEMO_POLICY_THRESHOLD = 0.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser(
        "demo",
        help="load a small multilingual data set and show example searches",
        description=(
            "Store six policies and chat in English, Malay, Chinese and rojak for two orgs "
            "(acme-logistics, kedai-runcit), turn semantic search on for those orgs, sweep "
            "them, and run three example searches. Uses the configured database and models."
        ),
    )
    demo.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from memory.datasets.demo import load_demo
    from memory.entrypoints.admin_key import ADMIN_TOKEN_FILE
    from memory.entrypoints.bootstrap import opened

    # No projector runs here: the demo projects its policies itself (below) rather than
    # waiting for one after each store.
    settings: Settings = args.settings.model_copy(update={"projection_wait_timeout": 0.0})
    data = load_demo(datetime.now(UTC))
    with opened(settings) as services:
        loaded = _load(services, settings, data)
        searches = [_run(services, data, search) for search in data.searches]
    cross = [hit for s in searches for hit in s["results"] if hit["cross_lingual"]]
    document = {**loaded, "searches": searches, "cross_lingual_hits": len(cross)}
    if wants_json():
        emit(document)
    else:
        _show(document, settings.home / ADMIN_TOKEN_FILE)
    return 0


def _load(services: Services, settings: Settings, data: DemoData) -> dict[str, Any]:
    from tqdm import tqdm

    from memory.application.policy.ports import ProjectionBusy
    from memory.domain.errors import AlreadyExists
    from memory.domain.history.chat_event import ChatEvent
    from memory.entrypoints.history_cli import SweepBar
    from memory.entrypoints.operator import cli_actor

    policies, history = services.policy, services.history
    stored = 0
    for policy in data.policies:
        metadata = {"title": policy.title, "source": "memory-demo", "tags": ["demo", policy.lang]}
        try:
            policies.store(policy.policy_id, policy.content, metadata, actor=cli_actor())
            stored += 1
        except AlreadyExists:
            pass
    bar = tqdm(desc="project policies", unit="event")

    def progress(position: int | None, head: int | None) -> None:
        bar.total = head or 0
        bar.n = min(position or 0, bar.total)
        bar.refresh()

    try:
        policies.reembed(settings.policy_model, actor=cli_actor(), on_progress=progress)
    except ProjectionBusy:
        pass  # a running `memory serve` projects them
    finally:
        bar.close()

    by_org: dict[str, list[ChatEvent]] = defaultdict(list)
    for n, m in enumerate(data.messages):
        by_org[m.org_id].append(
            ChatEvent(
                event_id=f"demo-{m.channel_id}-{n}",
                provider=m.provider,
                channel_id=m.channel_id,
                sender=m.sender,
                text=m.text,
                occurred_at=m.occurred_at,
            )
        )
    inserted = 0
    for org_id, events in by_org.items():
        inserted += history.ingest(org_id, events).inserted
    flags_changed = _semantic_search_on_for(services, data.orgs)
    embedded = 0
    for org_id in data.orgs:
        sweep_bar = SweepBar()
        try:
            embedded += history.sweep(org_id, trigger="cli", progress=sweep_bar).windows_embedded
        finally:
            sweep_bar.close()
    return {
        "policies_stored": stored,
        "chat_events_inserted": inserted,
        "orgs": data.orgs,
        "windows_embedded": embedded,
        "flags_changed": flags_changed,
        "history_model": history.model_id,
        "policy_model": policies.active_model,
    }


def _semantic_search_on_for(services: Services, demo_orgs: list[str]) -> list[str]:
    """Semantic search on for the demo's orgs and nobody else's, present or future
    (docs/adr/0131): each demo org opts in; a global state of `on` or `opt_in` is left as
    it is, and only `off` becomes `opt_in`, under which no other org has the feature either.
    Returns what changed, one line each (nothing on a second run)."""
    from memory.entrypoints.operator import cli_actor

    history = services.history
    changed: list[str] = []
    flag = history.global_flag(SEMANTIC_SEARCH_FLAG)
    if flag.state is GlobalState.OFF:
        history.set_global_flag(SEMANTIC_SEARCH_FLAG, GlobalState.OPT_IN, actor=cli_actor())
        changed.append(
            f"{SEMANTIC_SEARCH_FLAG} global: off -> opt_in (on only for the orgs that opt in)"
        )
    for org_id in demo_orgs:
        before = history.org_flag(org_id, SEMANTIC_SEARCH_FLAG).org_override
        if before is not True:
            history.set_org_flag(org_id, SEMANTIC_SEARCH_FLAG, True, actor=cli_actor())
            was = "inherit" if before is None else "off"
            changed.append(f"{SEMANTIC_SEARCH_FLAG} of {org_id}: {was} -> on")
    return changed


def _run(services: Services, data: DemoData, search: DemoSearch) -> dict[str, Any]:
    from memory.domain.history.search import HistoryQuery, MatchedBy
    from memory.domain.policy.search import PolicySearch

    results: list[dict[str, Any]] = []
    if search.context == "history":
        assert search.org_id is not None
        answer = services.history.search(
            search.org_id, HistoryQuery(search.query, limit=DEMO_RESULTS)
        )
        for hit in answer.hits:
            lang = data.language_of(search.org_id, hit.text)
            semantic = hit.matched_by is MatchedBy.SEMANTIC
            results.append(
                {
                    "matched_by": "semantic" if semantic else "full-text",
                    "similarity": None if hit.similarity is None else round(hit.similarity, 3),
                    "lang": lang,
                    "cross_lingual": semantic and lang is not None and lang != search.lang,
                    "sender": hit.sender,
                    "channel": f"{hit.provider}/{hit.channel_id}",
                    "occurred_at": hit.occurred_at.isoformat(timespec="minutes"),
                    "text": hit.text,
                }
            )
        semantic_state = answer.semantic.value
    else:
        found = services.policy.search(
            PolicySearch(
                search.query, similarity_threshold=DEMO_POLICY_THRESHOLD, limit=DEMO_RESULTS
            )
        )
        langs = {p.policy_id: p.lang for p in data.policies}
        for result in found.results:
            lang = langs.get(result.policy_id)
            results.append(
                {
                    "matched_by": "semantic",
                    "similarity": round(result.similarity, 3),
                    "lang": lang,
                    "cross_lingual": lang is not None and lang != search.lang,
                    "policy_id": result.policy_id,
                    "text": result.metadata.title or result.policy_id,
                }
            )
        semantic_state = "on"
    return {
        "context": search.context,
        "org_id": search.org_id,
        "query": search.query,
        "query_lang": search.lang,
        "semantic": semantic_state,
        "results": results,
    }


def _show(document: dict[str, Any], admin_token: Path) -> None:
    """`admin_token`: where `memory serve` writes its admin key, for the closing hint (every
    /v1 request needs a key)."""
    print(
        f"Loaded {document['policies_stored']} new policies and "
        f"{document['chat_events_inserted']} new chat messages for "
        f"{', '.join(document['orgs'])}; semantic search is on for them; "
        f"{document['windows_embedded']} conversation windows embedded "
        f"(history model {document['history_model']}, policy model {document['policy_model']})."
    )
    for change in document["flags_changed"]:
        print(f"Changed {change}.")
    for n, search in enumerate(document["searches"], 1):
        where = f"history of {search['org_id']}" if search["context"] == "history" else "policies"
        print(f"\n{n}. {where} — [{search['query_lang']}] {search['query']}")
        if not search["results"]:
            print("   (no results)")
        for hit in search["results"]:
            score = "" if hit["similarity"] is None else f" {hit['similarity']:.2f}"
            across = (
                f", cross-lingual {search['query_lang']}->{hit['lang']}"
                if hit["cross_lingual"]
                else ""
            )
            who = f"{hit['sender']} in {hit['channel']}: " if "sender" in hit else ""
            print(f"   [{hit['matched_by']}{score}{across}] {who}{hit['text']}")
    if document["cross_lingual_hits"] == 0:
        print(
            "\nNo cross-lingual hit: the configured model does not match meaning across"
            " languages (the hash: test models never do)."
        )
    print(
        "\nTry your own: memory serve, then\n"
        f'curl -H "Authorization: Bearer $(cat {admin_token})" '
        "'localhost:8080/v1/orgs/acme-logistics/history/search?q=forklift'"
    )
