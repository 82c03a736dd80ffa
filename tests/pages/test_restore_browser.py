"""Restore a backup from Settings in the browser (issues 34 and 41), desktop and phone: an instance that holds data
says what it holds and what the backup holds, in words, and asks for the typed word replace; in a fresh instance (empty
database, empty attachment store) the owner uploads the zip, reads what it holds, confirms, and finds the restored
conversation in the sidebar. No table name is shown. (Over an instance in use the typed word replace starts a
background job: tests/pages/test_backups_browser.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from operations.backup.writing import backup_chunks
from tests.support.chat_page import SIZES
from tests.support.factories import thread
from transcript.attachments import store
from transcript.models import Conversation, Message


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
    expect(page.locator("[data-restore-state]")).to_contain_text("This instance is in use: it holds 1 conversation, 2 messages")
    expect(page.locator("[data-restore-holds]")).to_contain_text("it holds 1 conversation, 2 messages")
    expect(page.locator("[data-restore-state]")).to_contain_text("replaces all of it")
    expect(page.get_by_label("To confirm, type the word replace")).to_be_visible()  # typed, not a click (issue 42)
    expect(page.locator("[data-restore-confirm]")).to_have_count(0)
    assert "conversations." not in page.locator("main").inner_text(), "no table names"
    assert Conversation.objects.count() == 1, "a refused restore changes nothing"

    call_command("flush", interactive=False, verbosity=0)
    page.goto(f"{live_app.url}/settings/restore/")
    expect(page.locator("[data-restore-state]")).to_contain_text("This instance is fresh")
    upload_backup(page, live_app.url, backup)
    expect(page.locator("[data-restore-holds]")).to_contain_text("it holds 1 conversation, 2 messages")
    assert "conversations." not in page.locator("main").inner_text(), "no table names"
    assert Conversation.objects.count() == 0, "the dry run writes nothing"

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("[data-restore-confirm]").click()
    page.wait_for_url(f"{live_app.url}/**")
    assert list(Conversation.objects.values_list("title", flat=True)) == ["Harbour crossing"]
    assert Message.objects.filter(content="the keeper waves").exists()
    page.goto(f"{live_app.url}/")
    expect(page.get_by_text("Harbour crossing").first).to_be_attached()
    assert page.js_errors == []
