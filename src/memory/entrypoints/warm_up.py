"""Warm-up before the service says it is ready (docs/adr/0113).

A fresh process pays for its first model calls (the engine maps its weights, allocates its
buffers) and for loading the Chinese segmenter's dictionary: measured, the first query
embeddings of the bundled model took 1-4 s, against a query-embedding budget of 1 s, so
the first searches after a start came back `degraded`. `memory serve` and `memory.api.open`
run this after building the services and before answering: every distinct model embeds a
few queries in each language the product serves, and the dictionary is loaded. Documents
are not warmed: nothing embeds one in a request's budget (the sweep and the projector do,
in the background). A model that fails here is reported, never fatal: /healthz shows its
state, and search degrades as it would later.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from memory.application.embedding import EmbeddingError, EmbeddingModel
from memory.entrypoints.bootstrap import Services
from memory.infrastructure.history.chinese_words import jieba_words

log = logging.getLogger(__name__)

# One short query per language the product serves; each is embedded WARM_ROUNDS times.
WARM_QUERIES = (
    "how do I reset my password",
    "saya lupa kata laluan, macam mana nak tetapkan semula",
    "仓库的叉车坏了，今天的货要延迟",  # noqa: RUF001 (a real Chinese comma)
    "boss, slip gaji bulan ni belum dapat lagi lah",
)
WARM_ROUNDS = 2


@dataclass
class ModelWarmUp:
    model: str
    seconds: float = 0.0
    first_query_seconds: float = 0.0
    slowest_last_round_seconds: float = 0.0
    error: str | None = None

    def as_health(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "seconds": round(self.seconds, 3),
            "first_query_seconds": round(self.first_query_seconds, 3),
            "slowest_last_round_seconds": round(self.slowest_last_round_seconds, 3),
        }
        if self.error is not None:
            entry["error"] = self.error
        return entry


@dataclass
class WarmUp:
    """What the warm-up did: per model, and the segmenter's load time."""

    models: list[ModelWarmUp] = field(default_factory=list)
    segmenter_seconds: float = 0.0
    seconds: float = 0.0

    def as_health(self) -> dict[str, Any]:
        return {
            "ready": True,
            "seconds": round(self.seconds, 3),
            "segmenter_seconds": round(self.segmenter_seconds, 3),
            "models": {m.model: m.as_health() for m in self.models},
        }


def warm_up(services: Services) -> WarmUp:
    """Warm every distinct model of the built contexts and, with the history context, the
    Chinese segmenter; the result is kept on `services` for /healthz."""
    started = time.perf_counter()
    result = WarmUp()
    models: dict[int, EmbeddingModel] = {}
    for ctx in services.contexts:
        model = getattr(ctx, "model", None)
        if model is not None:
            models.setdefault(id(model), model)
    for model in models.values():
        result.models.append(_warm_model(model))
    if any(ctx.name == "history" for ctx in services.contexts):
        loading = time.perf_counter()
        jieba_words().load()
        result.segmenter_seconds = time.perf_counter() - loading
    result.seconds = time.perf_counter() - started
    services.warm_up = result
    log.info(
        "warm-up done in %.2f s (%s)",
        result.seconds,
        ", ".join(f"{m.model}: first query {m.first_query_seconds:.2f} s" for m in result.models),
    )
    return result


def _warm_model(model: EmbeddingModel) -> ModelWarmUp:
    report = ModelWarmUp(model.identity.id)
    started = time.perf_counter()
    try:
        for round_ in range(WARM_ROUNDS):
            slowest = 0.0
            for text in WARM_QUERIES:
                call = time.perf_counter()
                model.embed_query(text)
                took = time.perf_counter() - call
                if round_ == 0 and text == WARM_QUERIES[0]:
                    report.first_query_seconds = took
                slowest = max(slowest, took)
            report.slowest_last_round_seconds = slowest
    except EmbeddingError as exc:
        report.error = f"{type(exc).__name__}: {exc.message}"
        log.warning("warm-up of %s failed: %s", model.identity.id, report.error)
    report.seconds = time.perf_counter() - started
    return report
