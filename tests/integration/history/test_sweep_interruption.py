"""A running pass stops between batches when its org's semantic search is turned off or the
process shuts down (ADR 0044): what was embedded stays, a later pass embeds the rest, each
window once. Batches are bounded in tokens; an over-long window is embedded from its start."""

from __future__ import annotations

import threading
from collections.abc import Callable

from tests.fakes import TEST_ACTOR, FakeModel

from memory.application.history.sweep import (
    EMBED_BATCH_TOKENS,
    EMBED_BATCH_WINDOWS,
    SweepReport,
)
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.embedding.hashing import HASH_MODEL_MAX_TOKENS

WINDOWS = 2 * EMBED_BATCH_WINDOWS + 3


def ingest_windows(runtime: HistoryRuntime, kit, count: int = WINDOWS) -> None:
    # 40 minutes apart (more than the session gap): each message is a window of its own.
    runtime.service.ingest(
        "acme",
        [
            kit.message(f"m{i}", 40 * i, f"please help me reset password number {i}")
            for i in range(count)
        ],
    )


def pass_in_background(runtime: HistoryRuntime) -> Callable[[], SweepReport]:
    reports: list[SweepReport] = []
    thread = threading.Thread(target=lambda: reports.append(runtime.service.sweep(trigger="t")))
    thread.start()

    def finished() -> SweepReport:
        thread.join(30)
        assert not thread.is_alive()
        return reports[0]

    return finished


def held_model() -> FakeModel:
    model = FakeModel(dimensions=1024)
    model.gate = threading.Event()
    return model


def test_turning_the_org_flag_off_stops_its_running_pass_at_the_next_batch(
    make_runtime, kit
) -> None:
    model = held_model()
    runtime = make_runtime(model)
    kit.enable_semantic(runtime)
    ingest_windows(runtime, kit)
    finished = pass_in_background(runtime)
    assert model.entered.wait(10)  # inside the first batch's model call
    runtime.service.set_org_flag("acme", SEMANTIC_SEARCH_FLAG, False, actor=TEST_ACTOR)
    model.gate.set()
    report = finished()

    assert len(model.document_calls) == 1
    assert report.windows_embedded == EMBED_BATCH_WINDOWS
    assert report.partitions_interrupted == 1
    assert len(kit.rows()) == EMBED_BATCH_WINDOWS  # the batch in flight was kept

    runtime.service.set_org_flag(
        "acme", SEMANTIC_SEARCH_FLAG, None, actor=TEST_ACTOR
    )  # back to the global: on
    rest = runtime.service.sweep(trigger="t")
    assert rest.windows_embedded == WINDOWS - EMBED_BATCH_WINDOWS
    assert rest.partitions_interrupted == 0
    covered = kit.covered()
    assert len(covered) == len(set(covered)) == WINDOWS


def test_a_shutdown_request_stops_a_running_pass_at_the_next_batch(make_runtime, kit) -> None:
    model = held_model()
    runtime = make_runtime(model)
    kit.enable_semantic(runtime)
    ingest_windows(runtime, kit)
    finished = pass_in_background(runtime)
    assert model.entered.wait(10)
    runtime.request_stop()
    model.gate.set()
    report = finished()
    assert len(model.document_calls) == 1
    assert report.windows_embedded == EMBED_BATCH_WINDOWS
    assert report.partitions_interrupted == 1

    restarted = make_runtime(model)
    assert restarted.service.sweep(trigger="t").windows_embedded == WINDOWS - EMBED_BATCH_WINDOWS
    covered = kit.covered()
    assert len(covered) == len(set(covered)) == WINDOWS


def test_batches_are_bounded_in_tokens_and_an_over_long_message_is_read_from_its_start(
    make_runtime, kit
) -> None:
    model = FakeModel(dimensions=1024)
    runtime = make_runtime(model)
    kit.enable_semantic(runtime)
    long_text = " ".join(f"word{j}" for j in range(HASH_MODEL_MAX_TOKENS + 100))
    medium_text = " ".join(f"term{j}" for j in range(HASH_MODEL_MAX_TOKENS // 2))
    texts = [long_text] * 4 + [medium_text] * 6
    runtime.service.ingest(
        "acme", [kit.message(f"m{i}", 40 * i, f"{i} {text}") for i, text in enumerate(texts)]
    )
    report = runtime.service.sweep(trigger="t")
    assert report.windows_embedded == len(texts)

    count = model.count_tokens
    for call in model.document_calls:
        assert len(call) == 1 or sum(count(t) for t in call) <= EMBED_BATCH_TOKENS
        assert all(count(t) <= HASH_MODEL_MAX_TOKENS for t in call)
    stored = {row["content"] for row in kit.rows()}
    clipped = [t for t in model.attempted if t not in stored]
    assert len(clipped) == 4  # the over-long ones, each a prefix of its stored window
    assert all(any(content.startswith(t) for content in stored) for t in clipped)
    assert len(model.document_calls) > 1
