"""`memory demo` on a real database: loads the multilingual set for two orgs, turns
semantic search on for them, sweeps with a progress bar, prints three example searches;
a second run adds nothing."""

from __future__ import annotations

import json

import psycopg
import pytest

from memory.entrypoints.admin_key import ADMIN_TOKEN_FILE
from memory.entrypoints.cli import main
from memory.infrastructure.settings import Settings


def test_demo_loads_sweeps_and_searches(cli_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "status", "bystander"]) == 0  # migrates
    with psycopg.connect(cli_env) as conn:  # an org that was there before the demo
        conn.execute(
            "INSERT INTO dw_chat_partitions (org_id, provider, external_channel_id)"
            " VALUES ('bystander', 'slack', 'C1')"
        )
    capsys.readouterr()
    assert main(["demo"]) == 0
    out, err = capsys.readouterr()
    # Only the demo's two orgs changed: the global state went from off to opt_in, under
    # which the bystander (and any org created later) still has no semantic search.
    semantic = "digital_worker_semantic_search"
    assert f"Changed {semantic} global: off -> opt_in (on only for the orgs that opt in)." in out
    assert f"Changed {semantic} of acme-logistics: inherit -> on." in out
    assert f"Changed {semantic} of kedai-runcit: inherit -> on." in out
    assert "bystander" not in out
    assert "Loaded 6 new policies and 13 new chat messages for acme-logistics, kedai-runcit" in out
    assert "sweep: 100%" in err  # the progress bar
    assert "1. history of acme-logistics" in out
    assert "2. history of kedai-runcit" in out
    assert "3. policies" in out
    assert "[semantic" in out  # semantic search is on for the demo orgs
    # The closing hint's curl carries the key `memory serve` writes to this home.
    token = Settings().home / ADMIN_TOKEN_FILE
    assert f'curl -H "Authorization: Bearer $(cat {token})" ' in out

    assert main(["demo", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["policies_stored"] == 0
    assert document["chat_events_inserted"] == 0  # keyed: nothing doubles
    assert document["orgs"] == ["acme-logistics", "kedai-runcit"]
    assert document["flags_changed"] == []  # nothing left to change
    assert [s["semantic"] for s in document["searches"]] == ["on", "on", "on"]
    assert all(s["results"] for s in document["searches"])
    (policies,) = [s for s in document["searches"] if s["context"] == "policies"]
    assert {r["policy_id"] for r in policies["results"]} <= {
        "pw-rotation",
        "annual-leave",
        "expense-claims",
        "remote-work",
        "data-privacy",
        "customer-refunds",
    }
    assert main(["flags", "--org", "bystander", "--json"]) == 0
    bystander = json.loads(capsys.readouterr().out)
    assert bystander["semantic_search"] is False
    assert main(["flags", "--org", "founded-after-the-demo", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["semantic_search"] is False
    assert main(["flags", semantic, "--json"]) == 0
    (flag,) = json.loads(capsys.readouterr().out)["flags"]
    assert (flag["flag"], flag["state"], flag["set"]) == (semantic, "opt_in", True)
