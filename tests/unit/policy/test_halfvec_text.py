from __future__ import annotations

from memory.infrastructure.policy.view import halfvec_text


def test_vectors_are_written_in_pgvector_text_form_with_seven_significant_digits() -> None:
    assert halfvec_text([0.5, -0.125, 1 / 3, 1e-9]) == "[0.5,-0.125,0.3333333,1e-09]"
