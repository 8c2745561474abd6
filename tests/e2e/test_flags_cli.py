"""`memory flags`: shows and sets a flag's global state (off / on / opt_in) and an org's own
value (on / off / inherit), recorded in the audit log as the CLI operator; a refused value
changes nothing (ADR 0131)."""

from __future__ import annotations

import json

import pytest

from memory.entrypoints.cli import main

SEMANTIC = "digital_worker_semantic_search"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_flags_are_shown_and_set_globally_and_per_org(
    cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = run(capsys, "flags")["flags"]
    assert {f["flag"]: (f["state"], f["default"], f["set"]) for f in shown} == {
        "digital_worker": ("on", True, False),
        SEMANTIC: ("off", False, False),
    }
    (flag,) = run(capsys, "flags", SEMANTIC, "opt_in")["flags"]
    assert (flag["state"], flag["set"]) == ("opt_in", True)

    acme = run(capsys, "flags", SEMANTIC, "on", "--org", "acme")
    assert acme["flags"] == [{"flag": SEMANTIC, "global": "opt_in", "org": "on", "effective": True}]
    assert acme["semantic_search"] is True
    assert run(capsys, "flags", "--org", "globex")["semantic_search"] is False
    inherit = run(capsys, "flags", SEMANTIC, "inherit", "--org", "acme")
    assert (inherit["flags"][0]["org"], inherit["semantic_search"]) == ("inherit", False)

    # A global state is not an org's value and the other way round: refused, nothing set.
    assert main(["flags", SEMANTIC, "inherit"]) == 2
    assert main(["flags", SEMANTIC, "opt_in", "--org", "acme"]) == 2
    assert main(["flags", "dark_mode", "on"]) == 2
    err = capsys.readouterr().err
    assert "a global state is one of off, on, opt_in" in err
    assert "an org's value is one of on, off, inherit" in err
    assert "unknown feature flag 'dark_mode'" in err
    assert run(capsys, "flags", SEMANTIC)["flags"][0]["state"] == "opt_in"
    assert run(capsys, "flags", "--org", "acme")["flags"][1]["org"] == "inherit"
