"""The export importers by source: the one table the import views (pages and API) and the background jobs
read. Another importer joins by adding its row (and, when its answer says more than the counts, its
summary type)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from archive.services.import_runs import ImportReader, ImportSummary
from archive.services.importers.chatgpt import store as chatgpt
from archive.services.importers.claude import store as claude
from elion.base.errors import InvalidInput


@dataclass(frozen=True)
class ExportImporter:
    """One export importer: its synchronous import (`run(uploads=, collection=, assistant_name=)`), its
    reader for `import_runs` (called with the same options), what is said when no file was attached, and
    the summary its answer is."""

    run: Callable[..., ImportSummary]
    reader: Callable[..., ImportReader]
    missing_file: str
    summary_type: type[ImportSummary] = ImportSummary


IMPORTERS: dict[str, ExportImporter] = {
    "chatgpt": ExportImporter(
        run=chatgpt.archive_chatgpt_import, reader=chatgpt.chatgpt_reader, missing_file=chatgpt.CHATGPT_MISSING_FILE
    ),
    "claude": ExportImporter(
        run=claude.archive_claude_import, reader=claude.claude_reader, missing_file=claude.CLAUDE_MISSING_FILE,
        summary_type=claude.ClaudeImportSummary,
    ),
}


def importer_for(source: str) -> ExportImporter:
    """The importer of `source`; 400 `unknown_import_kind` for a source no importer reads."""
    if source not in IMPORTERS:
        raise InvalidInput(f"kind must be one of {', '.join(IMPORTERS)}.", code="unknown_import_kind")
    return IMPORTERS[source]
