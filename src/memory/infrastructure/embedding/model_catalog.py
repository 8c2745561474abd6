"""What the adapters know about remote embedding models, by name.

A small, named table: each family's native dimension, whether it was trained with
Matryoshka representation learning (only then may its vectors be shortened by truncation),
the prompts it expects on queries and documents, and the longest input it reads. A model
that is not in the table still works when its spec gives the dimension (`name@dims`); it
then gets no prompts, no truncation and `DEFAULT_MAX_INPUT_TOKENS`.

Names are matched the way servers spell them: `google/embeddinggemma-300m` (TEI, vLLM),
`embeddinggemma:300m` (Ollama) and `embeddinggemma` all name the same family.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.domain.embedding import base_model_name

DEFAULT_MAX_INPUT_TOKENS = 512

# Prompts the model cards prescribe. EmbeddingGemma's are its "retrieval" task prompts.
GEMMA_QUERY_PROMPT = "task: search result | query: "
GEMMA_DOCUMENT_PROMPT = "title: none | text: "
E5_QUERY_PROMPT = "query: "
E5_DOCUMENT_PROMPT = "passage: "
NOMIC_QUERY_PROMPT = "search_query: "
NOMIC_DOCUMENT_PROMPT = "search_document: "
MXBAI_QUERY_PROMPT = "Represent this sentence for searching relevant passages: "


@dataclass(frozen=True, slots=True)
class ModelFamily:
    """One row of the catalog. `pattern` must match the whole base name (lower case,
    without the `owner/` prefix and the `:tag` suffix)."""

    name: str
    pattern: str
    native_dimensions: int
    matryoshka: bool
    max_input_tokens: int
    query_prompt: str = ""
    document_prompt: str = ""

    def matches(self, base_name: str) -> bool:
        return re.fullmatch(self.pattern, base_name) is not None


KNOWN_FAMILIES: tuple[ModelFamily, ...] = (
    ModelFamily(
        "embeddinggemma",
        r"embeddinggemma(-\d+m)?",
        768,
        matryoshka=True,
        max_input_tokens=2048,
        query_prompt=GEMMA_QUERY_PROMPT,
        document_prompt=GEMMA_DOCUMENT_PROMPT,
    ),
    ModelFamily("bge-m3", r"bge-m3", 1024, matryoshka=False, max_input_tokens=8192),
    # v1 predates Matryoshka training; v1.5 (Ollama's `nomic-embed-text`) has it.
    ModelFamily(
        "nomic-embed-text-v1",
        r"nomic-embed-text-v1",
        768,
        matryoshka=False,
        max_input_tokens=2048,
        query_prompt=NOMIC_QUERY_PROMPT,
        document_prompt=NOMIC_DOCUMENT_PROMPT,
    ),
    ModelFamily(
        "nomic-embed-text-v1.5",
        r"nomic-embed-text(-v1\.5)?",
        768,
        matryoshka=True,
        max_input_tokens=2048,
        query_prompt=NOMIC_QUERY_PROMPT,
        document_prompt=NOMIC_DOCUMENT_PROMPT,
    ),
    ModelFamily(
        "mxbai-embed-large",
        r"mxbai-embed-large(-v1)?",
        1024,
        matryoshka=True,
        max_input_tokens=512,
        query_prompt=MXBAI_QUERY_PROMPT,
    ),
    ModelFamily("all-minilm", r"all-minilm(-l6-v2|-l12-v2)?", 384, False, 256),
    # e5 (English and multilingual, v1 and v2; not the -instruct variants, whose prompts
    # differ). Not Matryoshka-trained.
    *(
        ModelFamily(
            f"e5-{size}",
            rf"(.*[-_])?(multilingual-)?e5-{size}(-v2)?",
            dims,
            matryoshka=False,
            max_input_tokens=512,
            query_prompt=E5_QUERY_PROMPT,
            document_prompt=E5_DOCUMENT_PROMPT,
        )
        for size, dims in (("small", 384), ("base", 768), ("large", 1024))
    ),
)


def find_family(model_name: str) -> ModelFamily | None:
    base = base_model_name(model_name)
    return next((family for family in KNOWN_FAMILIES if family.matches(base)), None)
