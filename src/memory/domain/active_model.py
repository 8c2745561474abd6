"""The rule both contexts share for dropping a model's stored vectors: never the model that
is active, since searches would lose what they read (policy: every result; history: the
semantic half) until a rebuild."""

from __future__ import annotations

from memory.domain.errors import InvalidInput


class ActiveModelDrop(InvalidInput):
    """Dropping the active model was asked for (an operator has to switch models first)."""

    def __init__(self, model_id: str, *, context: str, setting: str) -> None:
        super().__init__(
            "model",
            f"{model_id} is the active {context} model ({setting}); "
            "switch to another model before dropping this one",
        )
        self.message = self.reason
        self.model_id = model_id


def refuse_dropping_active(model_id: str, active_id: str, *, context: str, setting: str) -> None:
    """Raise `ActiveModelDrop` when `model_id` (a stored identity) is the active one."""
    if model_id == active_id:
        raise ActiveModelDrop(model_id, context=context, setting=setting)
