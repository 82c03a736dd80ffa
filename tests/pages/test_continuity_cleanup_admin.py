"""Browser journey through Tools → Continuity Cleanup in the admin, against a real Daphne.

Seed rule: the screen loads a fresh count-only preview, requires the verified
backup confirmation and the exact phrase; if the eligible scope changes before
deletion it reports that nothing was removed and clears both confirmations;
its receipt holds only the number removed.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from continuity.models import ThreadHandoff
from continuity.services.cleanup import CONFIRMATION_PHRASE
from tests.pages.conftest import OWNER_PASSWORD
from transcript.models import Conversation

pytestmark = pytest.mark.browser

SUMMARY_TEXT = "GENERATED SUMMARY of an old thread"


def legacy_row(*, handoff: str = "") -> ThreadHandoff:
    return ThreadHandoff.objects.create(
        destination=Conversation.objects.create(title="Old destination"),
        source=Conversation.objects.create(title="Old source"),
        summary=SUMMARY_TEXT,
        handoff=handoff,
    )


def test_admin_continuity_cleanup_screen(offline_protected_app, page: Page):
    for _ in range(2):
        legacy_row()
    protected = legacy_row(handoff="AUMA said:\nkeep me")
    app = offline_protected_app.url

    page.goto(f"{app}/admin/tools/continuity-cleanup/")
    page.wait_for_url(re.compile(r"/login/"))
    page.fill("#password", OWNER_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{app}/admin/")
    page.get_by_role("link", name="Continuity Cleanup").click()
    page.wait_for_url(re.compile(r"/admin/tools/continuity-cleanup/$"))

    expect(page.get_by_test_id("eligible-count")).to_have_text("2")
    expect(page.get_by_test_id("protected-count")).to_have_text("1")
    expect(page.get_by_text(SUMMARY_TEXT)).to_have_count(0)  # counts only, never text

    # Both confirmations given, but the scope changes before the owner submits.
    page.check("#backup_verified")
    page.fill("#confirmation", CONFIRMATION_PHRASE)
    legacy_row()
    page.get_by_role("button", name="Delete retired generated summaries").click()

    expect(page.locator(".messagelist")).to_contain_text("nothing was removed")
    expect(page.get_by_test_id("eligible-count")).to_have_text("3")
    expect(page.locator("#backup_verified")).not_to_be_checked()
    expect(page.locator("#confirmation")).to_have_value("")
    assert ThreadHandoff.objects.count() == 4

    # A wrong phrase removes nothing either.
    page.check("#backup_verified")
    page.fill("#confirmation", "delete them")
    page.get_by_role("button", name="Delete retired generated summaries").click()
    expect(page.locator(".messagelist")).to_contain_text("Nothing was removed")
    assert ThreadHandoff.objects.count() == 4

    # Reviewed and confirmed again: the receipt holds only the number removed.
    page.check("#backup_verified")
    page.fill("#confirmation", CONFIRMATION_PHRASE)
    page.get_by_role("button", name="Delete retired generated summaries").click()
    expect(page.locator(".messagelist")).to_have_text("Removed 3 record(s).")
    expect(page.get_by_test_id("nothing-to-remove")).to_be_visible()
    assert list(ThreadHandoff.objects.values_list("pk", flat=True)) == [protected.pk]
    assert not page.js_errors
