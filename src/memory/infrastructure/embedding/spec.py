"""Parsing of model specs: `provider:name[@dims]`, the string operators configure and the
identity stored beside every vector."""

from __future__ import annotations

import re
from dataclasses import dataclass

PROVIDERS = ("local", "ollama", "openai", "hash")
_SPEC = re.compile(r"^(?P<provider>[a-z]+):(?P<name>[^@\s]+)(?:@(?P<dims>\d+))?$")


class InvalidModelSpec(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class ModelSpec:
    provider: str
    name: str
    dimensions: int | None = None

    @classmethod
    def parse(cls, text: str) -> ModelSpec:
        match = _SPEC.match(text.strip())
        if not match:
            raise InvalidModelSpec(
                f"model spec {text!r} is not of the form provider:name[@dims] "
                f"(providers: {', '.join(PROVIDERS)})"
            )
        provider, name, dims = match["provider"], match["name"], match["dims"]
        if provider not in PROVIDERS:
            raise InvalidModelSpec(
                f"unknown model provider {provider!r} in {text!r}; known: {', '.join(PROVIDERS)}"
            )
        dimensions = int(dims) if dims else None
        if dimensions is not None and dimensions <= 0:
            raise InvalidModelSpec(f"dimensions must be positive in {text!r}")
        if provider == "hash":
            if dimensions is not None or not name.isdigit() or int(name) <= 0:
                raise InvalidModelSpec(f"hash model spec is hash:<dims>, got {text!r}")
            dimensions = int(name)
        return cls(provider, name, dimensions)

    def __str__(self) -> str:
        if self.provider == "hash":
            return f"hash:{self.name}"
        suffix = f"@{self.dimensions}" if self.dimensions else ""
        return f"{self.provider}:{self.name}{suffix}"
