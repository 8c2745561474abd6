"""The operator commands against a real database."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from tests.conftest import RunCli


@pytest.fixture
def run(run_cli: RunCli) -> RunCli:
    """The commands with `--json`, whose output the tests read."""
    return lambda *argv: run_cli(*argv, "--json")


def seed(url: str) -> None:
    when = datetime.now(UTC) - timedelta(hours=3)
    with psycopg.connect(url) as conn:
        conn.execute(
            "INSERT INTO dw_chat_events (org_id, event_id, provider, external_channel_id,"
            " sender, event_type, decision, message_text, occurred_at)"
            " SELECT org, 'e' || i, 'slack', 'C1', 'ali', 'message', 'received',"
            " 'please reset my password number ' || i, %s + i * interval '1 minute'"
            " FROM generate_series(1, 3) AS i, unnest(ARRAY['acme', 'globex']) AS org",
            (when,),
        )
        conn.execute(
            "INSERT INTO dw_chat_partitions (org_id, provider, external_channel_id)"
            " VALUES ('acme', 'slack', 'C1'), ('globex', 'slack', 'C1')"
        )
        conn.execute(
            "INSERT INTO admin_feature_flags (flag, enabled)"
            " VALUES ('digital_worker_semantic_search', true)"
        )


def test_sweep_once_for_one_org_with_a_progress_bar(cli_env: str, run: RunCli) -> None:
    assert run("history", "status", "acme")[0] == 0  # migrates an empty database
    seed(cli_env)
    code, out, err = run("sweep", "--once", "--org", "acme")
    assert code == 0
    assert json.loads(out) == {
        "windows_embedded": 1,
        "windows_skipped": 0,
        "windows_poisoned": 0,
        "windows_open": 0,
        "events_poisoned": 0,
        "partitions": 1,
        "partitions_stalled": 0,
        "partitions_busy": 0,
        "partitions_interrupted": 0,
    }
    assert "sweep" in err and "partition" in err  # tqdm's bar
    code, out, _ = run("history", "status", "acme")
    status = json.loads(out)
    assert status["models_stored"] == {"hash:1024": 1}
    assert status["partitions"][0]["lag_events"] == 0
    assert json.loads(run("sweep", "--once")[1])["windows_embedded"] == 1  # globex


def test_drop_model_refuses_the_active_model_and_drops_another(cli_env: str, run: RunCli) -> None:
    run("history", "status", "acme")
    seed(cli_env)
    run("sweep", "--once")
    code, out, _ = run("history", "drop-model", "hash:1024")
    assert code == 2 and "active" in out
    code, out, _ = run("history", "drop-model", "local:multilingual-e5-small")
    assert code == 0
    assert json.loads(out) == {
        "model": "local:multilingual-e5-small",
        "rows_deleted": 0,
        "watermarks_reset": 0,
    }
    code, out, _ = run("history", "drop-model", "ollama:bge-m3:latest")
    assert json.loads(out)["model"] == "ollama:bge-m3"  # the identity its rows are stored under


def test_retention_and_purge_commands(cli_env: str, run: RunCli) -> None:
    run("history", "status", "acme")
    seed(cli_env)
    code, out, _ = run("history", "retention", "acme")
    assert json.loads(out) == {"org_id": "acme", "days": 30, "default": True}
    code, out, _ = run("history", "retention", "acme", "--days", "0")
    assert code == 2
    code, out, _ = run("history", "retention", "acme", "--days", "1")
    assert json.loads(out)["days"] == 1
    code, out, err = run("purge")
    assert "purge: 100%" in err and "2/2" in err  # the progress bar, over the orgs
    assert json.loads(out) == {"orgs": 2, "events_deleted": 0, "embeddings_deleted": 0}
    with psycopg.connect(cli_env) as conn:
        conn.execute("UPDATE dw_chat_events SET occurred_at = occurred_at - interval '2 days'")
    code, out, _ = run("purge", "--org", "acme")
    assert json.loads(out) == {"orgs": 1, "events_deleted": 3, "embeddings_deleted": 0}


def test_reindex_command_reindexes_rows_stored_without_segmenting(
    cli_env: str, run: RunCli
) -> None:
    run("history", "status", "acme")
    seed(cli_env)  # written by hand, as the ingest before Chinese-aware full-text did
    with psycopg.connect(cli_env) as conn:
        conn.execute(
            "INSERT INTO dw_chat_events (org_id, event_id, provider, external_channel_id,"
            " sender, event_type, decision, message_text, occurred_at)"
            " VALUES ('acme', 'zh', 'slack', 'C1', 'wei', 'message', 'received',"
            " '我的退款什么时候到账', now())"
        )

    def refund_hits() -> list[str]:
        with psycopg.connect(cli_env) as conn:
            rows = conn.execute(
                "SELECT event_id FROM dw_chat_events"
                " WHERE search_tsv @@ phraseto_tsquery('simple', '退款')"
            ).fetchall()
        return [r[0] for r in rows]

    assert refund_hits() == []
    status = json.loads(run("history", "status", "acme")[1])
    assert status["full_text_rows_to_reindex"] == 4  # acme's 3 seeded rows and 'zh'
    code, out, err = run("history", "reindex")
    assert code == 0
    assert json.loads(out) == {"rows_reindexed": 7, "rows_left": 0}
    assert "reindex" in err and "7/7" in err  # tqdm's bar
    assert refund_hits() == ["zh"]
    status = json.loads(run("history", "status", "acme")[1])
    assert status["full_text_rows_to_reindex"] == 0
    code, out, _ = run("history", "reindex")
    assert json.loads(out) == {"rows_reindexed": 0, "rows_left": 0}


def test_history_orgs_lists_the_directory_as_json_and_as_a_table(
    cli_env: str, run: RunCli, run_cli: RunCli
) -> None:
    assert run("history", "status", "acme")[0] == 0  # migrates an empty database
    seed(cli_env)
    assert run("sweep", "--once")[0] == 0
    code, out, _ = run("history", "orgs", "--limit", "1")
    assert code == 0
    page = json.loads(out)
    (acme,) = page["orgs"]
    assert (acme["org_id"], acme["messages"], acme["partitions"]) == ("acme", 3, 1)
    assert (acme["semantic_search"], acme["semantic_search_by"]["layer"]) == (True, "global")
    assert acme["last_embedded_at"] is not None
    code, out, _ = run("history", "orgs", "--cursor", page["next_cursor"])
    assert [o["org_id"] for o in json.loads(out)["orgs"]] == ["globex"]

    code, text, _ = run_cli("history", "orgs", "--prefix", "glo")
    assert code == 0
    assert "globex" in text and "acme" not in text
    assert "poison windows" in text and "OrgSummary(" not in text

    code, out, err = run("history", "orgs", "--limit", "0")
    assert code == 2 and "limit" in err


def test_status_pages_partitions_and_names_a_bad_argument(cli_env: str, run: RunCli) -> None:
    run("history", "status", "acme")
    seed(cli_env)
    with psycopg.connect(cli_env) as conn:
        conn.execute(
            "INSERT INTO dw_chat_partitions (org_id, provider, external_channel_id)"
            " VALUES ('acme', 'slack', 'C2')"
        )
    code, out, _ = run("history", "status", "acme", "--limit", "1")
    first = json.loads(out)
    assert code == 0
    assert [p["partition"] for p in first["partitions"]] == ["acme/slack/C1"]
    assert (first["totals"]["partitions"], first["totals"]["messages"]) == (2, 3)
    code, out, _ = run("history", "status", "acme", "--cursor", first["next_cursor"])
    second = json.loads(out)
    assert [p["partition"] for p in second["partitions"]] == ["acme/slack/C2"]
    assert second["next_cursor"] is None
    for argv, named in ((("--limit", "0"), "--limit"), (("--cursor", "nonsense"), "--cursor")):
        code, _, err = run("history", "status", "acme", *argv)
        assert code == 2 and named in err, err
