"""Restore a backup from Settings in the browser (issue 34), desktop and phone: an instance that holds data refuses
the backup; in a fresh instance (empty database, empty attachment store) the owner uploads the zip, reads the dry
run's counts, confirms, and finds the restored conversation in the sidebar."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from conversations.models import Conversation, Message
from operations.backup.writing import backup_chunks
from tests.support.chat_page import SIZES
from tests.support.factories import thread
from transcript.attachments import store


@pytest.fixture
def empty_attachment_store(tmp_path):
    """The served instance's attachment store, emptied for the test and given back afterwards: earlier tests of
    the session may have left blobs there, and a restore refuses a data dir that holds any."""
    root, aside = store.root(), tmp_path / "attachments-aside"
    if root.exists():
        shutil.move(root, aside)
    yield root
    shutil.rmtree(root, ignore_errors=True)
    if aside.exists():
        shutil.move(aside, root)


def upload_backup(page: Page, url: str, backup: Path) -> None:
    page.goto(f"{url}/settings/")
    page.locator("[data-restore-link]").click()
    page.set_input_files("#restore-file", str(backup))
    page.get_by_role("button", name="Check this backup").click()


@pytest.mark.browser
@pytest.mark.parametrize("size", SIZES)
def test_restore_from_settings_into_a_fresh_instance(live_app, page: Page, size, empty_attachment_store, tmp_path):
    thread(("user", "the ferry at dawn"), ("assistant", "the keeper waves"), title="Harbour crossing")
    backup = tmp_path / "backup.zip"
    backup.write_bytes(b"".join(backup_chunks()))
    page.set_viewport_size(SIZES[size])

    upload_backup(page, live_app.url, backup)
    expect(page.locator("[data-restore-error]")).to_contain_text("The database is not empty")
    assert Conversation.objects.count() == 1, "a refused restore changes nothing"

    call_command("flush", interactive=False, verbosity=0)
    upload_backup(page, live_app.url, backup)
    counts = page.locator("[data-restore-counts]")
    expect(counts).to_be_visible()
    expect(counts.get_by_role("row", name="conversations.conversation 1", exact=True)).to_be_visible()
    expect(counts.get_by_role("row", name="conversations.message 2", exact=True)).to_be_visible()
    assert Conversation.objects.count() == 0, "the dry run writes nothing"

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("[data-restore-confirm]").click()
    page.wait_for_url(f"{live_app.url}/**")
    assert list(Conversation.objects.values_list("title", flat=True)) == ["Harbour crossing"]
    assert Message.objects.filter(content="the keeper waves").exists()
    page.goto(f"{live_app.url}/")
    expect(page.get_by_text("Harbour crossing").first).to_be_attached()
    assert page.js_errors == []
