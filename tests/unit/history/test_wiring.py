from __future__ import annotations

from memory.domain.history.partition import Partition
from memory.entrypoints.history_runtime import (
    FULL_TEXT_WORKERS,
    LISTENER_RETRY_SECONDS,
    stored_model_id,
)
from memory.infrastructure.history.partition_locks import lock_key
from memory.infrastructure.history.watermark_store import (
    WATERMARK_POOL_OVERFLOW,
    WATERMARK_POOL_SIZE,
    persistence_env,
)


def test_tuned_numbers_of_the_runtime() -> None:
    assert FULL_TEXT_WORKERS == 4
    assert LISTENER_RETRY_SECONDS == 5.0
    assert (WATERMARK_POOL_SIZE, WATERMARK_POOL_OVERFLOW) == (2, 4)


def test_persistence_env_from_a_url() -> None:
    env = persistence_env("postgresql://ann:s3cret@db.example:6543/memory")
    assert env == {
        "HISTORYSWEEP_PERSISTENCE_MODULE": "eventsourcing.postgres",
        "HISTORYSWEEP_POSTGRES_DBNAME": "memory",
        "HISTORYSWEEP_POSTGRES_HOST": "db.example",
        "HISTORYSWEEP_POSTGRES_PORT": "6543",
        "HISTORYSWEEP_POSTGRES_USER": "ann",
        "HISTORYSWEEP_POSTGRES_PASSWORD": "s3cret",
        "HISTORYSWEEP_POSTGRES_POOL_SIZE": "2",
        "HISTORYSWEEP_POSTGRES_MAX_OVERFLOW": "4",
        "HISTORYSWEEP_CREATE_TABLE": "y",
    }


def test_persistence_env_from_a_socket_directory_conninfo() -> None:
    env = persistence_env("host=/tmp/memory-pg-abc port=5433 user=memory password=pw dbname=x")
    assert env["HISTORYSWEEP_POSTGRES_HOST"] == "/tmp/memory-pg-abc"
    assert env["HISTORYSWEEP_POSTGRES_PORT"] == "5433"
    assert env["HISTORYSWEEP_POSTGRES_DBNAME"] == "x"


def test_model_specs_resolve_to_the_identity_rows_are_stored_under() -> None:
    assert stored_model_id("ollama:bge-m3:latest") == "ollama:bge-m3"
    assert stored_model_id("ollama:bge-m3@1024") == "ollama:bge-m3"
    assert stored_model_id("hash:1024") == "hash:1024"
    assert stored_model_id("local:multilingual-e5-small") == "local:multilingual-e5-small"
    assert stored_model_id(" not a spec ") == "not a spec"


def test_lock_keys_are_per_partition_and_model() -> None:
    p = Partition("acme", "slack", "C1")
    assert lock_key(p, "m") == lock_key(Partition("acme", "slack", "C1"), "m")
    assert lock_key(p, "m") != lock_key(p, "n")
    assert -(2**31) <= lock_key(p, "m") < 2**31
