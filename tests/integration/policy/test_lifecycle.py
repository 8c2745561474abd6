"""A policy's lifecycle beyond store and update: fetch by id, list newest first, delete,
store the same id again (docs/adr/0063), and deletions surviving model swaps and replays."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from tests.fakes import TEST_ACTOR
from tests.integration.policy.conftest import OTHER_MODEL, MakeRuntime, ReadRows, StartProjector

from memory.application.policy.commands import NewPolicy
from memory.domain.errors import InvalidInput, NotFound
from memory.domain.policy.search import PolicySearch
from memory.entrypoints.policy_runtime import PolicyRuntime
from memory.infrastructure.policy.reembed import reembed
from memory.infrastructure.postgres.database import Database


def test_get_answers_the_current_version_from_the_log(runtime: PolicyRuntime) -> None:
    service = runtime.service
    first = service.store("p", "the first text", {"title": "T", "tags": ["a"]}, actor=TEST_ACTOR)
    second = service.update("p", "the second text", actor=TEST_ACTOR)
    policy = service.get("p")
    assert (policy.policy_id, policy.version, policy.content) == ("p", 2, "the second text")
    assert policy.embedding_ref == first.embedding_ref
    assert policy.metadata.title == "T" and policy.metadata.tags == ("a",)
    assert policy.model == "hash:384"
    assert policy.stored_at == first.stored_at
    assert policy.updated_at == second.stored_at > policy.stored_at
    with pytest.raises(NotFound):
        service.get("unknown")


def test_a_deleted_policy_leaves_search_get_and_every_models_rows(
    runtime: PolicyRuntime, read_rows: ReadRows, policy_db: Database, test_model: Any
) -> None:
    service = runtime.service
    ref = service.store(
        "gone", "expense reports are due monthly", {"tags": ["x"]}, actor=TEST_ACTOR
    ).embedding_ref
    service.store("kept", "expense reports need receipts", actor=TEST_ACTOR)
    reembed(policy_db, test_model(OTHER_MODEL), runtime.log)
    assert "gone" in read_rows(OTHER_MODEL)

    assert service.delete("gone", actor=TEST_ACTOR) is True

    assert "gone" not in read_rows("hash:384")
    assert "gone" not in read_rows(OTHER_MODEL)  # the idle model's rows too
    answer = service.search(PolicySearch("expense reports", similarity_threshold=0.0))
    assert [r.policy_id for r in answer.results] == ["kept"]
    with pytest.raises(NotFound, match="was deleted"):
        service.get("gone")
    with pytest.raises(NotFound):
        service.get_by_embedding(str(ref))
    assert [p.policy_id for p in service.list_policies().policies] == ["kept"]
    history = service.versions("gone")
    assert [(v.version, v.change.value) for v in history] == [(1, "stored"), (2, "deleted")]
    with pytest.raises(NotFound):
        service.delete("gone", actor=TEST_ACTOR)
    with pytest.raises(NotFound):
        service.update("gone", "new text", actor=TEST_ACTOR)
    with pytest.raises(NotFound):
        service.delete("never-stored", actor=TEST_ACTOR)


def test_storing_a_deleted_id_again_continues_its_versions_as_a_new_history(
    runtime: PolicyRuntime,
) -> None:
    service = runtime.service
    first = service.store("p", "travel needs approval", {"tags": ["old"]}, actor=TEST_ACTOR)
    service.delete("p", actor=TEST_ACTOR)
    again = service.store("p", "travel needs no approval", {"tags": ["new"]}, actor=TEST_ACTOR)
    assert again.version == 3
    assert again.embedding_ref == first.embedding_ref
    policy = service.get("p")
    assert policy.metadata.tags == ("new",)
    assert policy.stored_at == again.stored_at > first.stored_at
    service.update("p", "travel needs no approval", {"tags": ["newer"]}, actor=TEST_ACTOR)
    assert service.get("p").stored_at == again.stored_at  # an update keeps the history's start
    history = [(v.version, v.change.value) for v in service.versions("p")]
    assert history == [(1, "stored"), (2, "deleted"), (3, "stored"), (4, "metadata")]
    hits = service.search(PolicySearch("travel approval", similarity_threshold=0.0)).results
    assert [(h.policy_id, h.version) for h in hits] == [("p", 4)]
    with pytest.raises(Exception, match="already exists"):
        service.store("p", "once more", actor=TEST_ACTOR)


def test_replays_after_a_deletion_never_bring_the_policy_back(
    make_runtime: MakeRuntime,
    start_projector: StartProjector,
    read_rows: ReadRows,
    policy_db: Database,
    test_model: Any,
) -> None:
    runtime = make_runtime()
    projector = start_projector(runtime)
    service = runtime.service
    service.store_many(
        [NewPolicy(f"p{i}", f"policy number {i}") for i in range(3)], actor=TEST_ACTOR
    )
    service.update("p1", "policy number one, reworded", actor=TEST_ACTOR)
    service.delete("p1", actor=TEST_ACTOR)
    service.store("p2-again", "unrelated", actor=TEST_ACTOR)
    service.delete("p2", actor=TEST_ACTOR)
    service.store("p2", "policy two returns", actor=TEST_ACTOR)

    other = test_model(OTHER_MODEL)
    reembed(policy_db, other, runtime.log)
    assert set(read_rows(OTHER_MODEL)) == {"p0", "p2", "p2-again"}
    assert read_rows(OTHER_MODEL)["p2"]["content"] == "policy two returns"
    # The deleted texts were not even embedded on the way.
    assert not {"policy number 1", "policy number one, reworded", "policy number 2"} & set(
        other.documents
    )
    projector.stop()
    reembed(policy_db, runtime.model, runtime.log, rebuild=True)
    assert set(read_rows("hash:384")) == {"p0", "p2", "p2-again"}

    swapped = make_runtime(model=test_model(OTHER_MODEL))
    hits = swapped.service.search(PolicySearch("policy number", similarity_threshold=0.0)).results
    assert "p1" not in {h.policy_id for h in hits}


def test_listing_is_newest_first_in_keyset_pages_with_filters(runtime: PolicyRuntime) -> None:
    service = runtime.service
    for i in range(5):
        service.store(
            f"p{i}",
            f"policy {i}",
            {"source": "hr" if i % 2 else "finance", "tags": ["even"] if i % 2 == 0 else []},
            actor=TEST_ACTOR,
        )
    service.update("p0", "policy zero, newest now", actor=TEST_ACTOR)

    first = service.list_policies(limit=2)
    assert [p.policy_id for p in first.policies] == ["p0", "p4"]
    assert first.next_cursor is not None
    second = service.list_policies(limit=2, cursor=first.next_cursor)
    assert [p.policy_id for p in second.policies] == ["p3", "p2"]
    service.store(
        "p5", "written while paging", actor=TEST_ACTOR
    )  # lands in front, shifts nothing behind
    third = service.list_policies(limit=2, cursor=second.next_cursor)
    assert [p.policy_id for p in third.policies] == ["p1"]
    assert third.next_cursor is None
    assert third.policies[0].content == "policy 1"

    assert [p.policy_id for p in service.list_policies(source="hr").policies] == ["p3", "p1"]
    assert [p.policy_id for p in service.list_policies(tag="even").policies] == ["p0", "p4", "p2"]
    since = service.get("p4").updated_at
    assert [p.policy_id for p in service.list_policies(updated_since=since).policies] == [
        "p5",
        "p0",
        "p4",
    ]
    with pytest.raises(InvalidInput, match="different search") as err:
        service.list_policies(limit=2, cursor=first.next_cursor, source="hr")
    assert err.value.field == "cursor"
    with pytest.raises(InvalidInput) as err:
        service.list_policies(limit=0)
    assert err.value.field == "limit"
    with pytest.raises(InvalidInput, match="after the server's clock") as err:
        service.list_policies(updated_since=since + timedelta(days=3650))
    assert err.value.field == "updated_since"


def test_an_orgs_listing_merges_its_own_and_the_global_policies_page_by_page(
    runtime: PolicyRuntime, policy_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = runtime.service
    written = []
    for i in range(12):  # interleaved in time: global, acme, globex, global, ...
        namespace = ("global", "org:acme", "org:globex")[i % 3]
        service.store(f"p{i}", f"policy {i}", actor=TEST_ACTOR, namespace=namespace)
        written.append((namespace, f"p{i}"))
    acme_sees = [p for p in reversed(written) if p[0] != "org:globex"]

    statements: list[tuple[Any, dict[str, Any]]] = []
    read_model = runtime.read_model
    run = read_model._run  # type: ignore[attr-defined]

    def recorded(statement: Any, params: dict[str, Any], *args: Any) -> Any:
        statements.append((statement, params))
        return run(statement, params, *args)

    monkeypatch.setattr(read_model, "_run", recorded)
    first = service.list_policies(limit=3, namespace="org:acme")
    assert first.next_cursor is not None
    with pytest.raises(InvalidInput) as refused:  # a cursor pages the view it came from
        service.list_policies(limit=3, cursor=first.next_cursor, namespace="global")
    assert refused.value.field == "cursor"
    listed, cursor = [], None
    while True:
        page = service.list_policies(limit=3, cursor=cursor, namespace="org:acme")
        listed += [(p.namespace.text, p.policy_id) for p in page.policies]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert listed == acme_sees  # newest first, each once, never globex's
    assert [
        (p.namespace.text, p.policy_id) for p in service.list_policies(namespace="global").policies
    ] == [p for p in acme_sees if p[0] == "global"]

    statement, params = statements[2]
    # Each namespace's part can read the listing index in order (a table this small would
    # be scanned instead): a page never sorts every row of the namespaces.
    with policy_db.connection() as conn:
        conn.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(
            row["QUERY PLAN"]
            for row in conn.execute(b"EXPLAIN " + statement.as_bytes(conn), params)
        )
    assert plan.count("policy_embeddings_namespace_updated_idx") == 2, plan
