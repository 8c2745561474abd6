"""The last-hour activity trend as the contract shows it: one mapping for the HTTP route,
the in-process API and the client's parsing (docs/adr/0122)."""

from __future__ import annotations

from memory.contract.responses import ActivityBody, ActivityMinuteBody
from memory.domain.history.activity import ActivityTrend


def activity_body(trend: ActivityTrend) -> ActivityBody:
    return ActivityBody(
        org_id=trend.org_id,
        now=trend.now,
        minutes=[
            ActivityMinuteBody(
                minute=m.minute,
                searches=m.searches,
                semantic=m.semantic,
                degraded=m.degraded,
                degraded_share=m.degraded_share,
                windows_embedded=m.windows_embedded,
                lag_age_seconds=m.lag_age_seconds,
            )
            for m in trend.minutes
        ],
        searches=trend.searches,
        degraded_share=trend.degraded_share,
        windows_embedded=trend.windows_embedded,
        lag_age_seconds=trend.lag_age_seconds,
    )
