"""The role the service connects as: it owns its database and everything the service
created in it, and is no superuser (docs/adr/0101).

The embedded cluster's bootstrap superuser creates the database, the `vector` extension
(pgvector 0.8 is not a trusted extension: only a superuser may create it) and this role;
from then on the service, its migrations included, runs as the role. A home created before
the role existed has its objects owned by the superuser: `ensure_service_role` hands every
one of them (tables, views, sequences, functions, types, schemas; not the extension's own
objects, which stay the superuser's) to the role, once, on the next start.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

# Objects of the service's database a role owns, other than members of an extension
# (`deptype = 'e'`) and sequences that belong to a column (they follow their table).
_RELATIONS = """
SELECT c.oid::regclass::text AS name, c.relkind AS kind
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relowner = %(owner)s::regrole
  AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
  AND n.nspname NOT LIKE 'pg\\_%%' AND n.nspname <> 'information_schema'
  AND NOT EXISTS (
    SELECT 1 FROM pg_depend d
    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
      AND (d.deptype = 'e' OR (c.relkind = 'S' AND d.deptype IN ('a', 'i'))))
"""
_ROUTINES = """
SELECT p.oid::regprocedure::text AS name, p.prokind AS kind
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE p.proowner = %(owner)s::regrole
  AND n.nspname NOT LIKE 'pg\\_%%' AND n.nspname <> 'information_schema'
  AND NOT EXISTS (
    SELECT 1 FROM pg_depend d
    WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
"""
# Standalone types only: a table's row type and an array type follow their owner object.
_TYPES = """
SELECT t.oid::regtype::text AS name, t.typtype AS kind
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE t.typowner = %(owner)s::regrole
  AND t.typtype IN ('c', 'd', 'e', 'r', 'm')
  AND (t.typrelid = 0 OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c')
  AND n.nspname NOT LIKE 'pg\\_%%' AND n.nspname <> 'information_schema'
  AND NOT EXISTS (
    SELECT 1 FROM pg_depend d
    WHERE d.classid = 'pg_type'::regclass AND d.objid = t.oid AND d.deptype = 'e')
"""
_SCHEMAS = """
SELECT quote_ident(nspname) AS name, 's' AS kind FROM pg_namespace
WHERE nspowner = %(owner)s::regrole
  AND nspname NOT LIKE 'pg\\_%%' AND nspname <> 'information_schema'
"""
_ALTER = {
    "r": "TABLE",
    "p": "TABLE",
    "f": "FOREIGN TABLE",
    "v": "VIEW",
    "m": "MATERIALIZED VIEW",
    "S": "SEQUENCE",
    "f_routine": "FUNCTION",
    "p_routine": "PROCEDURE",
    "a_routine": "AGGREGATE",
    "w_routine": "FUNCTION",
    "d_type": "DOMAIN",
    "s": "SCHEMA",
}
# Serialises processes of one cluster setting the role up at the same time.
SERVICE_ROLE_LOCK_KEY = 0x6D656D726F6C65  # "memrole"


def ensure_service_role(admin_url: str, database: str, role: str, password: str) -> int:
    """As the superuser `admin_url` names (connected to the service's `database`): create
    `role` (login, no superuser, no CREATEDB or CREATEROLE; member of `pg_monitor`) or set
    its password, make it the database's owner, and give it every object the superuser
    owns there. Returns how many objects changed hands (0 once a home is up to date)."""
    with psycopg.connect(admin_url) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SERVICE_ROLE_LOCK_KEY,))
        superuser = conn.execute("SELECT current_user").fetchone()
        assert superuser is not None
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
        verb = "ALTER" if exists else "CREATE"
        conn.execute(
            sql.SQL(verb + " ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
        # Read-only monitoring (pg_stat_replication, pg_stat_activity of other sessions):
        # what an operator checks through `memory db url`; no file, program or role rights.
        conn.execute(sql.SQL("GRANT pg_monitor TO {}").format(sql.Identifier(role)))
        conn.execute(
            sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                sql.Identifier(database), sql.Identifier(role)
            )
        )
        return _hand_over(conn, str(superuser[0]), role)


def _hand_over(conn: psycopg.Connection[tuple[object, ...]], owner: str, role: str) -> int:
    moved = 0
    for query, suffix in (
        (_SCHEMAS, ""),
        (_RELATIONS, ""),
        (_ROUTINES, "_routine"),
        (_TYPES, "_type"),
    ):
        for name, kind in conn.execute(query, {"owner": owner}).fetchall():
            what = _ALTER.get(f"{kind}{suffix}", "TYPE")
            conn.execute(
                sql.SQL("ALTER " + what + " " + str(name) + " OWNER TO {}").format(
                    sql.Identifier(role)
                )
            )
            moved += 1
    return moved
