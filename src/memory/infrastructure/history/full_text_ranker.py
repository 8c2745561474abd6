"""Full-text ranking of a few documents held in memory, exactly as history search matches
stored messages (same segmentation, same tsquery, same ranking), for `memory check`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql

from memory.domain.history.full_text import CURRENT_SEGMENTATION
from memory.infrastructure.history.chat_events import tsquery
from memory.infrastructure.history.chinese_words import jieba_words
from memory.infrastructure.postgres.database import Database


class PostgresFullTextRanker:
    def __init__(self, database: Database) -> None:
        self._database = database
        self._split_words = jieba_words()

    def rank(self, query: str, documents: Sequence[tuple[str, str]], k: int) -> list[str]:
        params: dict[str, Any] = {"k": k}
        rows = []
        for n, (doc_id, text) in enumerate(documents):
            params[f"id_{n}"] = doc_id
            params[f"text_{n}"] = CURRENT_SEGMENTATION.index_text(text)
            rows.append(
                sql.SQL("({}, to_tsvector('simple', {}))").format(
                    sql.Placeholder(f"id_{n}"), sql.Placeholder(f"text_{n}")
                )
            )
        statement = sql.SQL(
            "SELECT id FROM (VALUES {rows}) AS docs(id, tsv), (SELECT {q} AS q) AS query"
            " WHERE tsv @@ query.q ORDER BY ts_rank_cd(tsv, query.q) DESC, id LIMIT %(k)s"
        ).format(
            rows=sql.SQL(", ").join(rows),
            q=tsquery(CURRENT_SEGMENTATION.query(query, self._split_words), params),
        )
        with self._database.connection() as conn:
            return [str(row["id"]) for row in conn.execute(statement, params).fetchall()]
