"""The text of a policy: the source of truth every embedding is derived from."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from memory.domain.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class PolicyContent:
    """Non-blank policy text within the configured size limit. Stored exactly as given."""

    text: str

    @classmethod
    def parse(cls, text: str, *, max_chars: int, field: str = "content") -> PolicyContent:
        if not text.strip():
            raise InvalidInput(field, "must not be empty or blank")
        if len(text) > max_chars:
            raise InvalidInput(field, f"must be at most {max_chars} characters, got {len(text)}")
        if "\x00" in text:
            raise InvalidInput(field, "must not contain NUL characters")
        return cls(text)

    @property
    def sha256(self) -> str:
        return content_sha256(self.text)


def content_sha256(text: str) -> str:
    """Hex SHA-256 of the UTF-8 text: how versions say whether their content changed."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
