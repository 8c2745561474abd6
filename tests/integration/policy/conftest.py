"""Fixtures for policy integration tests: a migrated database, the policy runtime on it,
projectors that are stopped after the test, and test models (fakes of model servers)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.conftest import migrated_database
from tests.fakes import FakeModel

from memory.entrypoints.policy_runtime import PolicyRuntime
from memory.infrastructure.policy.projector import PolicyProjector
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings

# The fixtures' types, for the tests' signatures.
MakeRuntime = Callable[..., PolicyRuntime]
StartProjector = Callable[..., PolicyProjector]
ReadRows = Callable[[str], dict[str, dict[str, Any]]]
# A second model: the test model's dimension, another vector space (a model swap's target).
OTHER_MODEL = "test:other-space@384"


@pytest.fixture
def test_model() -> type[FakeModel]:
    """A model server fake: `test_model("ollama:other@384", fail_after=3)`."""
    return FakeModel


@pytest.fixture
def policy_db(database_url: str) -> Iterator[Database]:
    with migrated_database(database_url, max_size=6) as database:
        yield database


@pytest.fixture
def make_runtime(
    policy_db: Database, make_settings: Callable[..., Settings]
) -> Iterator[MakeRuntime]:
    made: list[PolicyRuntime] = []

    def make(model: Any = None, **overrides: Any) -> PolicyRuntime:
        settings = make_settings(**overrides)
        runtime = PolicyRuntime(settings, policy_db, model or FakeModel())
        made.append(runtime)
        return runtime

    yield make
    for runtime in made:
        runtime.close()


@pytest.fixture
def start_projector(policy_db: Database) -> Iterator[StartProjector]:
    started: list[PolicyProjector] = []

    def start(runtime: PolicyRuntime, model: Any = None, **kwargs: Any) -> PolicyProjector:
        projector = PolicyProjector(
            policy_db,
            model or runtime.model,
            runtime.log,
            progress=runtime.progress if model is None else None,
            **kwargs,
        )
        projector.start()
        started.append(projector)
        return projector

    yield start
    for projector in started:
        projector.stop()


@pytest.fixture
def runtime(make_runtime: MakeRuntime, start_projector: StartProjector) -> PolicyRuntime:
    """The default runtime with its projector running, as `memory serve` has them."""
    runtime = make_runtime()
    start_projector(runtime)
    return runtime


def rows_of(database: Database, model: str) -> dict[str, dict[str, Any]]:
    """The read model's rows of one model, by policy id."""
    with database.connection() as conn:
        rows = conn.execute(
            "SELECT embedding_ref, policy_id, version, embedding::text AS embedding, title,"
            " source, tags, metadata, content, content_sha256, created_at, updated_at"
            " FROM policy_embeddings WHERE model = %s",
            (model,),
        ).fetchall()
    return {str(r["policy_id"]): dict(r) for r in rows}


@pytest.fixture
def read_rows(policy_db: Database) -> ReadRows:
    return lambda model: rows_of(policy_db, model)
