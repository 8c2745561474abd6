"""MEMORY_DATABASE_PASSWORD: a password with the characters a URL would need encoded
(`@`, `:`, `/`, `%`, `#`, a space, a quote) connects as given."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memory.entrypoints.database_url import database_url as database_url_of
from memory.infrastructure.settings import Settings

PASSWORD = "p@ss:w/rd %41 #1 'x'"


@pytest.fixture
def role(database_url: str) -> Iterator[str]:
    name = f"pw_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(name), sql.Literal(PASSWORD)
            )
        )
    try:
        yield name
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_a_password_with_url_characters_connects(
    role: str, database_url: str, tmp_path: Path
) -> None:
    params = conninfo_to_dict(database_url)
    params.pop("password", None)
    without_password = make_conninfo(**{**params, "user": role})
    settings = Settings(home=tmp_path, database_url=without_password, database_password=PASSWORD)
    with database_url_of(settings) as url, psycopg.connect(url) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (role,)
    assert PASSWORD not in repr(settings)  # kept out of reprs and so out of logs
