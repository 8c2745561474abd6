"""History query embeddings against a model server that refuses connections: without a
circuit breaker (baseline: a threshold it never reaches) every search waits its whole
query-embedding budget; with the default breaker (ADR 0045) searches degrade at once after
the first few. Both measured in the same run, on a loopback port nothing listens on.

    .venv/bin/python bench/model_breaker.py [--searches 20]
"""

from __future__ import annotations

import argparse
import logging
import socket
import statistics
import time

from memory.application.history.query_embedding import QueryEmbedder
from memory.infrastructure.embedding.factory import ModelRegistry
from memory.infrastructure.settings import Settings

MODEL = "ollama:bge-m3"
# MEMORY_HISTORY_QUERY_EMBED_TIMEOUT's default.
BUDGET = 1.0


def refusing_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def searches(threshold: int | None, count: int) -> list[float]:
    """Seconds each search waited for its query vector (None: the default breaker)."""
    overrides = {} if threshold is None else {"model_breaker_threshold": threshold}
    settings = Settings(history_model=MODEL, ollama_url=refusing_url(), **overrides)
    models = ModelRegistry(settings)
    embedder = QueryEmbedder(models.get(MODEL), BUDGET)
    waits = []
    try:
        for _ in range(count):
            started = time.perf_counter()
            assert embedder.start("how do I reset my password").result() is None
            waits.append(time.perf_counter() - started)
    finally:
        embedder.close()
        models.close()
    return waits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--searches", type=int, default=20)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # one warning per refused attempt otherwise

    baseline = searches(10**9, args.searches)
    breaker = searches(None, args.searches)

    print(
        f"\n{args.searches} history searches in a row, model server refusing connections,"
        f" query budget {BUDGET:g} s\n"
    )
    print("| setup | p50 ms | last 10 p50 ms | total s | total vs baseline |")
    print("|---|---:|---:|---:|---:|")
    for name, waits in (("no breaker (baseline)", baseline), ("default breaker", breaker)):
        print(
            f"| {name} | {statistics.median(waits) * 1000:,.1f}"
            f" | {statistics.median(waits[-10:]) * 1000:,.1f} | {sum(waits):.2f}"
            f" | {sum(waits) / sum(baseline):.3f} |"
        )


if __name__ == "__main__":
    main()
