"""The Archive page's background import in a real browser, with a real django-q2 worker (issues 19 and 21):
progress as conversations done of total, found again after a reload, Cancel and Resume, and the document
list updated when the import ends, without a reload."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from archive.models import ArchiveDocument, ImportJob
from archive.web.pages import ARCHIVE_PAGE_SIZE
from bench.chatgpt_export_build import write_export_zip
from tests.support.queue_cluster import QueueCluster

pytestmark = pytest.mark.browser


def worker(settings) -> QueueCluster:
    return QueueCluster({"ELION_DATA_DIR": str(settings.DATA_DIR)}).start()


def progress_of(page: Page) -> tuple[float, float]:
    return page.locator("[data-chatgpt-import] [data-import-progress]").evaluate("bar => [bar.value, bar.max]")


@pytest.mark.timeout(180)
def test_the_import_page_follows_a_job_through_a_reload_cancels_resumes_and_lists_what_it_imported(
    live_app, page: Page, tmp_path, settings
):
    first, second = tmp_path / "first.zip", tmp_path / "second.zip"
    total = write_export_zip(first, 1, members=2)["conversations"]
    assert write_export_zip(second, 1, members=1, seed=8)["conversations"] == total

    page.goto(f"{live_app.url}/archive/")
    form = page.locator("[data-chatgpt-import]")
    listed = page.locator('[data-archive-collection="conversations"]')
    expect(listed.locator("h2")).to_have_text("Historical conversations (0)")
    form.locator("#import-file").set_input_files(str(first))
    form.get_by_role("button", name="Import").click()
    # No worker runs yet: the job waits in the queue, and the page says so.
    text = form.locator("[data-import-progress-text]")
    expect(text).to_have_text("Waiting for the import to start…")
    expect(form.get_by_role("button", name="Cancel import")).to_be_visible()

    page.reload()  # the page finds the queued job and follows it again
    expect(text).to_have_text("Waiting for the import to start…")
    expect(form.get_by_role("button", name="Cancel import")).to_be_visible()

    cluster = worker(settings)
    try:
        expect(text).to_have_text(f"Imported {total} of {total} conversations", timeout=60_000)
        expect(form.locator("[data-import-summary]")).to_contain_text(f"Imported {total} conversation(s)")
        assert progress_of(page) == [total, total]
        # The list was rendered again in place: no reload happened since the import started.
        expect(listed.locator("h2")).to_have_text(f"Historical conversations ({total})")
        # The archive's first page of documents (25 a page), with its page links.
        expect(listed.locator("[data-archive-item]")).to_have_count(min(total, ARCHIVE_PAGE_SIZE))
        if total > ARCHIVE_PAGE_SIZE:
            expect(page.locator("[data-archive-pages]")).to_contain_text(f"of {total}")
        expect(form.get_by_role("button", name="Cancel import")).to_be_hidden()
    finally:
        cluster.stop()

    # Cancelled before a worker took it: nothing of it is imported; Resume imports it all.
    form.locator("#import-file").set_input_files(str(second))
    form.get_by_role("button", name="Import").click()
    expect(text).to_have_text("Waiting for the import to start…")
    form.get_by_role("button", name="Cancel import").click()
    summary = form.locator("[data-import-summary]")
    expect(summary).to_contain_text("Cancelled after 0 of ? conversations (0 imported)")
    assert ImportJob.objects.order_by("-created_at").first().state == "cancelled"
    assert ArchiveDocument.objects.count() == total
    cluster = worker(settings)
    try:
        form.get_by_role("button", name="Resume import").click()
        expect(text).to_have_text(f"Imported {total} of {total} conversations", timeout=60_000)
        expect(summary).to_contain_text(f"Imported {total} conversation(s)")
        expect(listed.locator("h2")).to_have_text(f"Historical conversations ({2 * total})")
    finally:
        cluster.stop()
    assert ArchiveDocument.objects.count() == 2 * total
    assert page.js_errors == []
