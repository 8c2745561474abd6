"""The embedded cluster's service role (docs/adr/0101): the service connects as a role that
owns its database and is no superuser, and a home created before that role existed (every
object owned by the bootstrap superuser) is handed over to it on the next start."""

from __future__ import annotations

import psycopg
import pytest

from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.embedded import (
    DATABASE_NAME,
    SERVICE_ROLE,
    SUPERUSER,
    EmbeddedPostgres,
)

# Objects of the database the superuser still owns, other than the extension's own.
SUPERUSER_OBJECTS = """
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relowner = %(su)s::regrole AND NOT EXISTS (
  SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')
UNION ALL
SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'public' AND p.proowner = %(su)s::regrole AND NOT EXISTS (
  SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
UNION ALL
SELECT t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE n.nspname = 'public' AND t.typowner = %(su)s::regrole AND t.typtype = 'e'
UNION ALL
SELECT nspname FROM pg_namespace WHERE nspname = 'public' AND nspowner = %(su)s::regrole
"""


def _migrate(url: str) -> None:
    database = Database(url, min_size=1, max_size=2)
    database.open()
    try:
        database.migrate()
    finally:
        database.close()


def test_the_service_role_owns_its_database_and_is_no_superuser(
    cluster: EmbeddedPostgres,
) -> None:
    _migrate(cluster.service_url)
    with psycopg.connect(cluster.service_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT current_user, r.rolsuper, r.rolcreatedb, r.rolcreaterole,"
            " pg_get_userbyid(d.datdba)"
            " FROM pg_roles r, pg_database d"
            " WHERE r.rolname = current_user AND d.datname = current_database()"
        ).fetchone()
        assert row == (SERVICE_ROLE, False, False, False, SERVICE_ROLE)
        assert conn.execute(SUPERUSER_OBJECTS, {"su": SUPERUSER}).fetchall() == []
        # What a superuser could do and the service must not.
        for statement in (
            "CREATE ROLE intruder",
            "ALTER SYSTEM SET work_mem = '1MB'",
            "COPY (SELECT 1) TO PROGRAM 'true'",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement.encode())


def test_a_home_from_before_the_service_role_is_handed_over_on_start(
    cluster: EmbeddedPostgres,
) -> None:
    # Make the home what an older version left: no service role, the database and every
    # object the superuser's.
    with psycopg.connect(cluster.url, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {DATABASE_NAME} OWNER TO {SUPERUSER}")
        admin.execute(f"REASSIGN OWNED BY {SERVICE_ROLE} TO {SUPERUSER}")
        admin.execute(f"DROP ROLE {SERVICE_ROLE}")
    cluster.paths.service_password_file.unlink()
    _migrate(cluster.url)
    with psycopg.connect(cluster.url, autocommit=True) as admin:
        admin.execute("CREATE TYPE mood AS ENUM ('calm')")
        admin.execute("CREATE SEQUENCE loose_counter")
        admin.execute("CREATE VIEW key_names AS SELECT name FROM api_keys")
        assert admin.execute(SUPERUSER_OBJECTS, {"su": SUPERUSER}).fetchall()

    cluster.start()  # attaches to the running server, as the next `memory serve` would

    with psycopg.connect(cluster.service_url, autocommit=True) as conn:
        assert conn.execute(SUPERUSER_OBJECTS, {"su": SUPERUSER}).fetchall() == []
        # The role may now change what it owns: the next migration, a projector's DDL.
        conn.execute("ALTER TABLE api_keys ADD COLUMN upgraded boolean")
        conn.execute(
            "CREATE OR REPLACE FUNCTION dw_orgs_lock(org text) RETURNS void LANGUAGE sql"
            " AS $$ SELECT pg_advisory_xact_lock(hashtext(org)) $$"
        )
        conn.execute("SELECT nextval('loose_counter')")
        row = conn.execute(
            "SELECT pg_get_userbyid(extowner) FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        assert row == (SUPERUSER,)  # the extension stays the superuser's
    _migrate(cluster.service_url)
