"""The identifier a policy administrator gives a policy."""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.domain.errors import InvalidInput

POLICY_ID_MAX_LENGTH = 128
# Letters, digits and `.`, `_`, `:`, `-`, starting with a letter or digit: safe in a URL path
# segment without escaping, and unambiguous in logs.
POLICY_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")


@dataclass(frozen=True, slots=True)
class PolicyId:
    value: str

    @classmethod
    def parse(cls, text: str, *, field: str = "policy_id") -> PolicyId:
        if not text:
            raise InvalidInput(field, "must not be empty")
        if len(text) > POLICY_ID_MAX_LENGTH:
            raise InvalidInput(
                field, f"must be at most {POLICY_ID_MAX_LENGTH} characters, got {len(text)}"
            )
        if not POLICY_ID_PATTERN.fullmatch(text):
            raise InvalidInput(
                field,
                "must start with a letter or digit and contain only letters, digits, "
                "'.', '_', ':' and '-'",
            )
        return cls(text)

    def __str__(self) -> str:
        return self.value
