"""History results as answer models: what `/v1/orgs/...`, `/v1/sweep`, `/v1/purge` and the
feature-flag routes answer, and what the CLI prints with `--json` where it shows the same."""

from __future__ import annotations

from memory.application.history.erasure import ErasureReport, OrgErasureReport
from memory.application.history.feature_flags import GlobalFlag, OrgFlag
from memory.application.history.ingest import IngestResult
from memory.application.history.org_directory import OrgPage, OrgSummary
from memory.application.history.ports import SweepTotals
from memory.application.history.retention import PurgeReport, Retention
from memory.application.history.search_indexes import (
    OrgSearchIndexes,
    SearchIndexStatus,
    SearchIndexSummary,
)
from memory.application.history.service import OrgSweepStatus
from memory.application.history.sweep import SweepReport
from memory.application.history.sweep_status import PartitionStatus
from memory.contract.responses import (
    ErasureBody,
    FlagSourceBody,
    GlobalFlagBody,
    GlobalFlagsBody,
    HistoryHitBody,
    HistorySearchBody,
    IngestReceiptBody,
    LagBody,
    LateCatchUpBody,
    OrgDirectoryBody,
    OrgErasureBody,
    OrgFlagBody,
    OrgFlagEntryBody,
    OrgFlagsBody,
    OrgRetentionBody,
    OrgSearchIndexesBody,
    OrgSummaryBody,
    OrgSweepSummaryBody,
    PartitionStatusBody,
    PoisonEventBody,
    PoisonWindowBody,
    PositionBody,
    PurgeBody,
    RetentionBodyOut,
    SearchIndexBody,
    SearchIndexSummaryBody,
    StallBody,
    SweepReportBody,
    SweepStatusBody,
    SweepTotalsBody,
    SweepWaitingBody,
    WatermarkBody,
)
from memory.domain.history.feature_flags import FlagSource
from memory.domain.history.position import SweepPosition
from memory.domain.history.search import HistoryHit, HistorySearchResult
from memory.domain.history.search_path import SearchIndexState


def ingest_receipt_body(result: IngestResult) -> IngestReceiptBody:
    return IngestReceiptBody(
        event_ids=result.event_ids, inserted=result.inserted, duplicates=result.duplicates
    )


def search_body(result: HistorySearchResult) -> HistorySearchBody:
    return HistorySearchBody(
        results=[_hit(h) for h in result.hits],
        semantic=result.semantic.value,
        org_known=result.org_known,
        model=result.model,
        semantic_off_by=(
            None if result.semantic_off_by is None else _flag_source(result.semantic_off_by)
        ),
        pending_windows=result.pending_windows,
    )


def org_directory_body(page: OrgPage) -> OrgDirectoryBody:
    return OrgDirectoryBody(orgs=[_org_summary(o) for o in page.orgs], next_cursor=page.next_cursor)


def sweep_report_body(report: SweepReport) -> SweepReportBody:
    return SweepReportBody(
        windows_embedded=report.windows_embedded,
        windows_skipped=report.windows_skipped,
        windows_poisoned=report.windows_poisoned,
        windows_open=report.windows_open,
        events_poisoned=report.events_poisoned,
        partitions=report.partitions,
        partitions_stalled=report.partitions_stalled,
        partitions_busy=report.partitions_busy,
        partitions_interrupted=report.partitions_interrupted,
    )


def sweep_status_body(status: OrgSweepStatus) -> SweepStatusBody:
    return SweepStatusBody(
        org_id=status.org_id,
        model=status.model,
        semantic_search=status.semantic_search,
        totals=_sweep_totals(status.totals),
        waiting=SweepWaitingBody(
            partitions=status.backlog.partitions,
            oldest_age_seconds=status.backlog.oldest_age_seconds,
        ),
        partitions=[_partition_status(s) for s in status.partitions],
        next_cursor=status.next_cursor,
    )


def org_search_indexes_body(found: OrgSearchIndexes) -> OrgSearchIndexesBody:
    return OrgSearchIndexesBody(
        org_id=found.org_id, model=found.model, indexes=[_search_index(i) for i in found.indexes]
    )


def search_index_summary_body(summary: SearchIndexSummary) -> SearchIndexSummaryBody:
    return SearchIndexSummaryBody(
        wanted=summary.count(SearchIndexState.WANTED),
        building=summary.count(SearchIndexState.BUILDING),
        ready=summary.count(SearchIndexState.READY),
        failed=summary.count(SearchIndexState.FAILED),
        dropping=summary.count(SearchIndexState.DROPPING),
        queue=[_search_index(i) for i in summary.queue],
    )


def _search_index(status: SearchIndexStatus) -> SearchIndexBody:
    return SearchIndexBody(
        org_id=status.org_id,
        model=status.model,
        state=status.state.value,
        dimensions=status.dimensions,
        windows_seen=status.windows_seen,
        requested_at=status.requested_at,
        started_at=status.started_at,
        ready_at=status.ready_at,
        phase=status.phase,
        tuples_done=status.tuples_done,
        tuples_total=status.tuples_total,
        progress=None if status.progress is None else round(status.progress, 4),
        failures=status.failures,
        last_error=status.last_error,
        failed_at=status.failed_at,
    )


def global_flags_body(flags: list[GlobalFlag]) -> GlobalFlagsBody:
    return GlobalFlagsBody(flags=[global_flag_body(f) for f in flags])


def global_flag_body(flag: GlobalFlag) -> GlobalFlagBody:
    return GlobalFlagBody(
        flag=flag.flag,
        enabled=flag.enabled,
        default=flag.default,
        set=flag.is_set,
        state=flag.state.value,
    )


