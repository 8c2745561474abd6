"""Dropping a model that is no longer active: its rows, and its watermarks' progress."""

from __future__ import annotations

from dataclasses import dataclass

from memory.application.history.ports import (
    ChatEventLog,
    OrgDirectoryStore,
    SweepSchedule,
    WatermarkRepository,
    WindowEmbeddings,
)
from memory.domain.active_model import refuse_dropping_active


@dataclass(frozen=True, slots=True)
class DropReport:
    model: str
    rows_deleted: int
    watermarks_reset: int


class DropModel:
    def __init__(
        self,
        *,
        events: ChatEventLog,
        windows: WindowEmbeddings,
        watermarks: WatermarkRepository,
        directory: OrgDirectoryStore,
        schedule: SweepSchedule,
        active_model: str,
    ) -> None:
        self._events = events
        self._windows = windows
        self._watermarks = watermarks
        self._directory = directory
        self._schedule = schedule
        self._active = active_model

    def __call__(self, model: str) -> DropReport:
        """Refuses the active model (search would lose its semantic part until a rebuild).
        Watermarks are event-sourced, so they are reset rather than deleted: if the model
        is ever configured again, it rebuilds from empty."""
        refuse_dropping_active(
            model, self._active, context="history", setting="MEMORY_HISTORY_MODEL"
        )
        rows = self._windows.drop_model(model)
        reset = 0
        for partition in self._events.partitions():
            watermark = self._watermarks.find(partition, model)
            if watermark is None or watermark.mark.position is None:
                continue
            watermark.reset()
            self._watermarks.store(watermark)
            reset += 1
        self._directory.forget_model(model)
        # If the model is configured again, registering it makes every partition due.
        self._schedule.forget(model)
        return DropReport(model, rows, reset)
