from __future__ import annotations

from memory.application.history.watermarks import HISTORY_SWEEP_APPLICATION
from memory.infrastructure.policy.event_store import PolicyApplication, event_store_env
from memory.infrastructure.postgres.event_persistence import FACTORY_TOPIC
from memory.infrastructure.postgres.event_store import EventStoreConnection


def test_url_form_is_translated_to_prefixed_library_settings() -> None:
    env = event_store_env("postgresql://alice:s3cret@db.example:6543/memory")
    assert env["POLICY_PERSISTENCE_MODULE"] == FACTORY_TOPIC
    assert env["POLICY_POSTGRES_HOST"] == "db.example"
    assert env["POLICY_POSTGRES_PORT"] == "6543"
    assert env["POLICY_POSTGRES_USER"] == "alice"
    assert env["POLICY_POSTGRES_PASSWORD"] == "s3cret"
    assert env["POLICY_POSTGRES_DBNAME"] == "memory"
    assert all(key.startswith("POLICY_") for key in env)


def test_a_socket_directory_host_is_kept_and_missing_parts_are_libpq_defaults() -> None:
    connection = EventStoreConnection.from_url("host=/tmp/memory-pg-abc port=5999 dbname=t")
    assert (connection.host, connection.port, connection.dbname) == (
        "/tmp/memory-pg-abc",
        "5999",
        "t",
    )
    # Empty means libpq's own default, as for the service's pool on the same URL.
    assert (connection.user, connection.password) == ("", "")
    assert EventStoreConnection.from_url("dbname=t").port == "5432"


def test_both_contexts_get_the_same_connection_under_their_own_prefix() -> None:
    url = "postgresql://ann@/memory?host=/run/pg"
    connection = EventStoreConnection.from_url(url)
    policy = event_store_env(url)
    history = connection.env(HISTORY_SWEEP_APPLICATION)
    strip = {k.split("_", 1)[1]: v for k, v in history.items()}
    assert {k.split("_", 1)[1]: v for k, v in policy.items() if "RECORDER" not in k} == strip
    assert all(k.startswith("HISTORYSWEEP_") for k in history)
    assert strip["POSTGRES_HOST"] == "/run/pg" and strip["POSTGRES_USER"] == "ann"


def test_the_policy_store_records_without_pipeline_mode() -> None:
    topic = event_store_env("dbname=t")[
        f"{PolicyApplication.name.upper()}_APPLICATION_RECORDER_TOPIC"
    ]
    assert topic == "memory.infrastructure.policy.event_recorder:PolicyEventRecorder"
