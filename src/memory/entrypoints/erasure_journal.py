"""Where this process journals erasures (docs/adr/0106): beside the backups of the
configured repository (`MEMORY_BACKUP_REPOSITORY`), or of the home's embedded cluster once
that archives. A service on an external database without a configured repository keeps
none: its operator's restore procedure is docs/operations.md's."""

from __future__ import annotations

from memory.application.durability.erasure_journal import ErasureJournal
from memory.entrypoints.database_url import embedded_cluster
from memory.infrastructure.durability.erasure_journal_file import FileErasureJournal, journal_path
from memory.infrastructure.settings import Settings


def erasure_journal(settings: Settings) -> ErasureJournal | None:
    if settings.backup_repository is not None:
        return FileErasureJournal(journal_path(settings.backup_repository))
    if settings.database_url:
        return None
    repository = embedded_cluster(settings).backups.repository
    return FileErasureJournal(journal_path(repository)) if repository.exists() else None
