"""Builds the adapter a model spec names. The only place that maps specs to classes."""

from __future__ import annotations

from memory.application.embedding import EmbeddingModel
from memory.infrastructure.embedding.circuit_breaker import CircuitBreaker
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.embedding.local_e5 import LOCAL_E5_NAME, LocalE5Model
from memory.infrastructure.embedding.measured import MeasuredModel
from memory.infrastructure.embedding.model_server import ModelServer, RetryPolicy
from memory.infrastructure.embedding.ollama import OllamaEmbeddingModel
from memory.infrastructure.embedding.openai_compatible import OpenAICompatibleEmbeddingModel
from memory.infrastructure.embedding.remote_model import RemoteModel
from memory.infrastructure.embedding.spec import InvalidModelSpec, ModelSpec
from memory.infrastructure.settings import Settings


def stored_model_id(spec_text: str) -> str:
    """The identity a spec's vectors are stored under (docs/adr/0010): canonical, as the
    adapter computes it (`ollama:bge-m3:latest` and `ollama:bge-m3@1024` are
    `ollama:bge-m3`), without building an adapter (no model is loaded, no server contacted).
    Text that is no valid spec is taken as a stored id as it is: a model dropped from the
    catalog may still have rows."""
    try:
        spec = ModelSpec.parse(spec_text)
        if spec.provider in ("ollama", "openai"):
            return RemoteModel.resolve(spec).identity.id
    except InvalidModelSpec:
        return spec_text.strip()
    return str(spec)


class ModelRegistry:
    """One adapter per spec for the life of the process, so two contexts configured with the
    same model share one loaded engine. Each is measured (latency, errors, outages)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._models: dict[str, EmbeddingModel] = {}

    def get(self, spec_text: str) -> EmbeddingModel:
        spec = ModelSpec.parse(spec_text)
        key = str(spec)
        if key not in self._models:
            self._models[key] = MeasuredModel(self._build(spec))
        return self._models[key]

    def close(self) -> None:
        for model in self._models.values():
            close = getattr(model, "close", None)
            if callable(close):
                close()
        self._models.clear()

    def _build(self, spec: ModelSpec) -> EmbeddingModel:
        if spec.provider == "hash":
            assert spec.dimensions is not None
            return HashEmbeddingModel(spec.dimensions)
        if spec.provider == "local":
            if spec.name != LOCAL_E5_NAME or spec.dimensions not in (None, 384):
                raise InvalidModelSpec(
                    f"the only local model is local:{LOCAL_E5_NAME} (384 dims), got {spec}"
                )
            return LocalE5Model()
        settings = self._settings
        model = RemoteModel.resolve(spec)
        policy = RetryPolicy(settings.model_retries)
        breaker = CircuitBreaker(
            model.identity.id,
            threshold=settings.model_breaker_threshold,
            cooldown=settings.model_breaker_cooldown,
        )
        if spec.provider == "ollama":
            server = ModelServer(
                model.identity.id,
                settings.ollama_url,
                timeout=settings.model_timeout,
                policy=policy,
                breaker=breaker,
            )
            return OllamaEmbeddingModel(
                model,
                server,
                max_batch=settings.model_max_batch,
                keep_alive=settings.ollama_keep_alive,
            )
        if spec.provider == "openai":
            key = settings.openai_api_key
            server = ModelServer(
                model.identity.id,
                settings.openai_base_url,
                timeout=settings.model_timeout,
                policy=policy,
                breaker=breaker,
                headers={"Authorization": f"Bearer {key}"} if key else None,
            )
            return OpenAICompatibleEmbeddingModel(
                model,
                server,
                max_batch=settings.model_max_batch,
                server_adds_prompts=settings.openai_server_adds_prompts,
            )
        raise InvalidModelSpec(f"provider {spec.provider!r} has no adapter")
