from __future__ import annotations

from memory.infrastructure.policy.event_store import (
    EVENT_STORE_POOL_OVERFLOW,
    EVENT_STORE_POOL_SIZE,
    event_store_env,
)


def test_url_form_is_translated_to_prefixed_library_settings() -> None:
    env = event_store_env("postgresql://alice:s3cret@db.example:6543/memory")
    assert env["POLICY_PERSISTENCE_MODULE"] == "eventsourcing.postgres"
    assert env["POLICY_POSTGRES_HOST"] == "db.example"
    assert env["POLICY_POSTGRES_PORT"] == "6543"
    assert env["POLICY_POSTGRES_USER"] == "alice"
    assert env["POLICY_POSTGRES_PASSWORD"] == "s3cret"
    assert env["POLICY_POSTGRES_DBNAME"] == "memory"
    assert all(key.startswith("POLICY_") for key in env)


def test_a_socket_directory_host_and_defaults_are_kept() -> None:
    env = event_store_env("host=/tmp/memory-pg-abc port=5999 dbname=t user=memory")
    assert env["POLICY_POSTGRES_HOST"] == "/tmp/memory-pg-abc"
    assert env["POLICY_POSTGRES_PORT"] == "5999"
    assert env["POLICY_POSTGRES_PASSWORD"] == ""
    assert event_store_env("dbname=t")["POLICY_POSTGRES_PORT"] == "5432"


def test_library_pools_are_small() -> None:
    # Each process has three library pools (commands, the projector's subscription, its
    # view) beside the service's own; with 2 + 4 each they stay well under max_connections.
    assert (EVENT_STORE_POOL_SIZE, EVENT_STORE_POOL_OVERFLOW) == (2, 4)
    env = event_store_env("dbname=t")
    assert env["POLICY_POSTGRES_POOL_SIZE"] == "2"
    assert env["POLICY_POSTGRES_MAX_OVERFLOW"] == "4"


def test_the_event_store_records_without_pipeline_mode() -> None:
    topic = event_store_env("dbname=t")["POLICY_APPLICATION_RECORDER_TOPIC"]
    assert topic == "memory.infrastructure.policy.event_recorder:PolicyEventRecorder"