def org_flags_body(org_id: str, flags: list[OrgFlag], semantic_search: bool) -> OrgFlagsBody:
    return OrgFlagsBody(
        org_id=org_id, flags=[_org_flag(f) for f in flags], semantic_search=semantic_search
    )


def org_flag_body(org_id: str, flag: OrgFlag) -> OrgFlagBody:
    return OrgFlagBody.model_validate(
        {
            "org_id": org_id,
            "flag": flag.flag,
            "global": flag.global_enabled,
            "org": flag.org_override,
            "effective": flag.effective,
            "global_state": flag.global_state.value,
        }
    )


def retention_body(retention: Retention) -> RetentionBodyOut:
    return RetentionBodyOut(
        org_id=retention.org_id, days=retention.days, default=retention.is_default
    )


def erasure_body(report: ErasureReport) -> ErasureBody:
    return ErasureBody(events_deleted=report.events_deleted, windows_deleted=report.windows_deleted)


def org_erasure_body(report: OrgErasureReport) -> OrgErasureBody:
    return OrgErasureBody(
        org_id=report.org_id,
        events_deleted=report.events_deleted,
        windows_deleted=report.windows_deleted,
        partitions_deleted=report.partitions_deleted,
        watermarks_closed=report.watermarks_closed,
        flags_deleted=report.flags_deleted,
        retention_deleted=report.retention_deleted,
    )


def purge_body(report: PurgeReport) -> PurgeBody:
    return PurgeBody(
        orgs=report.orgs,
        events_deleted=report.events_deleted,
        embeddings_deleted=report.embeddings_deleted,
    )


def _position(position: SweepPosition | None) -> PositionBody | None:
    if position is None:
        return None
    return PositionBody(occurred_at=position.occurred_at, event_id=position.event_id)


def _flag_source(source: FlagSource) -> FlagSourceBody:
    return FlagSourceBody(flag=source.flag, layer=source.layer, default=source.default)


def _hit(hit: HistoryHit) -> HistoryHitBody:
    return HistoryHitBody(
        event_id=hit.event_id,
        provider=hit.provider,
        channel_id=hit.channel_id,
        sender=hit.sender,
        text=hit.text,
        occurred_at=hit.occurred_at,
        matched_by=hit.matched_by.value,
        similarity=None if hit.similarity is None else round(hit.similarity, 6),
        relevance=None if hit.relevance is None else round(hit.relevance, 4),
        window_id=hit.window_id,
    )


def _sweep_totals(totals: SweepTotals) -> SweepTotalsBody:
    return SweepTotalsBody(
        partitions=totals.partitions,
        messages=totals.messages,
        partitions_swept=totals.partitions_swept,
        windows_embedded=totals.windows_embedded,
        open_windows=totals.open_windows,
        poison_windows=totals.poison_windows,
        poison_events=totals.poison_events,
        partitions_stalled=totals.partitions_stalled,
        last_swept_at=totals.last_swept_at,
        last_embedded_at=totals.last_embedded_at,
    )


def _partition_status(status: PartitionStatus) -> PartitionStatusBody:
    mark = status.mark
    late = None
    if mark.late is not None:
        late = LateCatchUpBody(
            horizon_seq=mark.late.horizon_seq, cursor=_position(mark.late.cursor)
        )
    return PartitionStatusBody(
        provider=status.partition.provider,
        channel_id=status.partition.channel_id,
        model=status.model,
        watermark=WatermarkBody(
            position=_position(mark.position), seen_seq=mark.seen_seq, late_catch_up=late
        ),
        lag=LagBody(
            events=status.lag_events,
            oldest_closed_window_age_seconds=status.oldest_closed_window_age_seconds,
        ),
        open_windows=status.open_windows,
        windows_embedded=status.windows_embedded,
        windows_skipped=status.windows_skipped,
        poison_windows=[
            PoisonWindowBody(
                window_id=p.window_id,
                first=_position(p.first),
                last=_position(p.last),
                message_count=p.message_count,
                reason=p.reason,
                recorded_at=p.recorded_at,
            )
            for p in status.poison_windows
        ],
        poison_events=[
            PoisonEventBody(
                event_id=p.event_id,
                occurred_at=p.occurred_at,
                reason=p.reason,
                recorded_at=p.recorded_at,
            )
            for p in status.poison_events
        ],
        stalled=status.stalled,
        last_stall=(
            StallBody(reason=status.last_stall_reason, at=status.last_stall_at)
            if status.last_stall_reason is not None
            else None
        ),
        last_advanced_at=status.last_advanced_at,
    )


def _org_summary(org: OrgSummary) -> OrgSummaryBody:
    return OrgSummaryBody(
        org_id=org.org_id,
        semantic_search=org.semantic_search,
        semantic_search_by=_flag_source(org.semantic_search_by),
        retention=OrgRetentionBody(days=org.retention_days, default=org.retention_default),
        partitions=org.partitions,
        messages=org.messages,
        sweep=OrgSweepSummaryBody(
            open_windows=org.open_windows,
            poison_windows=org.poison_windows,
            poison_events=org.poison_events,
            max_lag_seconds=(
                None if org.max_lag_seconds is None else round(org.max_lag_seconds, 3)
            ),
            last_embedded_at=org.last_embedded_at,
            last_swept_at=org.last_swept_at,
        ),
    )


def _org_flag(flag: OrgFlag) -> OrgFlagEntryBody:
    # `global` is a Python keyword: the field is `global_`, on the wire by its alias.
    return OrgFlagEntryBody.model_validate(
        {
            "flag": flag.flag,
            "global": flag.global_enabled,
            "org": flag.org_override,
            "effective": flag.effective,
            "global_state": flag.global_state.value,
        }
    )
