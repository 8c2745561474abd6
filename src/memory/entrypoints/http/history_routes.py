"""HTTP API of the history context: ingest, search, the sweep, feature flags, retention.

Handlers parse and validate at the edge (422 naming the field), call `HistoryService` in a
worker thread (it does database and model I/O), and shape the JSON answer.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memory.application.access.service import actor_of
from memory.application.history.feature_flags import GlobalFlag, OrgFlag
from memory.application.history.org_directory import OrgSummary
from memory.application.history.ports import SweepTotals
from memory.application.history.retention import Retention
from memory.application.history.service import HistoryService
from memory.application.history.sweep_status import PartitionStatus
from memory.contract.history_requests import (
    ChatEventBody,
    EraseBody,
    FlagBody,
    FlagPath,
    IngestBody,
    OrgFlagPath,
    OrgListingParams,
    OrgPath,
    RetentionBody,
    SearchParams,
    SweepBody,
    SweepStatusParams,
)
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
    OrgSummaryBody,
    OrgSweepSummaryBody,
    PartitionStatusBody,
    PoisonEventBody,
    PoisonWindowBody,
    PositionBody,
    PurgeBody,
    RetentionBodyOut,
    StallBody,
    SweepReportBody,
    SweepStatusBody,
    SweepTotalsBody,
    SweepWaitingBody,
    WatermarkBody,
)
from memory.domain.access.scopes import Scope
from memory.domain.audit.admin_action import Actor
from memory.domain.history.feature_flags import FlagSource
from memory.domain.history.position import SweepPosition
from memory.domain.history.search import (
    HistoryHit,
    HistoryQuery,
    HistorySearchResult,
)
from memory.entrypoints.http.access import Access, AccessTable, api_key, visible_orgs
from memory.entrypoints.http.answer import AnswerResponse
from memory.entrypoints.http.database_stall import watched
from memory.entrypoints.http.parsing import (
    RequestChecks,
    parse_body,
    parse_query,
    validate,
    well_typed_items,
)

ORG = "/v1/orgs/{org_id}"

# Who may call what (docs/security.md): reads and ingest need the history scope for the org
# in the path; changing an org's flags or retention needs admin for that org; what acts on
# every org (global flags, sweeps, purges) needs an admin key for every org.
ACCESS: AccessTable = {
    ("POST", f"{ORG}/chat-events"): Access.org(Scope.HISTORY_WRITE),
    # Erasure removes data for good: the org's admins only.
    ("DELETE", f"{ORG}/chat-events"): Access.org(Scope.ADMIN),
    ("DELETE", ORG): Access.org(Scope.ADMIN),
    ("GET", f"{ORG}/history/search"): Access.org(Scope.HISTORY_READ),
    ("POST", "/v1/sweep"): Access.every_org(Scope.ADMIN),
    ("GET", f"{ORG}/sweep"): Access.org(Scope.HISTORY_READ),
    ("GET", "/v1/feature-flags"): Access.any_org(Scope.HISTORY_READ),
    ("GET", "/v1/feature-flags/{flag}"): Access.any_org(Scope.HISTORY_READ),
    ("PUT", "/v1/feature-flags/{flag}"): Access.every_org(Scope.ADMIN),
    ("GET", f"{ORG}/feature-flags"): Access.org(Scope.HISTORY_READ),
    ("GET", f"{ORG}/feature-flags/{{flag}}"): Access.org(Scope.HISTORY_READ),
    ("PUT", f"{ORG}/feature-flags/{{flag}}"): Access.org(Scope.ADMIN),
    ("DELETE", f"{ORG}/feature-flags/{{flag}}"): Access.org(Scope.ADMIN),
    ("GET", f"{ORG}/retention"): Access.org(Scope.HISTORY_READ),
    ("PUT", f"{ORG}/retention"): Access.org(Scope.ADMIN),
    ("POST", "/v1/purge"): Access.every_org(Scope.ADMIN),
    # The directory: an every-org key sees every org, an org's key that org only.
    ("GET", "/v1/orgs"): Access.own_orgs(Scope.HISTORY_READ),
}


def history_routes(service: HistoryService) -> list[BaseRoute]:
    async def ingest(request: Request) -> Response:
        checks = RequestChecks()
        org = checks.path(request, OrgPath)
        body = await checks.body(request, IngestBody)
        await checks.rules(
            lambda: service.check_ingest(
                {
                    index: event.to_domain()
                    for index, event in well_typed_items(
                        ChatEventBody, checks.raw.get("events")
                    ).items()
                }
            )
        )
        checks.raise_any()
        assert org is not None and body is not None
        org_id = org.org_id
        events = [e.to_domain() for e in body.events]
        result = await watched(lambda: service.ingest(org_id, events))
        return AnswerResponse(
            IngestReceiptBody(
                event_ids=result.event_ids, inserted=result.inserted, duplicates=result.duplicates
            ),
            201,
        )

    async def search(request: Request) -> Response:
        checks = RequestChecks()
        org = checks.path(request, OrgPath)
        params = checks.query(request, SearchParams)
        await checks.rules(
            lambda: service.check_search(
                since=checks.valid.get("since"), until=checks.valid.get("until")
            )
        )
        checks.raise_any()
        assert org is not None and params is not None
        org_id = org.org_id
        query = HistoryQuery(
            text=params.q,
            limit=params.limit,
            provider=params.provider,
            channel_id=params.channel_id,
            since=params.since,
            until=params.until,
            min_relevance=params.min_relevance,
        )
        result = await watched(lambda: service.search(org_id, query))
        return AnswerResponse(_search_body(result))

    async def list_orgs(request: Request) -> Response:
        params = parse_query(request, OrgListingParams)
        visible = visible_orgs(request.scope)
        page = await watched(
            lambda: service.orgs(
                limit=params.limit, prefix=params.prefix, cursor=params.cursor, visible=visible
            )
        )
        return AnswerResponse(
            OrgDirectoryBody(
                orgs=[_org_summary(o) for o in page.orgs], next_cursor=page.next_cursor
            )
        )

    async def sweep(request: Request) -> Response:
        body = await parse_body(request, SweepBody, when_empty=SweepBody())
        actor = _actor(request)
        report = await watched(
            lambda: service.sweep(body.org_id, trigger="api", wait_for_locks=True, actor=actor)
        )
        return AnswerResponse(
            SweepReportBody(
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
        )

    async def sweep_status(request: Request) -> Response:
        checks = RequestChecks()
        org = checks.path(request, OrgPath)
        params = checks.query(request, SweepStatusParams)
        checks.raise_any()
        assert org is not None and params is not None
        org_id = org.org_id
        status = await watched(
            lambda: service.sweep_status(org_id, limit=params.limit, cursor=params.cursor)
        )
        return AnswerResponse(
            SweepStatusBody(
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
        )

    async def list_global_flags(request: Request) -> Response:
        flags = await watched(service.global_flags)
        return AnswerResponse(GlobalFlagsBody(flags=[_global_flag(f) for f in flags]))

    async def global_flag(request: Request) -> Response:
        flag = _flag(request)
        if request.method == "PUT":
            body = await parse_body(request, FlagBody)
            found = await watched(
                lambda: service.set_global_flag(flag, body.enabled, actor=_actor(request))
            )
        else:
            found = await watched(lambda: service.global_flag(flag))
        return AnswerResponse(_global_flag(found))

    async def list_org_flags(request: Request) -> Response:
        org_id = _org(request)
        flags = await watched(lambda: service.org_flags(org_id))
        semantic = await watched(lambda: service.semantic_search(org_id))
        return AnswerResponse(
            OrgFlagsBody(
                org_id=org_id, flags=[_org_flag(f) for f in flags], semantic_search=semantic
            )
        )

    async def org_flag(request: Request) -> Response:
        if request.method == "PUT":
            checks = RequestChecks()
            path = checks.path(request, OrgFlagPath)
            body = await checks.body(request, FlagBody)
            checks.raise_any()
            assert path is not None and body is not None
            org_id, flag = path.org_id, path.flag
            found = await watched(
                lambda: service.set_org_flag(org_id, flag, body.enabled, actor=_actor(request))
            )
        elif request.method == "DELETE":
            org_id, flag = _org(request), _flag(request)
            found = await watched(
                lambda: service.set_org_flag(org_id, flag, None, actor=_actor(request))
            )
        else:
            org_id, flag = _org(request), _flag(request)
            found = await watched(lambda: service.org_flag(org_id, flag))
        return AnswerResponse(_org_flag_of(org_id, found))

    async def retention(request: Request) -> Response:
        if request.method == "PUT":
            checks = RequestChecks()
            org = checks.path(request, OrgPath)
            body = await checks.body(request, RetentionBody)
            checks.raise_any()
            assert org is not None and body is not None
            org_id = org.org_id
            found = await watched(
                lambda: service.set_retention(org_id, body.days, actor=_actor(request))
            )
        else:
            org_id = _org(request)
            found = await watched(lambda: service.retention(org_id))
        return AnswerResponse(_retention(found))

    async def erase_events(request: Request) -> Response:
        checks = RequestChecks()
        org = checks.path(request, OrgPath)
        body = await checks.body(request, EraseBody)
        # No rule check after a type error: "event_ids or sender" cannot tell a mistyped
        # field from an absent one (docs/adr/0088).
        checks.raise_any()
        assert org is not None and body is not None
        org_id = org.org_id
        actor = _actor(request)
        report = await watched(
            lambda: service.erase_events(
                org_id, event_ids=body.event_ids, sender=body.sender, actor=actor
            )
        )
        return AnswerResponse(
            ErasureBody(
                events_deleted=report.events_deleted, windows_deleted=report.windows_deleted
            )
        )

    async def erase_org(request: Request) -> Response:
        org_id = _org(request)
        actor = _actor(request)
        report = await watched(lambda: service.erase_org(org_id, actor=actor))
        return AnswerResponse(
            OrgErasureBody(
                org_id=report.org_id,
                events_deleted=report.events_deleted,
                windows_deleted=report.windows_deleted,
                partitions_deleted=report.partitions_deleted,
                watermarks_closed=report.watermarks_closed,
                flags_deleted=report.flags_deleted,
                retention_deleted=report.retention_deleted,
            )
        )

    async def purge(request: Request) -> Response:
        body = await parse_body(request, SweepBody, when_empty=SweepBody())
        actor = _actor(request)
        report = await watched(lambda: service.purge(body.org_id, actor=actor))
        return AnswerResponse(
            PurgeBody(
                orgs=report.orgs,
                events_deleted=report.events_deleted,
                embeddings_deleted=report.embeddings_deleted,
            )
        )

    org = ORG
    return [
        Route("/v1/orgs", list_orgs, methods=["GET"]),
        Route(f"{org}/chat-events", ingest, methods=["POST"]),
        Route(f"{org}/chat-events", erase_events, methods=["DELETE"]),
        Route(org, erase_org, methods=["DELETE"]),
        Route(f"{org}/history/search", search, methods=["GET"]),
        Route("/v1/sweep", sweep, methods=["POST"]),
        Route(f"{org}/sweep", sweep_status, methods=["GET"]),
        Route("/v1/feature-flags", list_global_flags, methods=["GET"]),
        Route("/v1/feature-flags/{flag}", global_flag, methods=["GET", "PUT"]),
        Route(f"{org}/feature-flags", list_org_flags, methods=["GET"]),
        Route(f"{org}/feature-flags/{{flag}}", org_flag, methods=["GET", "PUT", "DELETE"]),
        Route(f"{org}/retention", retention, methods=["GET", "PUT"]),
        Route("/v1/purge", purge, methods=["POST"]),
    ]


def _actor(request: Request) -> Actor:
    """Who makes an administrative change: the request's key (audit log)."""
    return actor_of(api_key(request.scope))


