"""`memory demo` with the bundled multilingual model: the English query finds the Malay
message about the unpaid invoice, and the Malay question finds the English password policy."""

from __future__ import annotations

import json

import pytest

from memory.entrypoints.cli import main

pytestmark = pytest.mark.model


def test_demo_shows_cross_lingual_hits(
    cli_env: str, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    for name in ("MEMORY_HISTORY_MODEL", "MEMORY_POLICY_MODEL"):
        monkeypatch.delenv(name)  # the default: local e5
    assert main(["demo", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    invoice, rice, policies = document["searches"]
    top = invoice["results"][0]
    assert top["matched_by"] == "semantic" and top["lang"] == "ms" and top["cross_lingual"]
    assert "invois" in top["text"]
    assert any("beras" in r["text"] or "大米" in r["text"] for r in rice["results"])
    assert policies["results"][0]["policy_id"] == "pw-rotation"
    assert policies["results"][0]["cross_lingual"]
    assert document["cross_lingual_hits"] >= 2
