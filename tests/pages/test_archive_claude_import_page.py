"""The Archive page's Claude.ai import in a real browser, run as a background import by a real django-q2
worker: the same progress bar as the ChatGPT form (found again after a reload, Cancel, Resume), problems
listed, a project's instructions offered for Settings, and the export's memories offered and added only through the memory import preview, after the
owner confirms."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from archive.models import ArchiveDocument, ImportJob
from elion.base.assistant_settings import assistant_settings_get
from memories.models import Memory
from tests.archive import claude_export as export
from tests.archive.conftest import make_zip
from tests.support.queue_cluster import QueueCluster

pytestmark = pytest.mark.browser


@pytest.mark.timeout(180)
def test_claude_import_runs_in_the_background_lists_problems_and_offers_memories_for_the_owner_to_confirm(
    live_app, page: Page, tmp_path, settings
):
    archive = tmp_path / "claude-export.zip"
    archive.write_bytes(make_zip(export.project_members()))

    page.goto(f"{live_app.url}/archive/")
    form = page.locator("[data-claude-import]")
    form.locator("#claude-import-file").set_input_files(str(archive))
    form.get_by_role("button", name="Import").click()
    # No worker runs yet: the job waits in the queue; a reload follows it again; Cancel stops it.
    text = form.locator("[data-import-progress-text]")
    expect(text).to_have_text("Waiting for the import to start…")
    page.reload()
    expect(text).to_have_text("Waiting for the import to start…")
    form.get_by_role("button", name="Cancel import").click()
    summary = form.locator("[data-import-summary]")
    expect(summary).to_contain_text("Cancelled after 0 of ? conversations and projects (0 imported)")
    assert ImportJob.objects.get().kind == "claude" and not ArchiveDocument.objects.exists()

    cluster = QueueCluster({"ELION_DATA_DIR": str(settings.DATA_DIR)}).start()
    try:
        form.get_by_role("button", name="Resume import").click()
        expect(text).to_have_text("Imported 9 of 9 conversations and projects", timeout=60_000)
        expect(summary).to_have_text(
            "Imported 2 conversation(s) with 7 message(s), and 1 project(s); 0 already in the archive, 5 skipped."
        )
        assert form.locator("[data-import-progress]").evaluate("bar => [bar.value, bar.max]") == [9, 9]
        problems = form.locator("[data-import-problems] li")
        expect(problems).to_have_count(5)
        expect(problems.nth(0)).to_have_text("#1 New chat: nothing was said in it (no text from either side)")
        expect(problems.nth(3)).to_have_text("#7 Broken project: its docs are not a list")
        assert ArchiveDocument.objects.filter(source="claude").count() == 3
        expect(page.locator('[data-archive-collection="conversations"] h2')).to_have_text(
            "Historical conversations (3)"
        )

        # The project's instructions, offered for Settings; saved only when the owner says so.
        instructions = page.locator("[data-instructions-suggestion]")
        expect(instructions.locator("textarea")).to_have_value(export.GARDEN_TEMPLATE)
        assert assistant_settings_get().custom_instructions == ""
        instructions.get_by_role("button", name="Save as custom instructions").click()
        expect(instructions.locator("[data-suggestion-status]")).to_have_text("Saved as Settings → Custom instructions.")
        assert assistant_settings_get().custom_instructions == export.GARDEN_TEMPLATE

        offer = page.locator("[data-memory-suggestions]")
        expect(offer).to_be_visible()
        expect(offer.locator("[data-memory-suggestion-list] li")).to_have_count(4)
        expect(offer.locator("[data-memory-suggestion-list] li").nth(0)).to_have_text(export.SUGGESTIONS[0]["text"])
        assert not Memory.objects.exists()  # offered, not saved

        offer.get_by_role("button", name="Review in memory import").click()
        expect(page.locator("[data-import-preview] tbody tr")).to_have_count(4)
        expect(page.locator("[data-memory-reach]")).to_contain_text("new threads only")
        assert not Memory.objects.exists()  # the preview saves nothing either
        page.get_by_role("button", name="Import 4 memories").click()
        expect(page).to_have_url(f"{live_app.url}/memories/")
        assert sorted(Memory.objects.values_list("text", "category")) == sorted(
            (s["text"], s["category"]) for s in export.SUGGESTIONS
        )

        # Imported again: every conversation a duplicate, and no memory offered twice.
        page.goto(f"{live_app.url}/archive/")
        form.locator("#claude-import-file").set_input_files(str(archive))
        form.get_by_role("button", name="Import").click()
        expect(summary).to_contain_text("3 already in the archive", timeout=60_000)
        expect(offer).to_be_hidden()
    finally:
        cluster.stop()
    assert page.js_errors == []
