"""A remote model as the HTTP adapters see it: the spec resolved against the catalog.

Resolution happens once, at start-up, so a spec that cannot work fails before anything is
embedded: an unknown model without `@dims`, a dimension larger than the model makes, or a
shorter one for a model that was not trained to be shortened.

Two rules live here because both adapters need them:
- the identity stored beside every vector is the canonical spec (see ADR 0010):
  `@dims` only when it differs from the model's native size, Ollama's `:latest` dropped;
- `fit` checks every returned vector's dimension. A longer vector is truncated and
  re-normalised only for Matryoshka-trained families (see ADR 0012); anything else that does
  not match is a misconfiguration, never silently repaired.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.application.embedding import ModelMisconfigured
from memory.domain.embedding import EmbeddingVector, ModelIdentity
from memory.infrastructure.embedding.model_catalog import (
    DEFAULT_MAX_INPUT_TOKENS,
    KNOWN_FAMILIES,
    ModelFamily,
    find_family,
)
from memory.infrastructure.embedding.spec import InvalidModelSpec, ModelSpec
from memory.infrastructure.embedding.token_estimate import estimate_tokens

OLLAMA_DEFAULT_TAG = ":latest"


@dataclass(frozen=True, slots=True)
class RemoteModel:
    identity: ModelIdentity
    # The model name as the server knows it.
    name: str
    family: ModelFamily | None
    # Sent as the request's `dimensions` field: only to shorten a Matryoshka model.
    requested_dimensions: int | None

    @classmethod
    def resolve(cls, spec: ModelSpec) -> RemoteModel:
        name = spec.name
        if spec.provider == "ollama" and name.endswith(OLLAMA_DEFAULT_TAG):
            name = name[: -len(OLLAMA_DEFAULT_TAG)]
        family = find_family(name)
        if family is None:
            if spec.dimensions is None:
                known = ", ".join(f.name for f in KNOWN_FAMILIES)
                raise InvalidModelSpec(
                    f"model {spec} is not in the catalog of known models ({known}), so its "
                    f"dimension is unknown: give it as {spec.provider}:{name}@<dims>"
                )
            dims, requested = spec.dimensions, None
        else:
            native = family.native_dimensions
            dims = spec.dimensions or native
            if dims > native:
                raise InvalidModelSpec(
                    f"model {spec}: {family.name} makes {native}-dim vectors, not {dims}"
                )
            if dims < native and not family.matryoshka:
                raise InvalidModelSpec(
                    f"model {spec}: {family.name} is not Matryoshka-trained, so its "
                    f"{native}-dim vectors cannot be shortened to {dims}; "
                    f"use {spec.provider}:{name}"
                )
            requested = dims if dims < native else None
        suffix = "" if family is not None and dims == family.native_dimensions else f"@{dims}"
        identity = ModelIdentity(f"{spec.provider}:{name}{suffix}", dims)
        return cls(identity, name, family, requested)

    @property
    def max_input_tokens(self) -> int:
        return self.family.max_input_tokens if self.family else DEFAULT_MAX_INPUT_TOKENS

    @property
    def query_prompt(self) -> str:
        return self.family.query_prompt if self.family else ""

    @property
    def document_prompt(self) -> str:
        return self.family.document_prompt if self.family else ""

    def count_tokens(self, text: str) -> int:
        """A safe upper estimate for `text` as a document, its prompt included."""
        return estimate_tokens(self.document_prompt + text)

    def fit(self, values: object) -> EmbeddingVector:
        """A vector as the server returned it (decoded JSON), checked against the configured
        dimension and normalised."""
        expected = self.identity.dimensions
        if not isinstance(values, list):
            raise ModelMisconfigured(
                self.identity.id, f"malformed vector: a JSON {type(values).__name__}, not a list"
            )
        try:
            vector = EmbeddingVector.of(values)
        except (TypeError, ValueError) as exc:
            raise ModelMisconfigured(self.identity.id, f"malformed vector: {exc}") from exc
        got = vector.dimensions
        if got > expected and not (self.family and self.family.matryoshka):
            raise ModelMisconfigured(
                self.identity.id,
                f"server returned {got}-dim vectors, expected {expected}; "
                f"{self.name} is not known to be Matryoshka-trained, so they are not "
                f"truncated (fix the @dims in the model spec)",
            )
        if got < expected:
            raise ModelMisconfigured(
                self.identity.id,
                f"server returned {got}-dim vectors, expected {expected} "
                f"(fix the @dims in the model spec, or the model the server runs)",
            )
        try:
            return vector.truncated(expected) if got > expected else vector.normalised()
        except ValueError as exc:  # a zero vector cannot be normalised
            raise ModelMisconfigured(self.identity.id, f"malformed vector: {exc}") from exc
