"""A model swap's replay: run a model's projection over the whole log until it reaches the
log's head as it was at the start, then stop. Resumable, because the projection records its
position with every row: an interrupted replay continues where it stopped."""

from __future__ import annotations

import logging
import time

from memory.application.embedding import EmbeddingModel
from memory.application.policy.ports import ReembedProgress, ReembedReport
from memory.domain.policy.dimensionality import FixedDimensionality
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog
from memory.infrastructure.policy.indexes import ensure_hnsw_index, has_hnsw_index
from memory.infrastructure.policy.model_admin import PolicyModelAdmin
from memory.infrastructure.policy.projector import PolicyProjector
from memory.infrastructure.postgres.database import Database

logger = logging.getLogger(__name__)


def reembed(
    database: Database,
    model: EmbeddingModel,
    log: EventSourcedPolicyLog,
    *,
    rebuild: bool = False,
    on_progress: ReembedProgress | None = None,
) -> ReembedReport:
    """Bring `model`'s rows up to date with the log. With `rebuild`, its rows and position
    are deleted first and the whole log is replayed (the references come out identical).
    Raises `ProjectionBusy` if the model's projector runs elsewhere, `ProjectorFailed` if
    processing stops (run again to resume). A model without rows yet is indexed after the
    replay (one bulk build), not row by row."""
    FixedDimensionality.check_model(model.identity)
    model_id = model.identity.id
    removed = PolicyModelAdmin(database).reset(model_id) if rebuild else 0
    if rebuild:
        logger.info("policy reembed: rows reset", extra={"model": model_id, "rows": removed})
    with database.connection() as conn:
        index_exists = has_hnsw_index(conn, model.identity.id)
    projector = PolicyProjector(database, model, log, index_first=index_exists)
    projector.start()
    try:
        started_at = projector.started_at
        head = log.head()

        def report(position: int | None) -> None:
            if on_progress is not None:
                on_progress(position, head)

        replay_started = time.perf_counter()
        projector.catch_up(head, report)
        logger.info(
            "policy reembed: replayed",
            extra={
                "model": model_id,
                "started_at": started_at,
                "reached": projector.position(),
                "head": head,
                "texts_embedded": projector.embedded_texts,
                "seconds": round(time.perf_counter() - replay_started, 3),
            },
        )
        if not index_exists:
            # Built once over all rows, under the model's lease: much faster than growing
            # the graph row by row during the replay.
            index_started = time.perf_counter()
            with database.connection() as conn:
                ensure_hnsw_index(conn, model_id)
            logger.info(
                "policy reembed: index built",
                extra={"model": model_id, "seconds": round(time.perf_counter() - index_started, 3)},
            )
        return ReembedReport(
            model=model.identity.id,
            started_at=started_at,
            reached=projector.position(),
            head=head,
            texts_embedded=projector.embedded_texts,
            rows_removed=removed,
        )
    finally:
        projector.stop()
