"""An imported document's labels in the browser, desktop and phone (issue 34, "Imported voices kept apart"): the
ChatGPT conversation reads "ChatGPT said", the page names the voice, and "Continue in a new chat" opens a chat
whose bubble carries "ChatGPT said:" — never Elion's name."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import Page, expect

from archive.models import ArchiveDocument
from archive.services.importers.chatgpt.store import archive_chatgpt_import
from tests.support.chat_page import SIZES

pytestmark = pytest.mark.browser

EXPORT = Path(__file__).resolve().parents[1] / "archive" / "fixtures" / "chatgpt_conversations.json"


@pytest.mark.parametrize("size", SIZES)
def test_an_imported_documents_labels_and_its_continuation(live_app, page: Page, size):
    archive_chatgpt_import(uploads=[SimpleUploadedFile("conversations.json", EXPORT.read_bytes())])
    document = ArchiveDocument.objects.get(title="Lantern by the river")
    page.set_viewport_size(SIZES[size])
    page.goto(f"{live_app.url}/archive/{document.pk}/")
    expect(page.locator("[data-imported-voice]")).to_contain_text("The assistant here is ChatGPT")
    expect(page.locator(".archive-hit .archive-meta", has_text="ChatGPT said").first).to_be_visible()
    expect(page.locator(".archive-hit .archive-meta", has_text="AUMA said").first).to_be_visible()
    expect(page.locator(".archive-list").first).not_to_contain_text("Elion Voicefire said")

    page.get_by_role("button", name="Continue in a new chat").click()
    page.wait_for_url(lambda url: "/c/" in url)
    bubble = page.locator(".message-handoff")
    expect(bubble).to_contain_text("ChatGPT said:")
    expect(bubble).to_contain_text("AUMA said:")
    expect(bubble).not_to_contain_text("Elion Voicefire said:")
    expect(page.locator("[data-origin-badge]")).to_have_text("Imported")
    assert page.js_errors == []
