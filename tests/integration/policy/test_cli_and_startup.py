"""`memory policies ...` commands and the policy context's start-up checks."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from tests.fakes import TEST_ACTOR
from tests.integration.policy.conftest import MakeRuntime, StartProjector

from memory.application.audit.ports import AuditQuery
from memory.application.policy.commands import NewPolicy
from memory.domain.audit.admin_action import Actor
from memory.domain.policy.dimensionality import DimensionalityMismatch
from memory.entrypoints import cli
from memory.entrypoints.bootstrap import build_services
from memory.entrypoints.policy_runtime import PolicyRuntime
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.policy.reembed import reembed
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.embedded import free_port
from memory.infrastructure.settings import Settings


@pytest.fixture
def memory_cli(cli_env: str) -> Callable[..., int]:
    """`memory *argv` in-process; its exit code."""
    return lambda *argv: cli.main(list(argv))


def test_reembed_shows_progress_and_drop_model_refuses_the_active_model(
    memory_cli: Callable[..., int],
    make_runtime: MakeRuntime,
    policy_db: Database,
    test_model: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    runtime = make_runtime(projection_wait_timeout=0)
    runtime.service.store_many(
        [NewPolicy(f"p{i}", f"text {i}") for i in range(5)], actor=TEST_ACTOR
    )

    assert memory_cli("policies", "reembed", "--model", "hash:384") == 0
    out, err = capsys.readouterr()
    assert "reembed hash:384" in err  # tqdm's bar, on stderr
    assert "5/5" in err
    assert "projected up to event 5 of 5" in out

    assert memory_cli("policies", "reembed", "--model", "hash:384", "--rebuild") == 0
    assert "5 old rows removed first" in capsys.readouterr().out

    assert memory_cli("policies", "drop-model", "hash:384") == 2
    assert "active policy model" in capsys.readouterr().err

    reembed(policy_db, test_model("test:other@384"), runtime.log)
    assert memory_cli("policies", "status", "--json") == 0
    status = json.loads(capsys.readouterr().out)
    models = {m["model"]: (m["active"], m["rows"], m["position"]) for m in status["models"]}
    assert models == {"hash:384": (True, 5, 5), "test:other@384": (False, 5, 5)}
    assert memory_cli("policies", "status") == 0
    readable = capsys.readouterr().out
    assert re.search(r"event log head: +5", readable)
    assert re.search(r"test:other@384 +no +5 +5", readable)

    assert memory_cli("policies", "drop-model", "test:other@384") == 0
    assert "dropped 5 rows" in capsys.readouterr().out
    assert memory_cli("policies", "drop-model", "test:other@384") == 2
    assert "no rows or tracking table for model test:other@384" in capsys.readouterr().err


def test_reembed_refuses_a_model_of_another_size_and_a_busy_model(
    memory_cli: Callable[..., int],
    make_runtime: MakeRuntime,
    start_projector: StartProjector,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert memory_cli("policies", "reembed", "--model", "hash:256") == 2
    assert "exactly 384" in capsys.readouterr().err
    runtime = make_runtime()
    start_projector(runtime)
    assert memory_cli("policies", "reembed", "--model", "hash:384") == 2
    assert "running in another process" in capsys.readouterr().err


def test_a_model_of_another_size_stops_start_up_with_a_clear_error(
    database_url: str, make_settings: Callable[..., Settings]
) -> None:
    with pytest.raises(DimensionalityMismatch, match=r"hash:768 .* exactly 384"):
        build_services(make_settings(policy_model="hash:768"), database_url)


def test_start_up_creates_the_event_store_and_read_model(
    database_url: str, make_settings: Callable[..., Settings]
) -> None:
    services = build_services(make_settings(), database_url, contexts=("policy",))
    try:
        with services.database.connection() as conn:
            tables = {
                str(r["tablename"])
                for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname='public'")
            }
        assert {"policy_events", "policy_embeddings", "policy_secrets"} <= tables
        health = services.context("policy").health()
        assert health["model"]["id"] == "hash:384"
        assert health["projector"] == {
            "model": "hash:384",
            "role": "stopped",
            "running_here": False,
            "position": None,
            "head": None,
            "lag_events": 0,
        }
    finally:
        services.close()


def test_drop_model_compares_canonical_model_ids(
    memory_cli: Callable[..., int],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MEMORY_POLICY_MODEL", "ollama:embeddinggemma@384")
    assert memory_cli("policies", "drop-model", "ollama:embeddinggemma:latest@384") == 2
    assert "ollama:embeddinggemma@384 is the active policy model" in capsys.readouterr().err


def test_status_lists_and_drop_model_removes_what_a_failed_reembed_left(
    memory_cli: Callable[..., int],
    make_runtime: MakeRuntime,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    runtime = make_runtime(projection_wait_timeout=0)
    runtime.service.store_many(
        [NewPolicy(f"p{i}", f"text {i}") for i in range(2)], actor=TEST_ACTOR
    )
    monkeypatch.setenv("MEMORY_OLLAMA_URL", f"http://127.0.0.1:{free_port()}")  # refused
    monkeypatch.setenv("MEMORY_MODEL_RETRIES", "0")
    assert memory_cli("policies", "reembed", "--model", "ollama:embeddinggemma@384") == 1
    assert "run the same command again to resume" in capsys.readouterr().err

    assert memory_cli("policies", "status", "--json") == 0
    models = {m["model"]: m for m in json.loads(capsys.readouterr().out)["models"]}
    left = models["ollama:embeddinggemma@384"]
    assert (left["rows"], left["active"]) == (0, False)
    assert "drop-model removes it" in left["note"]

    assert memory_cli("policies", "drop-model", "ollama:embeddinggemma@384", "--json") == 0
    assert json.loads(capsys.readouterr().out) == {
        "model": "ollama:embeddinggemma@384",
        "rows_deleted": 0,
    }
    assert memory_cli("policies", "status", "--json") == 0
    status = json.loads(capsys.readouterr().out)
    assert [m["model"] for m in status["models"]] == ["hash:384"]
    assert status["untied_tracking_tables"] == []


def test_get_list_and_delete_from_the_command_line(
    memory_cli: Callable[..., int],
    runtime: PolicyRuntime,
    policy_db: Database,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for policy in (
        NewPolicy("travel", "Travel needs approval.", {"title": "Travel", "tags": ["t"]}),
        NewPolicy("leave", "Leave carries over.", {"source": "hr"}),
        NewPolicy("pay", "Salaries are paid monthly.", {"source": "hr", "tags": ["t"]}),
    ):
        assert runtime.service.store(
            policy.policy_id, policy.content, policy.metadata, actor=TEST_ACTOR
        ).searchable

    assert memory_cli("policies", "get", "travel", "--json") == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["policy_id"], got["version"], got["content"]) == (
        "travel",
        1,
        "Travel needs approval.",
    )
    assert got["tags"] == ["t"] and got["title"] == "Travel"
    assert memory_cli("policies", "get", "travel") == 0
    readable = capsys.readouterr().out
    assert readable.startswith("policy travel, version 1\n")
    assert "content:" in readable and "Travel needs approval." in readable

    assert memory_cli("policies", "list", "--source", "hr", "--limit", "1", "--json") == 0
    first = json.loads(capsys.readouterr().out)
    assert [p["policy_id"] for p in first["policies"]] == ["pay"]
    cursor = first["next_cursor"]
    assert cursor
    assert memory_cli("policies", "list", "--source", "hr", "--limit", "1", "--cursor", cursor) == 0
    page = capsys.readouterr().out
    assert page.startswith("1 policy, newest first")
    assert "leave" in page and "pay" not in page
    assert memory_cli("policies", "list", "--tag", "t", "--updated-since", "2020-01-01T00:00Z") == 0
    tagged = capsys.readouterr().out
    assert "travel" in tagged and "pay" in tagged and "leave" not in tagged

    assert memory_cli("policies", "delete", "travel", "--json") == 0
    assert json.loads(capsys.readouterr().out) == {
        "policy_id": "travel",
        "deleted": True,
        "search_updated": True,
    }
    entries = PostgresAuditTrail(policy_db).entries(AuditQuery()).entries
    [entry] = [e for e in entries if e.action == "policy.deleted"]
    assert entry.actor.key_id == "cli" and entry.actor.name.startswith("cli:")
    assert memory_cli("policies", "get", "travel") == 1
    assert "policy travel was deleted" in capsys.readouterr().err


def test_policy_commands_name_the_argument_that_is_wrong(
    memory_cli: Callable[..., int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert memory_cli("policies", "list", "--limit", "0", "--tag", " ", "--cursor", "") == 2
    err = capsys.readouterr().err
    assert "--limit: must be between 1 and 200, got 0" in err
    assert "--tag: must not be empty" in err and "--cursor: must not be empty" in err

    assert memory_cli("policies", "list", "--updated-since", "2026-01-01T00:00", "--json") == 2
    out, err = capsys.readouterr()
    assert "--updated-since: must include a timezone offset" in err
    assert "--updated-since" in json.loads(out)["error"]
    with pytest.raises(SystemExit) as exit_:
        memory_cli("policies", "list", "--updated-since", "yesterday")
    assert exit_.value.code == 2
    assert "argument --updated-since: 'yesterday' is not an ISO 8601 time" in (
        capsys.readouterr().err
    )

    assert memory_cli("policies", "get", "a" * 300) == 2
    assert "POLICY_ID: " in capsys.readouterr().err
    assert memory_cli("policies", "delete", "never-stored") == 1
    assert "policy never-stored does not exist" in capsys.readouterr().err


def test_the_command_line_names_itself_in_versions_and_the_audit_log_and_takes_a_namespace(
    memory_cli: Callable[..., int],
    runtime: PolicyRuntime,
    policy_db: Database,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sibling = Actor("sibling", "billing context")
    runtime.service.store("travel", "Travel needs approval.", actor=sibling, namespace="org:acme")
    runtime.service.update(
        "travel", "Travel needs two approvals.", actor=TEST_ACTOR, namespace="org:acme"
    )
    runtime.service.store("travel", "Global travel rule.", actor=TEST_ACTOR)

    # Not in the global namespace (the CLI's default) as acme's: its own is deleted.
    assert memory_cli("policies", "delete", "travel", "--namespace", "org:acme") == 0
    capsys.readouterr()
    assert memory_cli("policies", "versions", "travel", "--namespace", "org:acme", "--json") == 0
    history = json.loads(capsys.readouterr().out)
    assert history["namespace"] == "org:acme"
    actors = [(v["change"], v["actor"]["key_id"], v["actor"]["name"]) for v in history["versions"]]
    assert actors[:2] == [
        ("stored", "sibling", "billing context"),
        ("content", TEST_ACTOR.key_id, TEST_ACTOR.name),
    ]
    assert actors[2][:2] == ("deleted", "cli") and actors[2][2].startswith("cli:")
    assert memory_cli("policies", "versions", "travel") == 0
    readable = capsys.readouterr().out
    assert "1 versions" in readable and TEST_ACTOR.name in readable  # the global one

    entries = PostgresAuditTrail(policy_db).entries(AuditQuery(org_id="acme")).entries
    assert [(e.action, e.actor.key_id, e.target) for e in reversed(entries)] == [
        ("policy.stored", "sibling", "travel"),
        ("policy.updated", TEST_ACTOR.key_id, "travel"),
        ("policy.deleted", "cli", "travel"),
    ]
    assert memory_cli("policies", "get", "travel", "--namespace", "org:acme", "--json") == 0
    assert json.loads(capsys.readouterr().out)["namespace"] == "global"  # acme's is gone

    assert memory_cli("policies", "list", "--namespace", "acme") == 2
    assert "--namespace: must be 'global' or 'org:'" in capsys.readouterr().err
