"""Chinese-aware full-text search on a real database: CJK runs cut into bigrams at ingest and
for the query (docs/adr/0050), and re-indexing rows stored before (docs/adr/0051)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import psycopg

from memory.application.history.reindex import ReindexFullText
from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.search import HistoryQuery
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.history.chat_events import PostgresChatEventLog
from memory.infrastructure.postgres import database as database_module
from memory.infrastructure.postgres.database import Database

CJK_MIGRATION = "0205_history_cjk_fulltext.sql"
# A row written by hand: as the ingest before Chinese-aware full-text wrote it (unsegmented).
INSERT_AS_BEFORE = (
    "INSERT INTO dw_chat_events (org_id, event_id, provider, external_channel_id,"
    " sender, event_type, decision, message_text, occurred_at)"
)
REFUND_ASKED = "我上个星期申请了退款，到现在还没有收到，请问什么时候到账？"  # noqa: RUF001
INVOICE_BY_MAIL = "麻烦把三月份的发票发到我的邮箱"


def acme_with(make_runtime: Callable[..., HistoryRuntime], *events: ChatEvent) -> HistoryRuntime:
    """A runtime whose org `acme` holds `events`."""
    runtime = make_runtime()
    runtime.service.ingest("acme", list(events))
    return runtime


def found(runtime: HistoryRuntime, q: str, org: str = "acme", **filters) -> list[str]:
    result = runtime.service.search(org, HistoryQuery(q, **filters))
    return [hit.event_id for hit in result.hits]


def test_a_chinese_keyword_finds_the_message_that_contains_it_in_a_longer_sentence(
    make_runtime: Callable[..., HistoryRuntime], kit
) -> None:
    runtime = acme_with(
        make_runtime,
        kit.message("refund", 0, REFUND_ASKED),
        kit.message("invoice", 1, INVOICE_BY_MAIL),
        kit.message("weather", 2, "今天下午会下大雨，出门记得带伞。"),  # noqa: RUF001
    )
    assert found(runtime, "退款") == ["refund"]
    assert found(runtime, "发票") == ["invoice"]
    assert found(runtime, "什么时候到账") == ["refund"]
    # A word is a phrase: its characters in this order, not each of them anywhere.
    assert found(runtime, "退票") == []
    assert found(runtime, "发到 邮箱") == ["invoice"]  # words separated by a space: all needed


def test_keywords_written_together_are_cut_into_words_each_required(
    make_runtime: Callable[..., HistoryRuntime], kit
) -> None:
    runtime = acme_with(
        make_runtime,
        kit.message("refund", 0, REFUND_ASKED),
        kit.message("refund-done", 1, "退款已经处理好了，三到五个工作日到账"),  # noqa: RUF001
        kit.message("invoice", 2, INVOICE_BY_MAIL),
    )
    # Chinese is written without spaces: "申请退款" is the words 申请 and 退款.
    assert found(runtime, "申请退款") == ["refund"]
    assert found(runtime, "退款到账") == ["refund-done", "refund"]
    assert found(runtime, "退款请问什么时候到账") == ["refund"]
    assert found(runtime, "发票邮箱") == ["invoice"]
    assert found(runtime, "退款发票") == []


def test_rojak_messages_match_chinese_and_latin_words_of_the_same_message(
    make_runtime: Callable[..., HistoryRuntime], kit
) -> None:
    runtime = acme_with(
        make_runtime,
        kit.message("r1", 0, "Boss, 我的parcel belum sampai lagi lah, 已经一个星期了"),
        kit.message("r2", 1, "Sorry ah, courier cakap 仓库有delay, esok sampai"),
        kit.message("r3", 2, "parcel sampai already, terima kasih"),
    )
    assert found(runtime, "parcel") == ["r3", "r1"]  # Latin words as before, newest first
    assert found(runtime, "parcel 星期") == ["r1"]
    assert found(runtime, "仓库 delay") == ["r2"]
    assert found(runtime, "sampai") == ["r3", "r2", "r1"]
    assert found(runtime, "Parcel") == ["r3", "r1"]  # lower-cased, as before
    assert found(runtime, "parcels") == []  # and still no stemming


def test_messages_holding_the_query_terms_more_often_and_closer_rank_first(
    make_runtime: Callable[..., HistoryRuntime], kit
) -> None:
    runtime = acme_with(
        make_runtime,
        kit.message("once-old", 0, "我想问一下退款的事情"),
        kit.message("twice", 1, "退款还没到，第二次申请退款也没有回复"),  # noqa: RUF001
        kit.message("once-new", 2, "退款好了吗"),
        kit.message("once-new-tie", 2, "退款处理中"),
        kit.message("near", 3, "refund status please, pesanan saya belum sampai"),
        kit.message("far", 4, "refund: tolong semak status akaun saya untuk pesanan ini"),
    )
    # Twice beats once; among equals the newest, then the event id (deterministic).
    assert found(runtime, "退款") == ["twice", "once-new", "once-new-tie", "once-old"]
    # Both words are required; where they stand together ranks above the newer message
    # where they are apart.
    assert found(runtime, "refund status") == ["near", "far"]


def test_a_one_character_query_matches_that_character_standing_alone_only(
    make_runtime: Callable[..., HistoryRuntime], kit
) -> None:
    runtime = make_runtime()
    common = [kit.message(f"m{i}", i, f"好的，我明天{i}点到") for i in range(20)]  # noqa: RUF001
    runtime.service.ingest(
        "acme", [*common, kit.message("alone", 30, "好"), kit.message("reply", 31, "ok 好!")]
    )
    assert found(runtime, "好") == ["reply", "alone"]
    assert found(runtime, "好的") == [f"m{i}" for i in range(19, -1, -1)]


def test_org_scope_and_filters_apply_to_chinese_queries(
    make_runtime: Callable[..., HistoryRuntime], kit
) -> None:
    runtime = make_runtime()
    runtime.service.ingest("acme", [kit.message("a1", 0, "发票收到了", channel="C1")])
    runtime.service.ingest("acme", [kit.message("a2", 1, "发票还没开", channel="C2")])
    runtime.service.ingest("globex", [kit.message("g1", 0, "发票收到了")])
    assert found(runtime, "发票") == ["a2", "a1"]
    assert found(runtime, "发票", channel_id="C1") == ["a1"]
    assert found(runtime, "发票", org="globex") == ["g1"]


def test_ingest_stays_idempotent_and_the_first_write_keeps_its_index(
    make_runtime: Callable[..., HistoryRuntime], kit
) -> None:
    runtime = make_runtime()
    first = runtime.service.ingest("acme", [kit.message("a", 0, "退款申请已提交")])
    again = runtime.service.ingest(
        "acme", [kit.message("a", 0, "发票已寄出"), kit.message("b", 1, "发票已寄出")]
    )
    assert (first.inserted, again.inserted, again.duplicates) == (1, 1, 1)
    assert found(runtime, "退款") == ["a"]
    assert found(runtime, "发票") == ["b"]
    assert kit.scalar("SELECT count(DISTINCT search_segmentation) FROM dw_chat_events") == 1


def legacy_database(url: str) -> None:
    """The schema as it was before migration 0205, with rows stored by the old ingest."""
    with psycopg.connect(url) as conn:
        conn.execute(
            "CREATE TABLE memory_schema_migrations ("
            " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for name, text in database_module._migration_files():
            if name >= CJK_MIGRATION:
                break
            conn.execute(text)
            conn.execute("INSERT INTO memory_schema_migrations (name) VALUES (%s)", (name,))
        conn.execute(
            INSERT_AS_BEFORE
            + " SELECT 'acme', 'old' || lpad(i::text, 2, '0'), 'slack', 'C1', 'ali', 'message',"
            " 'received', CASE WHEN i % 2 = 0 THEN '请帮我查一下退款进度' || i"
            " ELSE 'please check my refund ' || i END,"
            " timestamptz '2026-03-02 09:00+00' + i * interval '1 minute'"
            " FROM generate_series(1, 25) AS i"
        )


class Progress:
    def __init__(self) -> None:
        self.total: int | None = None
        self.batches: list[int] = []

    def started(self, stale_rows: int) -> None:
        self.total = stale_rows

    def batch_done(self, rows: int) -> None:
        self.batches.append(rows)


def test_rows_stored_before_the_migration_are_reindexed_resumably(
    database_url: str, make_runtime: Callable[..., HistoryRuntime], kit
) -> None:
    fresh = Database(database_url, min_size=1, max_size=2)
    # The `database` fixture migrated this database already: go back to the schema before
    # migration 0205, with rows stored by the ingest of that time.
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    legacy_database(database_url)
    fresh.open()
    try:
        later = [n for n, _ in database_module._migration_files() if n >= CJK_MIGRATION]
        assert fresh.migrate() == later and later[0] == CJK_MIGRATION
    finally:
        fresh.close()
    runtime = make_runtime()
    # Migrated rows keep their old index: Latin words are found, Chinese inside a sentence not.
    assert len(found(runtime, "refund", limit=100)) == 13
    assert found(runtime, "退款") == []
    assert runtime.service.stale_full_text_rows() == 25

    # A re-index stopped after its first batch leaves the rest stale; a second run resumes.
    log = PostgresChatEventLog(kit.database)
    stop = threading.Event()
    first = Progress()

    class StopAfterOneBatch(Progress):
        def batch_done(self, rows: int) -> None:
            first.batch_done(rows)
            stop.set()

    report = ReindexFullText(log, batch_rows=10)(StopAfterOneBatch(), stop)
    assert (report.rows_reindexed, report.rows_left) == (10, 15)
    assert first.batches == [10]
    progress = Progress()
    report = ReindexFullText(log, batch_rows=10)(progress)
    assert (report.rows_reindexed, report.rows_left) == (15, 0)
    assert (progress.total, progress.batches) == (15, [10, 5])

    assert len(found(runtime, "退款", limit=100)) == 12
    assert len(found(runtime, "refund", limit=100)) == 13
    # Nothing left: another run rewrites nothing.
    assert ReindexFullText(log)().rows_reindexed == 0


def test_a_row_written_without_segmenting_is_indexed_as_before_and_marked_stale(
    make_runtime: Callable[..., HistoryRuntime], kit
) -> None:
    runtime = make_runtime()
    with kit.database.connection() as conn:
        conn.execute(
            INSERT_AS_BEFORE + " VALUES ('acme', 'x', 'slack', 'C1', 'ali', 'message', 'received',"
            " 'refund 退款申请', timestamptz '2026-03-02 09:00+00')"
        )
    assert found(runtime, "refund") == ["x"]
    assert runtime.service.stale_full_text_rows() == 1
    assert runtime.service.reindex_full_text().rows_reindexed == 1
    assert found(runtime, "退款") == ["x"]


def test_japanese_korean_and_long_queries(make_runtime: Callable[..., HistoryRuntime], kit) -> None:
    runtime = acme_with(
        make_runtime,
        kit.message("ko", 0, "비밀번호 재설정 링크가 안 와요"),
        kit.message("ja", 1, "パスワードをリセットしたいです"),
        kit.message("zh", 2, "我忘记了登录密码"),
    )
    assert found(runtime, "비밀번호") == ["ko"]
    assert found(runtime, "재설정") == ["ko"]
    assert found(runtime, "パスワード") == ["ja"]
    assert found(runtime, "リセット") == ["ja"]
    # The longest query allowed, all Chinese: hundreds of words, answered (with nothing).
    assert found(runtime, "请问我的登录密码什么时候可以重置" * 62) == []


def test_the_reindex_commits_a_thousand_rows_at_a_time(
    make_runtime: Callable[..., HistoryRuntime], kit
) -> None:
    runtime = make_runtime()
    with kit.database.connection() as conn:
        conn.execute(
            INSERT_AS_BEFORE
            + " SELECT 'acme', 'e' || i, 'slack', 'C1', 'ali', 'message', 'received',"
            " '发票' || i, timestamptz '2026-03-02 09:00+00'"
            " FROM generate_series(1, 1001) AS i"
        )
    progress = Progress()
    report = runtime.service.reindex_full_text(progress)
    assert (progress.total, progress.batches) == (1001, [1000, 1])
    assert (report.rows_reindexed, report.rows_left) == (1001, 0)
