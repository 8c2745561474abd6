"""Migration 0218 (docs/adr/0120): the database groups a text as the domain does (Han,
Malay, other), for the policy read model's generated column and for history windows
written before the sweep grouped Malay apart."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from tests.conftest import migrated_database

from memory.datasets.precision_check import load_precision_set
from memory.datasets.retrieval_check import load_check_set
from memory.domain.relevance import ENGLISH_WORDS, MALAY_WORDS, script_group
from memory.infrastructure.postgres.database import Database

MIGRATION = "0218_malay_relevance_group.sql"
EDGES = [
    "",
    "   ",
    "OK",
    "Saya TAK dapat masuk",  # upper case counts
    "di the",  # one each: not more Malay than English
    "di ke the",
    "I lupa password, macam mana nak reset",
    "wei ming: 仓库的叉车坏了",
    "Boss, slip gaji bulan ni belum dapat lagi lah, 谢谢",
    "café naïve déjà vu",
    "saya\u00a0nak\tpergi\nesok",
]


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    with migrated_database(database_url, max_size=2) as database:
        yield database


def _texts() -> list[str]:
    precision = load_precision_set()
    check = load_check_set()
    return [
        *EDGES,
        *(d.text for d in precision.documents),
        *(q.text for q in precision.queries),
        *(d.text for d in check.documents),
        *(q.text for q in check.queries),
    ]


def test_the_database_groups_every_text_as_the_domain_does(database: Database) -> None:
    texts = _texts()
    with database.connection() as conn:
        rows = conn.execute(
            "SELECT t, memory_text_group(t) AS g FROM unnest(%s::text[]) WITH ORDINALITY"
            " AS x(t, n) ORDER BY n",
            (texts,),
        ).fetchall()
        words = conn.execute(
            "SELECT memory_malay_words() AS malay, memory_english_words() AS english"
        ).fetchone()
    assert [r["g"] for r in rows] == [script_group(t).value for t in texts]
    assert {str(r["g"]) for r in rows} == {"han", "malay", "other"}
    assert words is not None
    assert set(words["malay"]) == MALAY_WORDS and set(words["english"]) == ENGLISH_WORDS


def test_history_windows_and_policies_from_before_are_grouped_by_the_new_rule(
    database: Database,
) -> None:
    now = datetime.now(UTC)
    texts = {
        "ms": "aina: Wifi pejabat tak boleh disambung sejak pagi tadi",
        "en": "the office wifi is down since this morning",
        "zh": "办公室的无线网络从早上开始就断了",
    }
    with database.connection() as conn:
        for lang, text in texts.items():
            conn.execute(
                "INSERT INTO dw_message_embeddings (id, org_id, provider, external_channel_id,"
                " model, embedding, content, source_event_ids, first_occurred_at,"
                " last_occurred_at, script_group)"
                " VALUES (%s, 'acme', 'p', %s, 'hash:3', '[1,0,0]'::halfvec, %s, '{}', %s, %s,"
                " %s)",
                (uuid.uuid4(), lang, text, now, now, "han" if lang == "zh" else "other"),
            )
            conn.execute(
                "INSERT INTO policy_embeddings (embedding_ref, model, policy_id, version,"
                " embedding, content, content_sha256, created_at, updated_at)"
                " VALUES (%s, 'hash:384', %s, 1, %s::halfvec, %s, 'x', %s, %s)",
                (uuid.uuid4(), lang, "[" + ",".join(["0.1"] * 384) + "]", text, now, now),
            )
        # The rows above were written before the upgrade: run 0218 again as it would.
        conn.execute("DELETE FROM memory_schema_migrations WHERE name = %s", (MIGRATION,))
    assert database.migrate() == [MIGRATION]
    expected = {"ms": "malay", "en": "other", "zh": "han"}
    with database.connection() as conn:
        windows = conn.execute(
            "SELECT external_channel_id AS lang, script_group FROM dw_message_embeddings"
        ).fetchall()
        policies = conn.execute("SELECT policy_id AS lang, script_group FROM policy_embeddings")
        assert {r["lang"]: r["script_group"] for r in policies.fetchall()} == expected
    assert {r["lang"]: r["script_group"] for r in windows} == expected
