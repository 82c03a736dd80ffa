"""An export is read as a stream: memory stays bounded by one conversation, not by the file (issue 21).

tracemalloc counts every Python allocation, so a reader that held the file, its
parsed list, or every conversation it read would show a peak of the file's size
or more. bench/import.py measures the resident memory of whole background imports.
"""

from __future__ import annotations

import tracemalloc

import pytest

from archive.models import ArchiveDocument
from archive.services import import_jobs
from archive.services.import_runs import ImportFile, import_count
from archive.services.importers import export_steps
from archive.services.importers.chatgpt import store as chatgpt_importer
from archive.services.importers.claude import store as claude_importer
from bench.chatgpt_export_build import write_export_zip
from bench.claude_export_build import write_export_zip as write_claude_export_zip

pytestmark = [pytest.mark.django_db, pytest.mark.slow]  # exports of tens of megabytes


def traced_peak(work) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = work()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.timeout(300)
def test_reading_a_50_mb_split_export_holds_one_conversation_at_a_time(tmp_path):
    path = tmp_path / "export.zip"
    written = write_export_zip(path, 50, members=4)
    reader = chatgpt_importer.chatgpt_reader(collection="conversations")

    def read():
        with path.open("rb") as stream:
            return import_count(reader, [ImportFile("export.zip", stream)], export_steps.custom_instructions_suggestion)

    (total, summary), peak = traced_peak(read)
    assert total == written["conversations"] and summary.skipped == 0
    assert written["json_bytes"] > 50 * 1024**2
    # One conversation is about 16 KB of JSON; the whole export 50 MB.
    assert peak < 8 * 1024**2, f"peak {peak / 1024**2:.1f} MB"


@pytest.mark.timeout(300)
def test_a_background_job_stores_an_export_with_memory_bounded_by_a_conversation(tmp_path, settings, upload):
    settings.ELION_IMPORT_DIR = tmp_path / "imports"
    path = tmp_path / "export.zip"
    written = write_export_zip(path, 6, members=2)
    job = import_jobs.import_job_create(
        kind="chatgpt", uploads=[upload("export.zip", path.read_bytes())], options={"collection": "conversations"}
    )
    state, peak = traced_peak(lambda: import_jobs.import_job_run(str(job.pk)))
    assert state == "done"
    assert ArchiveDocument.objects.count() == written["conversations"]
    assert peak < 4 * 1024**2, f"peak {peak / 1024**2:.1f} MB for {written['json_bytes'] / 1024**2:.1f} MB of JSON"


@pytest.mark.timeout(300)
def test_a_claude_import_stores_each_conversation_before_reading_the_next_with_bounded_memory(tmp_path, upload):
    """The whole import at once (both passes, every store): a reader that gathered the file's conversations
    in a list before storing them would peak at about the export's text, several times the bound."""
    path = tmp_path / "claude-export.zip"
    written = write_claude_export_zip(path, 12)
    export = upload("claude-export.zip", path.read_bytes())
    summary, peak = traced_peak(lambda: claude_importer.archive_claude_import(uploads=[export]))
    assert summary.conversations == ArchiveDocument.objects.count() == written["conversations"]
    assert written["json_bytes"] > 12 * 1024**2
    assert peak < 4 * 1024**2, f"peak {peak / 1024**2:.1f} MB for {written['json_bytes'] / 1024**2:.1f} MB of JSON"
