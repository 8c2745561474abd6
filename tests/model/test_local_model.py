"""The embedded default model, for real: cross-lingual retrieval, token counts, refusals."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
from tests.fakes import cosine_similarity

from memory.application.embedding import InputRejected
from memory.infrastructure.embedding.local_e5 import (
    LOCAL_E5_DIMENSIONS,
    LOCAL_E5_MAX_TOKENS,
    LocalE5Model,
)
from memory.infrastructure.embedding.model_catalog import E5_DOCUMENT_PROMPT
from memory.infrastructure.embedding.token_estimate import estimate_tokens

pytestmark = pytest.mark.model

QUERY = "how do I reset my password"
MALAY = "Bagaimana saya boleh menetapkan semula kata laluan saya?"
CHINESE = "我怎么重置我的密码？"  # noqa: RUF001
UNRELATED = [
    "The cafeteria serves lunch from noon until two o'clock.",
    "Quarterly revenue grew by eight percent in Southeast Asia.",
    "Parking permits are renewed every January.",
]

# Text in many scripts and shapes, for checking the remote token estimate against the
# XLM-RoBERTa tokenizer that multilingual-e5 and bge-m3 share.
TOKENIZER_SAMPLES = [
    QUERY,
    MALAY,
    CHINESE,
    "パスワードをリセットするにはどうすればいいですか",
    "비밀번호를 재설정하려면 어떻게 해야 하나요?",
    "Как мне сбросить пароль от учётной записи?",
    "كيف يمكنني إعادة تعيين كلمة المرور الخاصة بي؟",
    "मैं अपना पासवर्ड कैसे रीसेट करूं?",
    "ฉันจะรีเซ็ตรหัสผ่านได้อย่างไร",
    "Ủy ban nhân dân thành phố Hồ Chí Minh đã ban hành quyết định",
    "Ελληνικά: Πώς μπορώ να επαναφέρω τον κωδικό μου;",  # noqa: RUF001
    "https://example.com/api/v1/users?id=12345&token=abcdef0123456789",
    "def f(x): return {'a': [1, 2, 3]} # comment 🎉🎉 ✅",
    "1234567890 3.14159 2024-01-01T00:00:00Z",
    "Donaudampfschifffahrtsgesellschaftskapitänswitwe pneumonoultramicroscopicsilicovolcano",
    "Employees may carry over up to five days of annual leave into the next calendar year, "
    "provided their manager approves the request before December 1.",
]


@pytest.fixture(scope="module")
def model() -> LocalE5Model:
    return LocalE5Model()


def test_a_query_finds_the_same_question_in_other_languages(model: LocalE5Model) -> None:
    query = model.embed_query(QUERY)
    malay, chinese, *unrelated = model.embed_documents([MALAY, CHINESE, *UNRELATED])

    best_unrelated = max(cosine_similarity(query, u) for u in unrelated)
    assert cosine_similarity(query, malay) > best_unrelated
    assert cosine_similarity(query, chinese) > best_unrelated


def test_vectors_are_unit_length_with_384_dims(model: LocalE5Model) -> None:
    vector = model.embed_query(QUERY)

    assert model.identity.id == "local:multilingual-e5-small"
    assert vector.dimensions == LOCAL_E5_DIMENSIONS == model.identity.dimensions == 384
    assert math.isclose(vector.norm(), 1.0, abs_tol=1e-5)
    assert model.status().available


def test_tokens_are_counted_with_the_passage_prefix_and_markers(model: LocalE5Model) -> None:
    short, longer = model.count_tokens("hello"), model.count_tokens("hello " * 50)

    assert 3 < short < 10
    assert longer > short + 40
    assert model.max_input_tokens == LOCAL_E5_MAX_TOKENS == 512


def test_the_remote_estimate_never_undercounts_the_real_tokenizer(model: LocalE5Model) -> None:
    for text in TOKENIZER_SAMPLES:
        exact = model.count_tokens(text)  # includes "passage: " and the two markers
        assert estimate_tokens(E5_DOCUMENT_PROMPT + text) >= exact, text


def test_a_nul_character_is_rejected(model: LocalE5Model) -> None:
    with pytest.raises(InputRejected, match="NUL"):
        model.embed_documents(["fine", "not\x00fine"])
    with pytest.raises(InputRejected, match="NUL"):
        model.embed_query("\x00")


# What libgomp prints of its settings when the engine's library loads: spinning waiters
# (its default) show a spin count of 300000, passive ones 0.
_SPIN_COUNT = "GOMP_SPINCOUNT = '{}'"
_EMBED_ONE_QUERY = (
    "from memory.infrastructure.embedding.local_e5 import LocalE5Model;"
    "LocalE5Model().embed_query('how do I reset my password')"
)


def _openmp_settings(**env: str) -> str:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    done = subprocess.run(
        [sys.executable, "-c", _EMBED_ONE_QUERY],
        env=inherited | {"OMP_DISPLAY_ENV": "verbose"} | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stderr


def test_the_engines_threads_wait_passively_unless_the_operator_says_otherwise() -> None:
    """A spinning OpenMP thread competes with the one doing the work on a busy machine: a
    query then costs ~10 times the CPU (docs/adr/0162). The default is a fresh process's,
    since libgomp reads its settings only when the engine's library first loads."""
    assert _SPIN_COUNT.format(0) in _openmp_settings()
    assert _SPIN_COUNT.format(300000) in _openmp_settings(
        OMP_WAIT_POLICY="active", GOMP_SPINCOUNT="300000"
    )
