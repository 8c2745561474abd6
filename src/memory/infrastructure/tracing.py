"""OpenTelemetry tracing (docs/adr/0111): off unless `MEMORY_TRACING=true`; then spans are
exported over OTLP/HTTP as the standard variables say (`OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`, ...), and every
database statement gets a span (psycopg's instrumentation, statement text with its
placeholders, never the values bound to them).

The spans themselves are made where the work is, through the OpenTelemetry API, which does
nothing until `configure` installs a provider: a request (`RequestMetrics`), a model call
(`MeasuredModel`), a sweep batch, a projector step. Their attributes are ids, counts and
names from fixed sets; never chat text, a query, policy content or a secret.
"""

from __future__ import annotations

import logging
import os

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from memory.infrastructure import build_info
from memory.infrastructure.settings import Settings

log = logging.getLogger(__name__)

SERVICE_NAME = "memory"


def configure(settings: Settings, processor: SpanProcessor | None = None) -> TracerProvider | None:
    """Install the tracer provider when tracing is on (None when it is off or
    `OTEL_SDK_DISABLED=true`). `processor`: where spans go; by default a batch processor
    with the OTLP/HTTP exporter the environment configures. Call once per process, before
    the database pool opens, so that every connection's statements are traced."""
    if not settings.tracing or os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return None
    resource = Resource.create(
        {"service.name": SERVICE_NAME, "service.version": build_info.version()}
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(processor or BatchSpanProcessor(_otlp_exporter()))
    trace.set_tracer_provider(provider)
    _trace_statements(provider)
    log.info("tracing on: spans exported over OTLP")
    return provider


def _otlp_exporter() -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def _trace_statements(provider: TracerProvider) -> None:
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    instrumentor = PsycopgInstrumentor()
    if not instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.instrument(tracer_provider=provider, skip_dep_check=True)