def _org(request: Request) -> str:
    return validate(OrgPath, {"org_id": request.path_params["org_id"]}).org_id


def _flag(request: Request) -> str:
    return validate(FlagPath, {"flag": request.path_params["flag"]}).flag


def _position(position: SweepPosition | None) -> PositionBody | None:
    if position is None:
        return None
    return PositionBody(occurred_at=position.occurred_at, event_id=position.event_id)


def _flag_source(source: FlagSource) -> FlagSourceBody:
    return FlagSourceBody(flag=source.flag, layer=source.layer, default=source.default)


def _search_body(result: HistorySearchResult) -> HistorySearchBody:
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


def _global_flag(flag: GlobalFlag) -> GlobalFlagBody:
    return GlobalFlagBody(
        flag=flag.flag, enabled=flag.enabled, default=flag.default, set=flag.is_set
    )


def _org_flag(flag: OrgFlag) -> OrgFlagEntryBody:
    # `global` is a Python keyword: the field is `global_`, on the wire by its alias.
    return OrgFlagEntryBody.model_validate(
        {
            "flag": flag.flag,
            "global": flag.global_enabled,
            "org": flag.org_override,
            "effective": flag.effective,
        }
    )


def _org_flag_of(org_id: str, flag: OrgFlag) -> OrgFlagBody:
    return OrgFlagBody.model_validate(
        {
            "org_id": org_id,
            "flag": flag.flag,
            "global": flag.global_enabled,
            "org": flag.org_override,
            "effective": flag.effective,
        }
    )


def _retention(retention: Retention) -> RetentionBodyOut:
    return RetentionBodyOut(
        org_id=retention.org_id, days=retention.days, default=retention.is_default
    )
