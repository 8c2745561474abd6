"""Answers on the wire: every JSON answer of a `/v1` route is a `memory.contract` response
model (docs/adr/0087-answers-built-from-the-contract.md), the models the OpenAPI document is
generated from. A field the model lacks cannot be sent (the constructors are checked by mypy
and validate at run time) and a field added to a model is on the wire once a route fills it.
The model is rendered by `memory.entrypoints.presenters.wire.render`, as the CLI's `--json`.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.background import BackgroundTask
from starlette.responses import Response

from memory.contract.responses import Answer
from memory.entrypoints.presenters.wire import render


class AnswerResponse(Response):
    """A response whose body is a contract model."""

    media_type = "application/json"

    def __init__(
        self,
        body: Answer,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        background: BackgroundTask | None = None,
    ) -> None:
        super().__init__(render(body), status_code, headers, background=background)
